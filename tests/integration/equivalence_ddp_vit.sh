# Data parallelism with the ViT backbones (vits_dino, and vits_dinov3 with its register
# tokens and RoPE): 2 ranks at global batch 16
# compute the gradients 1 rank computes at batch 16, per tensor, on one step taken
# from a trained checkpoint (as equivalence_ddp.sh does for the ResNet):
#   max over tensors of ||g_2 - g_1|| / ||g_1|| < 1e-5.
# Exempt, as zero in exact arithmetic (rounding noise on both sides): the last
# layer's bias (spatial softmax) and every attention key bias (the attention
# softmax ignores the shift q . b of a query's scores); DINOv3's unused mask_token must
# be exactly zero on both.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import h5py, numpy" 2>/dev/null || skip "needs /usr/bin/python3 with h5py and numpy"

"$TRAINER" synth --out "$SCRATCH/frames.h5" --frames 40 --size 64 --seed 5 >/dev/null || fail "synth failed"
equivalence() {  # BACKBONE TENSORS: one backbone's check, in $SCRATCH/$1
local backbone=$1 tensors=$2 dir=$SCRATCH/$1
mkdir -p "$dir"
cat >"$dir/vit.cfg" <<CFG
[data]
data_files = $SCRATCH/frames.h5
image_resize_height = 64
image_resize_width = 64
downsample_factor = 2
[training]
imgaug = dlc
train_batch_size = 16
val_batch_size = 16
max_epochs = 1000
train_prob = 0.8
val_prob = 0.2
learning_rate = 1e-3
unfreezing_epoch = 0
check_val_every_n_epoch = 1000
log_every_n_steps = 1
[model]
backbone = $backbone
[distributed]
collective_timeout = 300
CFG
# A shared trained starting point: 6 steps (3 epochs of 32 frames) on one rank.
train "$dir" "$dir/base.log" 1 --out "$dir/base" --max-steps 6
local checkpoint=$dir/base/checkpoints/last.h5
[[ -f $checkpoint ]] || { cat "$dir/base.log"; fail "no base checkpoint"; }
for np in 1 2; do
  train "$dir" "$dir/r$np.log" "$np" --out "$dir/r$np" --resume "$checkpoint" --max-steps 7 \
    --dump-gradients "$dir/r$np.h5" --dump-gradients-step 7
  [[ -f $dir/r$np.h5 ]] || { cat "$dir/r$np.log"; fail "$np ranks wrote no gradients"; }
done
$PY - "$dir/r1.h5" "$dir/r2.h5" "$backbone" "$tensors" <<'PYEOF' || fail "2 ranks' $backbone gradients differ from 1 rank's"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
backbone, tensors = sys.argv[3], int(sys.argv[4])
ga, gb = a["gradients"], b["gradients"]
assert ga.attrs["global_step"] == gb.attrs["global_step"] == 7, "different steps"
assert ga.attrs["world_size"] == 1 and gb.attrs["world_size"] == 2
order = [n.decode() if isinstance(n, bytes) else n for n in a["parameter_order"][()]]
assert sorted(order) == sorted(gb.keys()) and len(order) == tensors, "different or missing tensors"  # backbone + 2 head
exempt = {order[-1]} | {n for n in order if n.endswith("attention.attention.key.bias")}
for name in [n for n in order if n.endswith("embeddings.mask_token")]:  # unused: exactly zero
    assert not np.any(ga[name][()]) and not np.any(gb[name][()]), name + ": non-zero gradient"
    exempt.add(name)
worst = []
for name in order:
    x, y = np.asarray(ga[name][()], dtype=np.float64), np.asarray(gb[name][()], dtype=np.float64)
    assert x.shape == y.shape, name
    if name not in exempt:
        assert np.linalg.norm(x) > 0, name + ": zero gradient"
        worst.append((np.linalg.norm(x - y) / np.linalg.norm(x), name))
worst.sort(reverse=True)
print(f"{backbone} step 7, {len(worst)} tensors (+{len(exempt)} exempt): worst {worst[0][0]:.1e} ({worst[0][1]}), "
      f"median {worst[len(worst) // 2][0]:.1e}")
sys.exit(0 if worst[0][0] < 1e-5 else 1)
PYEOF
rm -rf "$dir"  # its checkpoints, hundreds of MB (the disk is shared)
}

train() {  # train DIR LOG NP ARGS...
  local dir=$1 log=$2 np=$3; shift 3
  local launch=()
  [[ $np == 1 ]] || launch=($MPIRUN -np "$np")
  local rc=0
  timeout 600 "${launch[@]}" "$TRAINER" train --config "$dir/vit.cfg" "$@" >"$log" 2>&1 || rc=$?
  [[ $rc == 0 ]] || { cat "$log"; fail "$log: exit $rc"; }
}
equivalence vits_dino 200    # 198 backbone tensors + 2 head
equivalence vits_dinov3 213  # 211 backbone tensors + 2 head
echo "PASSED"

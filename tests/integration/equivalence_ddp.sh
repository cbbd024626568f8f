# The core correctness property of data-parallel training: with synchronized
# batch norm and augmentation keyed by frame index, R ranks at global batch B
# end with the same weights as one rank at batch B (up to floating-point
# reassociation: relative difference < 1e-5 after 20 fp32 steps), for R = 2 and
# R = 3, with the mpi and the gloo communicators.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import h5py, numpy" 2>/dev/null || skip "needs /usr/bin/python3 with h5py and numpy"

cfg="$SCRATCH/equiv.cfg"
cat >"$cfg" <<CFG
[data]
data_files =
synthetic_file = $SCRATCH/synthetic.h5
image_resize_height = 64
image_resize_width = 64
downsample_factor = 2
[training]
imgaug = dlc
train_batch_size = 6
val_batch_size = 6
max_epochs = 100
max_steps = 20
drop_last = true
train_prob = 0.8
val_prob = 0.1
learning_rate = 1e-3
unfreezing_epoch = 0
check_val_every_n_epoch = 1000
log_every_n_steps = 10
[model]
backbone = resnet18
[distributed]
sync_batchnorm = true
collective_timeout = 300
CFG

run() {  # run NAME NP BACKEND
  local name=$1 np=$2 backend=$3
  local cmd=("$TRAINER" train --config "$cfg" --out "$SCRATCH/$name" --distributed.backend "$backend")
  if [[ $np == 1 ]]; then
    timeout 600 "${cmd[@]}" >"$SCRATCH/$name.log" 2>&1 || { cat "$SCRATCH/$name.log"; fail "$name failed"; }
  else
    timeout 600 $MPIRUN -np "$np" "${cmd[@]}" >"$SCRATCH/$name.log" 2>&1 || { cat "$SCRATCH/$name.log"; fail "$name failed"; }
  fi
  [[ -f $SCRATCH/$name/checkpoints/last.h5 ]] || { cat "$SCRATCH/$name.log"; fail "$name wrote no last.h5"; }
}

compare() {  # compare A B: every /model tensor within relative 1e-5 (L2 norm of the difference per tensor)
  $PY - "$SCRATCH/$1/checkpoints/last.h5" "$SCRATCH/$2/checkpoints/last.h5" <<'PYEOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
assert a["state"].attrs["global_step"] == b["state"].attrs["global_step"] == 20, "not 20 steps"
worst, worst_name, n = 0.0, "", 0
def visit(name, obj):
    global worst, worst_name, n
    if not isinstance(obj, h5py.Dataset):
        return
    x = np.asarray(obj[()], dtype=np.float64)
    y = np.asarray(b["model/" + name][()], dtype=np.float64)
    assert x.shape == y.shape, name
    den = max(np.linalg.norm(y), 1e-12)
    rel = np.linalg.norm(x - y) / den
    n += 1
    if rel > worst:
        worst, worst_name = rel, name
a["model"].visititems(visit)
print(f"{n} tensors; largest relative difference {worst:.2e} ({worst_name})")
sys.exit(0 if worst < 1e-5 and n > 0 else 1)
PYEOF
}

run single 1 mpi
for backend in mpi gloo; do
  for np in 2 3; do
    run "r${np}_$backend" $np $backend
    echo -n "1 rank vs $np ranks ($backend): "
    compare single "r${np}_$backend" || fail "$np ranks with $backend differ from one rank"
  done
done
grep -q "gradient all-reduce" "$SCRATCH/r2_mpi.log" || fail "no overlap report in the 2-rank log"
grep "gradient all-reduce" "$SCRATCH"/r*_*.log
echo "equivalence_ddp: ok"

# `trainer plan --nodes 2 --gpus-per-node 4`: a cluster that is not launched.
source "$(dirname "$0")/lib/common.sh"

"$TRAINER" plan --nodes 2 --gpus-per-node 4 --cpus-per-task 5 --json --training.train_batch_size 30 \
  --model.model_type heatmap_mhcrnn --training.context_batch_size 27 --model.losses_to_use '[temporal]' \
  --data.video_dir "$SCRATCH" >"$SCRATCH/h.json" 2>"$SCRATCH/err.txt" ||
  { cat "$SCRATCH/err.txt" >&2; fail "hypothetical plan failed"; }
/usr/bin/python3 - "$SCRATCH/h.json" <<'PY' || fail "h.json checks"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["hypothetical"] is True and p["world_size"] == 8 and p["num_nodes"] == 2, p
assert p["accelerator"] == "gpu" and p["backend"] == "nccl", p
assert p["effective_train_batch"] == 32, p  # ceil(30/8)=4 per GPU
assert any("effective global batch is 32" in w for w in p["warnings"]), p["warnings"]
rs = p["ranks"]
assert [r["node"] for r in rs] == [0]*4 + [1]*4, rs
assert [r["device"] for r in rs] == [0, 1, 2, 3] * 2, rs
for r in rs:
    assert r["train_batch_size"] == 4 and r["val_batch_size"] == 4 and r["test_batch_size"] == 32, r
    assert r["context_batch_size"] == 7, r    # ceil((27-4)/8)+4
    # cpus-per-task - 1 = 4, split with the temporal loss's video decoding
    assert r["num_workers"] == 2 and r["unlabeled_workers"] == 2, r
print("hypothetical 2x4: ok")
PY

"$TRAINER" plan --nodes 1 --gpus-per-node 2 | grep -qE '^ +1 +0 +1 +gpu:1' || fail "text form lacks rank 1 on gpu:1"
# A context batch that leaves fewer than 5 frames per GPU: the message shows the value;
# a supervised heatmap_mhcrnn never reads it (as in lightning-pose), so it passes.
expect_fail 2 "gives 4 context frames" "$TRAINER" plan --nodes 1 --gpus-per-node 2 \
  --model.model_type heatmap_mhcrnn --training.context_batch_size 4 --model.losses_to_use '[temporal]' --data.video_dir "$SCRATCH"
"$TRAINER" plan --nodes 1 --gpus-per-node 2 --model.model_type heatmap_mhcrnn --training.context_batch_size 4 \
  >"$SCRATCH/supervised.txt" 2>&1 || { cat "$SCRATCH/supervised.txt"; fail "a supervised heatmap_mhcrnn was refused over its context batch"; }
# More GPUs per node than the devices list: a Lightning-style error naming the input.
expect_fail 2 "requested GPUs \[0, 5\]" "$TRAINER" plan --nodes 1 --gpus-per-node 4 --devices "0,5"
expect_fail 2 "listed twice" "$TRAINER" plan --nodes 1 --gpus-per-node 4 --devices "[1, 1]"
expect_fail 2 "ranks share a GPU|share a GPU" "$TRAINER" plan --nodes 1 --gpus-per-node 4 --ranks-per-node 4 --devices 2
# Hypothetical-only options without --nodes, and --nprocs with --nodes, are errors.
expect_fail 2 "needs --nodes" "$TRAINER" plan --gpus-per-node 4
expect_fail 2 "nprocs" "$TRAINER" plan --nodes 2 --nprocs 2
echo "PASS"

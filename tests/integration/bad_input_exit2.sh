# Bad input that must be refused before any work with exactly one `error:` line
# (plus an optional `hint:`) and exit code 2: batch sizes larger than the train
# split (1 and 2 ranks), absurd sizes, bad --max-steps / --nprocs, --resume with
# --init-weights, blank devices, NUL bytes / FIFOs in configs, predict --out on a
# folder, unreadable images; and what must be accepted: a config with a UTF-8 BOM,
# a checkpoint without its run folder (predict uses the configuration it carries).
source "$(dirname "$0")/lib/common.sh"
S=$SCRATCH
export OMPI_MCA_rmaps_base_oversubscribe=1

# expect_one_error PATTERN cmd...: exit 2, stderr is one `error:` line matching
# PATTERN and at most one `hint:` line, nothing else.
expect_one_error() {
  local pattern=$1; shift
  expect_fail 2 "^error: .*$pattern" "$@"
  [[ $(grep -c '^error: ' "$S/err.txt") == 1 ]] || { cat "$S/err.txt" >&2; fail "not exactly one error line: $*"; }
  [[ $(grep -vc -e '^error: ' -e '^hint: ' "$S/err.txt") == 0 ]] || { cat "$S/err.txt" >&2; fail "stray stderr lines: $*"; }
}
no_temp_files() { ! ls -a "$1" | grep -q '\.tmp-' || fail "temporary files left in $1: $(ls -a "$1")"; }

"$TRAINER" synth --out "$S/d.h5" --frames 12 --size 64 --keypoints 3 >/dev/null
cat >"$S/c.cfg" <<CFG
[data]
data_files = $S/d.h5
image_resize_height = 64
image_resize_width = 64
[training]
train_batch_size = 4
max_epochs = 1
[model]
backbone = resnet18
CFG

# ---- batch sizes: 12 frames split 11 train / 1 val --------------------------
expect_one_error "train batch size \(16\) is larger than the train split of .*d.h5 \(11 frames\)" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --training.train_batch_size 16
expect_one_error "train batch size \(16\) .*with drop_last there would be no batch" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --training.train_batch_size 16 --training.drop_last true
expect_one_error "train batch size \(2147483647\) is larger than the train split" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --training.train_batch_size 2147483647
[[ ! -e $S/run_a ]] || fail "a refused run wrote its output folder"

# ---- options ------------------------------------------------------------------
expect_one_error "--max-steps -5 is not a step count" "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --max-steps -5
expect_one_error "--nprocs 0 is not a number of ranks" "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --nprocs 0
expect_one_error "--nprocs -1 is not a number of ranks" "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --nprocs -1
expect_one_error "--resume and --init-weights cannot be given together" \
  "$TRAINER" train --config "$S/c.cfg" --resume "$S/x.h5" --init-weights "$S/y.h5"
printf '[distributed]\ndevices = " "\n' >"$S/blank.cfg"
expect_one_error "devices=\" \": is only blanks" "$TRAINER" plan --config "$S/blank.cfg"
expect_one_error "synth: --frames must be between 2 and 1000000" "$TRAINER" synth --out "$S/s/s.h5" --frames 99999999999
mkdir -p "$S/s" && no_temp_files "$S/s"

# ---- config files -------------------------------------------------------------
printf '[training]\nlearning_rate = 0.5\0e-3\n' >"$S/nul.cfg"
expect_one_error "nul.cfg:2: control character \\\\x00" "$TRAINER" plan --config "$S/nul.cfg"
mkfifo "$S/fifo.cfg"
expect_one_error "cannot read config file .*fifo.cfg.*not a regular file" timeout 20 "$TRAINER" plan --config "$S/fifo.cfg"
printf '\xef\xbb\xbf[training]\ntrain_batch_size = 6\n' >"$S/bom.cfg"
"$TRAINER" plan --config "$S/bom.cfg" --print-config >"$S/bom.out" || fail "a config with a UTF-8 BOM was refused"
grep -q '^train_batch_size = 6$' "$S/bom.out" || fail "the BOM config's value was lost"
# Control characters of the input are shown as escapes, never sent raw.
expect_one_error "cannot read config file .*x\\\\x1b\[31m.cfg" "$TRAINER" plan --config "$S/x"$'\x1b'"[31m.cfg"
! grep -q $'\x1b' "$S/err.txt" || fail "an escape character reached stderr raw"

# ---- predict ------------------------------------------------------------------
timeout 300 "$TRAINER" train --config "$S/c.cfg" --out "$S/run" --max-steps 1 >/dev/null
mkdir -p "$S/alone" && cp "$S/run/checkpoints/last.h5" "$S/alone/c.h5"
expect_one_error "predict: --out '.*alone' is a folder, not a file" \
  "$TRAINER" predict --checkpoint "$S/alone/c.h5" --out "$S/alone"
no_temp_files "$S/alone"
expect_one_error "the folder of --out '.*nowhere/p.csv' does not exist" \
  "$TRAINER" predict --checkpoint "$S/alone/c.h5" --out "$S/nowhere/p.csv"
# Without config.ini beside it, the checkpoint's own configuration: its 12 frames,
# not the synthetic demo data.
timeout 300 "$TRAINER" predict --checkpoint "$S/alone/c.h5" --out "$S/alone/p.csv" >"$S/predict.out" ||
  fail "predict with a lone checkpoint failed"
grep -q "configuration: the one stored in .*alone/c.h5" "$S/predict.out" || fail "predict did not say which configuration"
[[ $(tail -n +4 "$S/alone/p.csv" | wc -l) == 12 ]] || fail "predict did not predict the run's 12 frames"

# ---- images -------------------------------------------------------------------
"$TRAINER" synth --out "$S/p.h5" --frames 4 --size 64 --keypoints 2 --export-dir "$S/p" >/dev/null
rm "$S/p/labeled-data/img00001.png" && mkdir "$S/p/labeled-data/img00001.png"
expect_one_error "CollectedData.csv:5: image .*img00001.png is not a regular file" \
  "$TRAINER" import --csv "$S/p/CollectedData.csv" --out "$S/o.h5"
rmdir "$S/p/labeled-data/img00001.png" && echo "not an image" >"$S/p/labeled-data/img00001.png"
expect_one_error "CollectedData.csv:5: cannot decode image" "$TRAINER" import --csv "$S/p/CollectedData.csv" --out "$S/o.h5"
if [[ $(id -u) != 0 ]]; then  # root reads any file
  chmod 000 "$S/p/labeled-data/img00002.png"
  expect_one_error "CollectedData.csv:6: cannot read image .*img00002.png: Permission denied" \
    "$TRAINER" import --csv "$S/p/CollectedData.csv" --out "$S/o.h5"
fi
no_temp_files "$S"

# Two ranks: every rank refuses (exit 2), nothing is written. Last, because the
# self-spawn's runtime may still write its summary to stderr after the exit.
expect_fail 2 "^error: the train batch size \(12\) is larger than the train split" \
  timeout 120 "$TRAINER" train --config "$S/c.cfg" --out "$S/run_b" --nprocs 2 --backend gloo --training.train_batch_size 12
expect_fail 2 "^error: the train split of .*d.h5 \(11 frames\) gives each of 2 ranks 5 frames, fewer than its batch of 6" \
  timeout 120 "$TRAINER" train --config "$S/c.cfg" --out "$S/run_b" --nprocs 2 --backend gloo \
  --training.drop_last true --training.train_batch_size 11
[[ ! -e $S/run_b/checkpoints ]] || fail "a refused 2-rank run wrote checkpoints"
echo "OK"

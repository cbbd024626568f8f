# Bad input that must be refused before any work with exactly one `error:` line
# (plus an optional `hint:`) and exit code 2: batch sizes larger than the train
# split (1 and 2 ranks), absurd sizes, bad --max-steps / --nprocs, --resume with
# --init-weights, blank devices, NUL bytes / FIFOs in configs, predict --out on a
# folder, unreadable images; issue 26's cases: damaged checkpoints and data, FIFOs and
# devices named as inputs, values that were accepted, folders where outputs go, noise
# before the error; and what must be accepted: a config with a UTF-8 BOM, a checkpoint
# without its run folder (predict uses the configuration it carries), a 70 KB model_name.
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
# plan refuses what train refuses when it builds the model: a ViT (stride 16) has no head
# for downsample_factor 3 (with --nodes too, without launching anything).
expect_one_error "data.downsample_factor = 3 leaves no upsampling layer after a backbone of stride 16" \
  "$TRAINER" plan --model.backbone vits_dino --data.downsample_factor 3
expect_one_error "data.downsample_factor = 3 leaves no upsampling layer" \
  "$TRAINER" plan --nodes 2 --model.backbone vits_dino --data.downsample_factor 3
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

# ---- issue 26: damaged files --------------------------------------------------
# Damage a copy: a few bytes overwritten in the middle (the checksum catches it before
# HDF5 parses the file; HDF5 itself crashed or failed with exit 1 and the build's paths).
damage() { cp "$1" "$2" && printf '\xde\xad\xbe\xef' | dd of="$2" bs=1 seek=$(($(stat -c %s "$2") / 2)) conv=notrunc status=none; }
mkdir -p "$S/dmg/checkpoints"
damage "$S/run/checkpoints/last.h5" "$S/dmg/checkpoints/last.h5"
expect_one_error "checkpoint '.*dmg/checkpoints/last.h5' is truncated or damaged" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/dmg" --resume "$S/dmg/checkpoints/last.h5"
grep -q "^hint: use an earlier checkpoint" "$S/err.txt" || fail "no hint for a damaged checkpoint"
! grep -q "$REPO/src" "$S/err.txt" || fail "an error line carries the build's absolute path"
expect_one_error "checkpoint '.*dmg/checkpoints/last.h5' is truncated or damaged" \
  "$TRAINER" predict --checkpoint "$S/dmg/checkpoints/last.h5" --out "$S/dmg/p.csv"
damage "$S/d.h5" "$S/dmg/d.h5"
expect_one_error "data file .*dmg/d.h5 is truncated or damaged" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --data.data_files "$S/dmg/d.h5"

# ---- issue 26: a configuration of any size is saved ---------------------------
# A 70 KB model_name made every checkpoint fail (H5Acreate2: object header message is
# too large) after the whole run had trained.
{ cat "$S/c.cfg"; printf 'model_name = %s\n' "$(head -c 70000 /dev/zero | tr '\0' m)"; } >"$S/long.cfg"
timeout 300 "$TRAINER" train --config "$S/long.cfg" --out "$S/run_long" --max-steps 1 >/dev/null 2>"$S/long.err" ||
  { cat "$S/long.err" >&2; fail "a run with a 70 KB model_name failed"; }
[[ -f $S/run_long/checkpoints/last.h5 ]] || fail "a run with a 70 KB model_name wrote no checkpoint"

# ---- issue 26: paths that would block, read forever or overflow ---------------
mkfifo "$S/fifo.h5" "$S/fifo.csv"
expect_one_error "cannot open data file .*fifo.h5: not a regular file \(a FIFO\)" \
  timeout 20 "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --data.data_files "$S/fifo.h5"
expect_one_error "cannot open data file .*fifo.h5: not a regular file" \
  timeout 20 "$TRAINER" bench loader --data "$S/fifo.h5" --workers 0 --seconds 0.1
expect_one_error "cannot open label file .*fifo.csv: not a regular file" \
  timeout 20 "$TRAINER" import --csv "$S/fifo.csv" --out "$S/o.h5"
expect_one_error "cannot open label file /dev/zero: not a regular file \(a character device\)" \
  timeout 20 "$TRAINER" import --csv /dev/zero --out "$S/o.h5"
expect_one_error "cannot open backbone weights '.*fifo.h5': not a regular file" \
  timeout 20 "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --init-weights "$S/fifo.h5"
expect_one_error "cannot open checkpoint '.*fifo.h5': not a regular file" \
  timeout 20 "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --resume "$S/fifo.h5"
expect_one_error "cannot open checkpoint '.*fifo.h5': not a regular file" \
  timeout 20 "$TRAINER" predict --checkpoint "$S/fifo.h5" --out "$S/p.csv"
expect_one_error "is 4294967294 ranks, more than the 65536 a plan lists" \
  timeout 20 "$TRAINER" plan --nodes 2147483647 --ranks-per-node 2
[[ ! -e $S/run_a ]] || fail "a refused run wrote its output folder"

# ---- issue 26: bad values that were accepted -----------------------------------
expect_one_error "train: --out is empty" "$TRAINER" train --config "$S/c.cfg" --out ""
expect_one_error "devices=\" \": is only blanks" "$TRAINER" plan --devices " "
expect_one_error "devices=\" \": is only blanks" "$TRAINER" train --config "$S/c.cfg" --out "$S/run_a" --devices " "
for option in --cores-per-node --cpus-per-task --ranks-per-node; do
  expect_one_error "$option cannot be negative, got -3" "$TRAINER" plan --nodes 1 "$option" -3
done
expect_one_error "bench step: --threads and --warmup must be >= 0" "$TRAINER" bench step --threads -1 --steps 1
expect_one_error "bench step: --cuda-graphs records GPU steps and predictions" \
  "$TRAINER" bench step --accelerator cpu --mode predict --cuda-graphs --steps 1
expect_one_error "unknown conv_algorithms 'fastest'" "$TRAINER" bench step --conv-algorithms fastest --steps 1
expect_one_error "TRAINER_VIT_BIAS_EPILOGUE must be 0 or 1, not '2'" \
  env TRAINER_VIT_BIAS_EPILOGUE=2 "$TRAINER" bench step --steps 1
printf 'model:\n  model_name: "abc\n' >"$S/quote.yaml"
expect_one_error "quote.yaml:2: not valid YAML: the quoted value that starts here is never closed" \
  "$TRAINER" plan "$S/quote.yaml"
"$TRAINER" synth --out "$S/q.h5" --frames 4 --size 64 --keypoints 2 --export-dir "$S/q" >/dev/null
sed '5s/,[^,]*$/,1e300/' "$S/q/CollectedData.csv" >"$S/q/big.csv"
expect_one_error "big.csv:5: column 5 \(ear_left y\): '1e300' is not a pixel coordinate" \
  "$TRAINER" import --csv "$S/q/big.csv" --out "$S/o.h5"
sed '6s/,\([^,]*\)$/,1\x002/' "$S/q/CollectedData.csv" >"$S/q/nul.csv"
expect_one_error "nul.csv:6: NUL byte in the line" "$TRAINER" import --csv "$S/q/nul.csv" --out "$S/o.h5"
expect_one_error "run/checkpoints/last.h5' lacks [0-9]+ of the backbone's tensors" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/r34" --model.backbone resnet34 --max-steps 0 \
  --init-weights "$S/run/checkpoints/last.h5"

# ---- issue 26: exit 1 that was the user's (exit 2 now, before any work) --------
mkdir -p "$S/outdir.h5" "$S/run_c/config.ini"
expect_one_error "synth: --out '.*outdir.h5' is a directory, not a file" \
  "$TRAINER" synth --out "$S/outdir.h5" --frames 4 --size 32
expect_one_error "import: --out '.*outdir.h5' is a directory, not a file" \
  "$TRAINER" import --csv "$S/q/CollectedData.csv" --out "$S/outdir.h5"
expect_one_error "the run's config.ini '.*run_c/config.ini' is a directory, not a file" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_c"
expect_one_error "collective_timeout: expected a number > 0 and <= 604800, got 1e300" \
  "$TRAINER" plan --distributed.collective_timeout 1e300
no_temp_files "$S"

# ---- issue 26: nothing printed before a refusal ---------------------------------
# The backbone warning came first, and FFmpeg's "moov atom not found" leaked; a
# warning of the set-up (bf16 emulated on the CPU) preceded a refused --resume.
expect_one_error "checkpoint '.*run/checkpoints/last.h5' is a resnet18" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_p" --model.precision bf16-mixed --model.backbone resnet34 \
  --resume "$S/run/checkpoints/last.h5"
mkdir -p "$S/badvids" && echo "not a video" >"$S/badvids/x.mp4"
expect_one_error "video '.*badvids/x.mp4' cannot be opened or decoded" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_v" --data.video_dir "$S/badvids" \
  --model.losses_to_use "[temporal]" --max-steps 1
# The unsupervised losses' videos: refused by the key's name before the import and
# the model (it came after both, without naming data.video_dir), nothing written.
expect_one_error "data.video_dir: video '.*novideos' does not exist" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_nv" --data.video_dir "$S/novideos" \
  --model.losses_to_use "[pca_singleview]" --max-steps 1
[[ ! -e $S/run_nv ]] || fail "a run refused for its video_dir wrote its folder"
# The videos to predict after training: refused before training, not after it.
expect_one_error "eval.test_videos_directory: video '.*novideos' does not exist" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_tv" --eval.test_videos_directory "$S/novideos" \
  --eval.predict_vids_after_training true --max-steps 1
[[ ! -e $S/run_tv ]] || fail "a run refused for its test_videos_directory wrote its folder"
# ... where it repeats data.video_dir (lightning-pose's ${data.video_dir}), the key
# that holds the path is named.
expect_one_error "data.video_dir \(also eval.test_videos_directory\): video '.*novideos' does not exist" \
  "$TRAINER" train --config "$S/c.cfg" --out "$S/run_tv" --data.video_dir "$S/novideos" \
  --eval.test_videos_directory "$S/novideos" --eval.predict_vids_after_training true --max-steps 1

# Two ranks: every rank refuses (exit 2), nothing is written. Last, because the
# self-spawn's runtime may still write its summary to stderr after the exit.
expect_fail 2 "^error: the train batch size \(12\) is larger than the train split" \
  timeout 120 "$TRAINER" train --config "$S/c.cfg" --out "$S/run_b" --nprocs 2 --backend gloo --training.train_batch_size 12
expect_fail 2 "^error: the train split of .*d.h5 \(11 frames\) gives each of 2 ranks 5 frames, fewer than its batch of 6" \
  timeout 120 "$TRAINER" train --config "$S/c.cfg" --out "$S/run_b" --nprocs 2 --backend gloo \
  --training.drop_last true --training.train_batch_size 11
[[ ! -e $S/run_b/checkpoints ]] || fail "a refused 2-rank run wrote checkpoints"
# A data set where a checkpoint or a configuration goes, a run folder given to --resume,
# a mistyped run folder, a folder without videos: each named for what it is.
expect_fail 2 "^error: '$S/d.h5' is a data set \(trainer import / synth\), not a checkpoint" \
  "$TRAINER" train --config "$S/c.cfg" --resume "$S/d.h5"
expect_fail 2 "^error: '$S/d.h5' is an HDF5 file \(a data set or a checkpoint\), not a configuration" \
  "$TRAINER" train --config "$S/d.h5"
mkdir -p "$S/a_run" "$S/no_videos"
expect_fail 2 "^error: train: --resume $S/a_run is a folder, not a checkpoint" "$TRAINER" train --resume "$S/a_run"
grep -q "^hint: .*--resume auto --out $S/a_run" "$SCRATCH/err.txt" || fail "no --resume auto hint for a folder"
expect_fail 2 "^error: predict: '$S/nope_run' does not exist" "$TRAINER" predict "$S/nope_run" "$S/no_videos"
# A wrong data.data_dir is named as such before the video folders beneath it are checked.
expect_fail 2 "^error: data.data_dir '$S/nope' is not a folder" "$TRAINER" train --data.data_dir "$S/nope" \
  --data.csv_file CollectedData.csv --eval.predict_vids_after_training true --eval.test_videos_directory "$S/nope/videos"
# A relative path that names nothing says where it was looked for.
(cd "$S" && expect_fail 2 "^error: data.data_dir 'nope' is not a folder \(a relative path: from the working directory $S\)" \
  "$TRAINER" train --data.data_dir nope --data.csv_file CollectedData.csv)
# litpose train's --output_dir points to --out; a checkpoint that is not there lists
# the ones its folder holds (a short run that never validated has no best.h5).
expect_fail 2 "^error: train: unknown option '--output_dir'" "$TRAINER" train --config "$S/c.cfg" --output_dir "$S/x"
grep -q "^hint: the run folder is --out DIR" "$SCRATCH/err.txt" || fail "no --out hint for --output_dir"
expect_fail 2 "^error: cannot open checkpoint '$S/alone/best.h5': no such file" \
  "$TRAINER" predict --checkpoint "$S/alone/best.h5" --out "$S/alone/p2.csv"
grep -q "^hint: that folder holds c.h5 (best.h5 is written at the first validation" "$SCRATCH/err.txt" ||
  fail "no list of the folder's checkpoints"
expect_fail 2 "^error: predict: '$S/alone/c.h5' is a checkpoint file, not a run folder" \
  "$TRAINER" predict "$S/alone/c.h5" "$S/no_videos"
grep -q "^hint: give it as --checkpoint $S/alone/c.h5" "$SCRATCH/err.txt" || fail "no --checkpoint hint"
echo "OK"

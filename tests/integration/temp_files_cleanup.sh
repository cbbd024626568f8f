# Files left behind: temporary files (`<file>.tmp-<pid>`) of writers that were killed
# are removed at the next start (train's run folder and checkpoints/, synth, import
# and predict output folders), those of live processes are kept; a SIGTERM or SIGHUP
# during a write removes the temporary file before the process ends; files are
# fsynced before the rename and their folder after it.
source "$(dirname "$0")/lib/common.sh"
S=$SCRATCH
sh -c 'exit 0' & dead=$!
wait $dead || true  # reaped: no process has this pid now
live=$$             # this shell
kept_and_removed() {  # FOLDER NAME: NAME.tmp-<dead> gone, NAME.tmp-<live> kept
  [[ ! -e $1/$2.tmp-$dead ]] || fail "stale $1/$2.tmp-$dead was not removed"
  [[ -e $1/$2.tmp-$live ]] || fail "$1/$2.tmp-$live of a live process was removed"
}

# synth and import: the output file's folder.
mkdir -p "$S/data"
touch "$S/data/d.h5.tmp-$dead" "$S/data/d.h5.tmp-$live" "$S/data/notes.tmp-x"
"$TRAINER" synth --out "$S/data/d.h5" --frames 12 --size 64 --keypoints 3 --export-dir "$S/proj" >"$S/synth.out"
kept_and_removed "$S/data" d.h5
[[ -e $S/data/notes.tmp-x ]] || fail "a file that is not ours was removed"
grep -q "removed .*d.h5.tmp-$dead" "$S/synth.out" || fail "synth did not say what it removed"
touch "$S/data/i.h5.tmp-$dead" "$S/data/i.h5.tmp-$live"
"$TRAINER" import --csv "$S/proj/CollectedData.csv" --out "$S/data/i.h5" >/dev/null
kept_and_removed "$S/data" i.h5

# train: the run folder and its checkpoints/.
mkdir -p "$S/run/checkpoints"
touch "$S/run/config.ini.tmp-$dead" "$S/run/config.ini.tmp-$live"
head -c 1000000 /dev/zero >"$S/run/checkpoints/last.h5.tmp-$dead"
touch "$S/run/checkpoints/last.h5.tmp-$live"
cat >"$S/c.cfg" <<CFG
[data]
data_files = $S/data/d.h5
image_resize_height = 64
image_resize_width = 64
[training]
train_batch_size = 4
[model]
backbone = resnet18
CFG
timeout 300 "$TRAINER" train --config "$S/c.cfg" --out "$S/run" --max-steps 1 >"$S/train.out"
kept_and_removed "$S/run" config.ini
kept_and_removed "$S/run/checkpoints" last.h5
[[ -s $S/run/checkpoints/last.h5 ]] || fail "no checkpoint written"

# predict: the output's folder.
touch "$S/run/predictions.csv.tmp-$dead" "$S/run/predictions.csv.tmp-$live"
timeout 300 "$TRAINER" predict --checkpoint "$S/run/checkpoints/last.h5" >/dev/null
kept_and_removed "$S/run" predictions.csv
rm -f "$S"/run/*.tmp-$live "$S"/run/checkpoints/*.tmp-$live "$S"/data/*.tmp-$live

# A signal during a write: the temporary file goes with the process.
for sig in TERM HUP; do
  mkdir -p "$S/sig$sig"
  "$TRAINER" synth --out "$S/sig$sig/big.h5" --frames 20000 --size 256 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do [[ -e $S/sig$sig/big.h5.tmp-$pid ]] && break; sleep 0.1; done
  [[ -e $S/sig$sig/big.h5.tmp-$pid ]] || fail "synth never started writing"
  sleep 0.5
  kill -$sig $pid
  rc=0; wait $pid || rc=$?
  [[ $rc -gt 128 ]] || fail "synth did not end by SIG$sig (exit $rc)"
  [[ -z $(ls -A "$S/sig$sig") ]] || fail "SIG$sig left files behind: $(ls -A "$S/sig$sig")"
done
# Durability: the temporary file is fsynced before the rename and the folder after it.
if command -v strace >/dev/null; then
  strace -f -o "$S/trace.txt" -e trace=fsync,rename "$TRAINER" synth --out "$S/data/f.h5" --frames 2 --size 32 >/dev/null
  calls=$(grep -oE 'fsync|rename\("[^"]*f.h5' "$S/trace.txt" | sed 's/(.*//' | tr '\n' ' ')
  [[ $calls == *"fsync rename fsync"* ]] || fail "expected fsync, rename, fsync of the folder; got: $calls"
else
  echo "note: no strace, the fsync order is not checked"
fi
echo "OK"

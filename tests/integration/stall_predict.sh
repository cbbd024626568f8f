# `trainer predict --video` with a rank stopped mid-share (issue 26): the job ends
# about collective_timeout after the stop, naming the rank, and leaves no CSV and no
# process. Apart from predict_video.sh so that only this timed part runs alone
# (tests/CMakeLists.txt: RUN_SERIAL).
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/stall.sh"
TOOL=${TRAINER_TEST_VIDEO_TOOL:-$(dirname "$TRAINER")/tests/test_video_tool}
[[ -x $TOOL ]] || fail "test helper $TOOL not built (target test_video_tool)"
TIMEOUT=3
stall_config "$SCRATCH/s.cfg" 1  # its warm-up run's checkpoint is the one predicted with, 8 frames a batch

# No collective runs while the ranks predict their shares, so a stopped peer is found
# by its missing heartbeats: the job ends about collective_timeout after the stop,
# naming the rank, long before rank 0's share (about 25 s at this size on 2 cores) is
# done. It used to end only after that share plus another timeout.
"$TOOL" write "$SCRATCH/long.mp4" 1200 128 128 || fail "video_tool write long.mp4"
start=$SECONDS
rc=0
TRAINER_DEBUG_STOP="1:video batch #2" timeout 120 $MPIRUN -np 2 "$TRAINER" predict --checkpoint "$SCRATCH/warmup/checkpoints/last.h5" \
  --video "$SCRATCH/long.mp4" --video-out "$SCRATCH/stall_preds" --data.image_resize_height 256 \
  --data.image_resize_width 256 --eval.video_sequence_length 8 --distributed.collective_timeout 3 >"$SCRATCH/stall.out" 2>"$SCRATCH/stall.err" || rc=$?
elapsed=$((SECONDS - start))
[[ $rc != 0 && $rc != 124 ]] || { cat "$SCRATCH/stall.err"; fail "stopped rank: exit $rc"; }
grep -qE "^error: \[rank 0\] rank 1 .*no heartbeat for [0-9.]+ s; the process is stopped" "$SCRATCH/stall.err" ||
  { cat "$SCRATCH/stall.err"; fail "stopped rank: not named"; }
! grep -q "600/600 frames" "$SCRATCH/stall.out" || fail "stopped rank: rank 0 predicted its whole share first"
(( elapsed <= 3 + 5 + 10 )) || fail "stopped rank: the job took ${elapsed}s with a 3 s timeout"
[[ ! -e $SCRATCH/stall_preds/long.csv ]] || fail "stopped rank: a CSV was written"
sleep 1
! pgrep -f "$SCRATCH/stall_preds" >/dev/null || { pkill -9 -f "$SCRATCH/stall_preds"; fail "stopped rank: processes left"; }
echo "a rank stopped during predict --video: the job ended after ${elapsed}s, naming it"

echo "OK"

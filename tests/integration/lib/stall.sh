# What the local stall tests share (stall_startup.sh, stall_nprocs.sh), sourced after
# common.sh with TIMEOUT set (their collective_timeout in seconds):
#   stall_config FILE MAX_EPOCHS [TRAINING_LINE...]
# writes a config over synthetic demo data at 32x32 (made by a one-step warm-up run,
# so start-up is short and the same in every case), and
#   no_leftovers WHAT
# fails when a trainer process of this test's runs ($SCRATCH/run*) is still alive.
stall_config() {
  local cfg=$1 epochs=$2
  shift 2
  {
    printf '%s\n' "[data]" "data_files =" "synthetic_file = $SCRATCH/synthetic.h5" "image_resize_height = 32" \
      "image_resize_width = 32" "[training]" "train_batch_size = 4" "max_epochs = $epochs" \
      "check_val_every_n_epoch = 1000"
    local line
    for line in "$@"; do printf '%s\n' "$line"; done
    printf '%s\n' "[model]" "backbone = resnet18" "[distributed]" "collective_timeout = $TIMEOUT"
  } >"$cfg"
  "$TRAINER" train --config "$cfg" --out "$SCRATCH/warmup" --max-steps 1 >"$SCRATCH/warmup.log" 2>&1 ||
    { cat "$SCRATCH/warmup.log"; fail "the single-rank warm-up run failed"; }
}

no_leftovers() {
  sleep 1
  if pgrep -f "$SCRATCH/run" >/dev/null; then
    pgrep -af "$SCRATCH/run" >&2
    pkill -9 -f "$SCRATCH/run" || true
    fail "$1: trainer processes were left behind"
  fi
}

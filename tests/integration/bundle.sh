# scripts/bundle.sh and the device visit it prepares:
# - the device kit (`--with-tests --pack`) stays within the 45 MiB a visit carries, holds
#   no image/video codec library (GDAL, FFmpeg, OpenCV imgcodecs/videoio), and unpacked
#   in a clean environment it trains and predicts on synthetic data, while a command
#   that needs image files says that the media module is missing (exit 2, nothing written);
# - the program has RPATH $ORIGIN/../lib, its non-system libraries but none of the
#   node's (glibc, driver, CUDA), Open MPI's plugins and launcher, and runs two ranks
#   through the bundled mpirun;
# - `--media` adds the media module, which then loads from the bundle and writes images;
# - scripts/device_check.sh --dry-run runs every step that needs no GPU on that kit.
source "$(dirname "$0")/lib/common.sh"
build_dir="$(dirname "$TRAINER")"
[[ -f "$build_dir/CMakeFiles/trainer.dir/link.txt" ]] || command -v patchelf >/dev/null ||
  skip "needs patchelf or the CMake build folder of $TRAINER"
limit_mib=45

# ---- the device kit -------------------------------------------------------------------
out="$SCRATCH/bundle"
kit="$SCRATCH/kit/trainer-bundle.tar.xz"
bash "$REPO/scripts/bundle.sh" --build-dir "$build_dir" --out "$out" --with-tests --pack "$kit" \
  > "$SCRATCH/bundle.log" 2>&1 || { cat "$SCRATCH/bundle.log"; fail "bundle.sh --with-tests --pack failed"; }
bytes=$(stat -c %s "$kit")
echo "device kit: $((bytes / 1024 / 1024)) MiB packed ($bytes bytes), $(du -sh "$out" | cut -f1) unpacked"
(( bytes <= limit_mib * 1024 * 1024 )) || fail "the device kit is $bytes bytes, over $limit_mib MiB"
if tar -tJf "$kit" | grep -E 'libgdal|libavcodec|libavformat|libgst|libopencv_(imgcodecs|videoio)|libtrainer_media'; then
  fail "the device kit holds image/video codec libraries (listed above)"
fi

readelf -d "$out/bin/trainer" | grep -E 'R(UN)?PATH' | grep -qF '[$ORIGIN/../lib]' ||
  fail "bin/trainer lacks RPATH \$ORIGIN/../lib: $(readelf -d "$out/bin/trainer" | grep -i path)"
# Globs, not `ls | grep -q`: with pipefail, grep's early exit can fail the pipeline.
for lib in libmpi.so libhdf5 libboost_program_options libopencv_core libopencv_imgproc libgloo libdnnl; do
  compgen -G "$out/lib/$lib*" >/dev/null || fail "lib/ lacks $lib"
done
for node_lib in libc.so libcuda.so libcudart libcudnn libcublas libnccl; do
  ! compgen -G "$out/lib/$node_lib*" >/dev/null || fail "lib/ must not contain the node's $node_lib"
done
ls "$out"/lib/openmpi/mca_*.so >/dev/null 2>&1 || fail "no Open MPI plugins in lib/openmpi"
[[ -x "$out/bin/mpirun" && -f "$out/bin/trainer-env.sh" ]] || fail "no bundled mpirun / trainer-env.sh"
[[ ! -e "$out/bin/unit_tests" ]] || fail "the kit carries unit_tests (22 MB no visit runs)"
if [[ -x "$build_dir/tests/gpu_tests" ]]; then
  readelf -d "$out/bin/gpu_tests" | grep -E 'R(UN)?PATH' | grep -qF '[$ORIGIN/../lib]' || fail "bin/gpu_tests lacks its RPATH"
fi

# ---- the kit unpacked, in a clean environment -----------------------------------------------
clean="$SCRATCH/clean"
mkdir -p "$clean"
tar -C "$clean" -xJf "$kit"
in_clean() {  # in_clean COMMAND...: PATH, HOME and CUDA_HOME only, then the bundle's environment
  # ctest's two waiting-thread settings pass through: this test runs beside another (tests/CMakeLists.txt).
  env -i PATH=/usr/bin:/bin HOME="$clean" CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" LANG=C.UTF-8 \
    ${OMP_WAIT_POLICY:+OMP_WAIT_POLICY=$OMP_WAIT_POLICY} \
    ${OMPI_MCA_mpi_yield_when_idle:+OMPI_MCA_mpi_yield_when_idle=$OMPI_MCA_mpi_yield_when_idle} \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
    bash -c 'source "$1/trainer-bundle/bin/trainer-env.sh" && cd "$1" && shift && "$@"' in_clean "$clean" "$@"
}
[[ "$(in_clean bash -c 'command -v mpirun')" == "$clean/trainer-bundle/bin/mpirun" ]] ||
  fail "trainer-env.sh does not put the bundle first on PATH"
in_clean trainer --version > "$SCRATCH/version.txt" 2>&1 || { cat "$SCRATCH/version.txt"; fail "trainer --version"; }
grep -q "media module (image and video files): not installed" "$SCRATCH/version.txt" ||
  { cat "$SCRATCH/version.txt"; fail "--version does not say that the kit has no media module"; }
in_clean mpirun -np 2 trainer --version > "$SCRATCH/version2.txt" 2>&1 ||
  { cat "$SCRATCH/version2.txt"; fail "bundled mpirun -np 2 trainer --version failed"; }
[[ "$(grep -c '^build:' "$SCRATCH/version2.txt")" == 2 ]] || { cat "$SCRATCH/version2.txt"; fail "expected two ranks' version output"; }
in_clean trainer synth --out synth.h5 --frames 48 --size 64 > "$SCRATCH/synth.log" 2>&1 ||
  { cat "$SCRATCH/synth.log"; fail "synth in the clean kit"; }
in_clean mpirun -np 2 trainer train --data.data_files synth.h5 --out run --model.backbone resnet18 \
  --data.image_resize_height 64 --data.image_resize_width 64 --training.imgaug default \
  --training.train_batch_size 8 --training.max_epochs 1 --training.unfreezing_epoch 0 \
  > "$SCRATCH/train.log" 2>&1 || { cat "$SCRATCH/train.log"; fail "training on synthetic data in the clean kit"; }
[[ -f "$clean/run/checkpoints/last.h5" && -s "$clean/run/predictions.csv" ]] ||
  { cat "$SCRATCH/train.log"; fail "the clean kit's run left no checkpoint or predictions"; }
in_clean trainer predict --checkpoint run/checkpoints/last.h5 --out again.csv > "$SCRATCH/predict.log" 2>&1 ||
  { cat "$SCRATCH/predict.log"; fail "predict from HDF5 in the clean kit"; }
# Images need the media module: refused with the reason, before anything is written.
expect_fail 2 "needs trainer's media module .*not installed" in_clean trainer synth --out s2.h5 --frames 8 \
  --size 32 --export-dir exported
[[ ! -e "$clean/s2.h5" && ! -e "$clean/exported" ]] || fail "synth --export-dir wrote files before refusing"
grep -q "^hint: .*--media" "$SCRATCH/err.txt" || { cat "$SCRATCH/err.txt"; fail "no hint naming --media"; }

# ---- the media module in a bundle ------------------------------------------------------------
bash "$REPO/scripts/bundle.sh" --build-dir "$build_dir" --out "$SCRATCH/media-bundle" --no-mpi --media \
  > "$SCRATCH/media-bundle.log" 2>&1 || { cat "$SCRATCH/media-bundle.log"; fail "bundle.sh --media failed"; }
grep -q "^lib/libtrainer_media.so$" "$SCRATCH/media-bundle/media-files.txt" || fail "media-files.txt lacks the module"
grep -q "^lib/libopencv_videoio" "$SCRATCH/media-bundle/media-files.txt" || fail "media-files.txt lacks OpenCV videoio"
! grep -q "^lib/libopencv_core" "$SCRATCH/media-bundle/media-files.txt" || fail "OpenCV core is the program's, not the module's"
( source "$SCRATCH/media-bundle/bin/trainer-env.sh"
  trainer --version | grep -q "media module (image and video files): OpenCV .*media-bundle/lib/libtrainer_media.so" ||
    fail "the media bundle's trainer does not load its module"
  trainer synth --out "$SCRATCH/m.h5" --frames 4 --size 32 --export-dir "$SCRATCH/exported" > /dev/null ) ||
  fail "synth --export-dir with the media bundle"
[[ -f "$SCRATCH/exported/labeled-data/img00003.png" ]] || fail "the media bundle wrote no PNG frames"

# ---- the device check's dry run on the kit -----------------------------------------------------
rc=0
bash "$REPO/scripts/device_check.sh" --kit "$kit" --out "$SCRATCH/device-check" --dry-run \
  > "$SCRATCH/device-check.log" 2>&1 || rc=$?
[[ $rc == 0 ]] || { cat "$SCRATCH/device-check.log"; fail "device_check.sh --dry-run exited $rc"; }
files=$(find "$SCRATCH/device-check" -type f | wc -l)
(( files <= 8 )) || fail "the device check left $files files, more than the 8 a visit returns"
grep -q "| 3-integration | PASS" "$SCRATCH/device-check/summary.md" || fail "no CPU training through the kit"
grep -q "| 9-vit | PASS" "$SCRATCH/device-check/summary.md" || fail "the ViT comparison's wiring failed on the CPU"
grep -q "| 4-sanitizer | SKIPPED (dry run" "$SCRATCH/device-check/summary.md" || fail "the dry run ran a GPU step"
grep -q "| 12-cuda-graphs | SKIPPED (dry run" "$SCRATCH/device-check/summary.md" || fail "the dry run ran the CUDA graphs step"
grep -q "| 13-goal-profiles | SKIPPED (dry run" "$SCRATCH/device-check/summary.md" || fail "the dry run ran the goal profiles step"
tar -tzf "$SCRATCH/device-check/logs.tar.gz" > "$SCRATCH/logs-list.txt"  # not piped: grep -q would cut tar off
grep -q "1-env.log" "$SCRATCH/logs-list.txt" || fail "logs.tar.gz lacks the logs"
echo "bundle OK: device kit $((bytes / 1024 / 1024)) MiB; dry run:"
sed -n '/^| step/,/^$/p' "$SCRATCH/device-check/summary.md"

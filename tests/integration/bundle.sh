# scripts/bundle.sh: the relocatable bundle has the program with RPATH $ORIGIN/../lib,
# its non-system libraries but none of the node's (glibc, driver, CUDA), Open MPI's
# plugins and launcher, and runs two ranks through the bundled mpirun.
source "$(dirname "$0")/lib/common.sh"
build_dir="$(dirname "$TRAINER")"
[[ -f "$build_dir/CMakeFiles/trainer.dir/link.txt" ]] || command -v patchelf >/dev/null ||
  skip "needs patchelf or the CMake build folder of $TRAINER"
out="$SCRATCH/bundle"
with_tests=()
[[ -x "$build_dir/tests/gpu_tests" ]] && with_tests=(--with-tests)
bash "$REPO/scripts/bundle.sh" --build-dir "$build_dir" --out "$out" "${with_tests[@]}" > "$SCRATCH/bundle.log" 2>&1 ||
  { cat "$SCRATCH/bundle.log"; fail "bundle.sh failed"; }

readelf -d "$out/bin/trainer" | grep -E 'R(UN)?PATH' | grep -qF '[$ORIGIN/../lib]' ||
  fail "bin/trainer lacks RPATH \$ORIGIN/../lib: $(readelf -d "$out/bin/trainer" | grep -i path)"
# Globs, not `ls | grep -q`: with pipefail, grep's early exit can fail the pipeline
# (SIGPIPE to ls) once lib/ holds a few hundred entries (OpenCV's video I/O brings FFmpeg's).
for lib in libmpi.so libhdf5 libboost_program_options libopencv_core libgloo; do
  compgen -G "$out/lib/$lib*" >/dev/null || fail "lib/ lacks $lib"
done
for node_lib in libc.so libcuda.so libcudart libcudnn libcublas libnccl; do
  ! compgen -G "$out/lib/$node_lib*" >/dev/null || fail "lib/ must not contain the node's $node_lib"
done
ls "$out"/lib/openmpi/mca_*.so >/dev/null 2>&1 || fail "no Open MPI plugins in lib/openmpi"
[[ -x "$out/bin/mpirun" && -f "$out/bin/trainer-env.sh" ]] || fail "no bundled mpirun / trainer-env.sh"

# The bundled mpirun, relocated by trainer-env.sh, starts two ranks of the bundled program.
( source "$out/bin/trainer-env.sh"
  [[ "$(command -v mpirun)" == "$out/bin/mpirun" ]] || fail "trainer-env.sh does not put the bundle first on PATH"
  mpirun --oversubscribe -np 2 trainer --version > "$SCRATCH/version.txt" 2>&1 ) ||
  { cat "$SCRATCH/version.txt"; fail "bundled mpirun -np 2 trainer --version failed"; }
[[ "$(grep -c '^build:' "$SCRATCH/version.txt")" == 2 ]] || { cat "$SCRATCH/version.txt"; fail "expected two ranks' version output"; }
# With the GPU tests in it, the bundle drives scripts/gpu_verify.sh (which skips without a GPU).
if [[ ${#with_tests[@]} == 1 ]]; then
  readelf -d "$out/bin/gpu_tests" | grep -E 'R(UN)?PATH' | grep -qF '[$ORIGIN/../lib]' || fail "bin/gpu_tests lacks its RPATH"
  if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
    rc=0
    bash "$REPO/scripts/gpu_verify.sh" --bundle "$out" --out "$SCRATCH/verify" > "$SCRATCH/verify.log" 2>&1 || rc=$?
    [[ $rc == 77 ]] && grep -q "SKIPPED: no GPU visible" "$SCRATCH/verify.log" ||
      { cat "$SCRATCH/verify.log"; fail "gpu_verify.sh without a GPU: expected a visible skip (77), got $rc"; }
  fi
fi
echo "bundle OK: $(du -sh "$out" | cut -f1), $(ls "$out/lib" | wc -l) entries in lib/"

#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine for trainer, build it, and either run the demo
# or every test. These are the README's two commands:
#
#   bash scripts/setup.sh demo   # install what is missing, build, run the 2-rank demo
#   bash scripts/setup.sh test   # install, build (GPU code too when nvcc is there), run all
#                                # tests, plus the CPU-only module build (Lmod +
#                                # Makefile.hpc), the unit tests under ASan+UBSan, and
#                                # 30 s of libFuzzer per parser of user input
#
# Runs as root or as a user with sudo. TRAINER_JOBS sets build parallelism (default: nproc),
# TRAINER_TEST_JOBS how many tests ctest runs at once (default: 2).
# CUDA: when /usr/local/cuda/bin/nvcc (or nvcc on PATH) exists, the CMake build compiles
# the GPU path too; no GPU is needed to build or to run the CPU tests.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

MODE=${1:-}
if [[ $MODE != demo && $MODE != test ]]; then
  echo "usage: bash scripts/setup.sh demo|test" >&2
  exit 2
fi
JOBS=${TRAINER_JOBS:-$(nproc)}
# Tests side by side: 2 (as on CI's 2 cores; one core runs them one at a time). The
# test environment makes waiting threads sleep for this pairing (tests/CMakeLists.txt);
# more at once is not what the tests are tuned for.
TEST_JOBS=${TRAINER_TEST_JOBS:-$(( $(nproc) > 1 ? 2 : 1 ))}

# Build and run dependencies (Debian package names). The test mode adds what the test
# suite uses: Lmod for the module build, SLURM for the job-script tests, Debian's
# PyTorch for the reference comparisons (with OpenBLAS, which the alternatives system
# makes its libblas.so.3: Debian's default reference BLAS makes the ViT references and
# benchmarks about 37x slower), and clang (with libFuzzer, and libomp for OpenMP) for
# the fuzzers.
PACKAGES=(cmake g++ make git pkg-config openmpi-bin libopenmpi-dev libhdf5-dev hdf5-tools
          libboost-program-options-dev catch2 libgloo-dev libdnnl-dev libopencv-dev libopencv-videoio-dev zlib1g-dev
          libyaml-cpp-dev libzip-dev python3-venv)
TEST_PACKAGES=(lmod slurm-wlm munge python3-torch python3-torchvision python3-h5py clang libomp-dev
               python3-pandas python3-tables libopenblas0-pthread)

# Test tools that Debian does not package, from PyPI, into a virtual environment beside
# the build (it sees Debian's python3-torch, -h5py and -pandas too); integration tests
# find it through tests/integration/lib/common.sh (test_python).
PIP_TEST_PACKAGES=(tensorboard)
PYTHON_TEST_ENV=build/python-test-env

say() { printf '\n=== %s\n' "$*"; }

install_packages() {
  local wanted=("${PACKAGES[@]}") missing=() sudo=""
  [[ $MODE == test ]] && wanted+=("${TEST_PACKAGES[@]}")
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [[ $(id -u) == 0 ]] || sudo=sudo
  say "apt-get update"
  if ! $sudo apt-get update -q; then
    [[ ${#missing[@]} == 0 ]] || { echo "apt-get update failed and packages are missing: ${missing[*]}" >&2; exit 1; }
    echo "warning: apt-get update failed; every package is already installed, going on" >&2
  fi
  if [[ ${#missing[@]} -gt 0 ]]; then
    say "installing: ${missing[*]}"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "all ${#wanted[@]} packages are installed"
  fi
}

# nvcc is usually not on PATH on a fresh machine: the CUDA toolkit lives in /usr/local/cuda.
CUDA_ARGS=()
find_nvcc() {
  local nvcc=""
  if [[ -x /usr/local/cuda/bin/nvcc ]]; then
    nvcc=/usr/local/cuda/bin/nvcc
  elif command -v nvcc >/dev/null; then
    nvcc=$(command -v nvcc)
  fi
  if [[ -n $nvcc ]]; then
    export PATH="$(dirname "$nvcc"):$PATH"
    CUDA_ARGS=(-DCMAKE_CUDA_COMPILER="$nvcc")
    echo "nvcc: $nvcc (the GPU path will be built)"
    # cudnn-frontend's headers (PyPI, header-only) for the graph-API convolutions; the
    # build goes on without them if PyPI cannot be reached.
    bash scripts/fetch_cudnn_frontend.sh || true
  else
    echo "no nvcc: CPU-only build"
  fi
}

build_cmake() {
  if [[ $MODE == demo ]]; then say "CMake build in build/ (TRAINER_CUDA=AUTO)"; fi
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${CUDA_ARGS[@]}"
  cmake --build build -j "$JOBS"
  build/trainer --version
}

# mpirun refuses to run as root unless told; CI runs as root.
mpi_env() {
  if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  # Two ranks even where Open MPI counts fewer slots (containers, one-core VMs).
  export OMPI_MCA_rmaps_base_oversubscribe=1
}

run_demo() {
  mpi_env
  say "demo: mpirun -np 2 build/trainer plan --config inputs/demo.cfg (what each rank will do)"
  mpirun -np 2 build/trainer plan --config inputs/demo.cfg
  say "demo: mpirun -np 2 build/trainer train --config inputs/demo.cfg"
  mpirun -np 2 build/trainer train --config inputs/demo.cfg
  echo "the run folder (config.ini, split.csv, metrics.csv, checkpoints/) is the newest one under outputs/"
}

# ---- test stages -------------------------------------------------------------
STAGES=()
stage() {  # stage NAME command...: runs a stage, records PASS/FAIL and its time
  local name=$1 start=$SECONDS rc=0
  shift
  say "$name"
  "$@" || rc=$?
  local status=PASS
  [[ $rc == 0 ]] || status="FAIL (exit $rc)"
  STAGES+=("$(printf '%-44s %-14s %4ds' "$name" "$status" $((SECONDS - start)))")
  return 0
}

check_gpu_path_built() {
  if [[ ${#CUDA_ARGS[@]} -gt 0 ]] && ! build/trainer --version | grep -q "cuda (CUDA"; then
    echo "nvcc is present but the GPU path was not built (see the cmake output above)" >&2
    return 1
  fi
}

run_ctest() {
  mpi_env
  # Two tests at a time (tests/CMakeLists.txt says which run alone).
  ctest --test-dir build --output-on-failure --timeout 900 -j "$TEST_JOBS"
}

# One clang build folder for the sanitizers and the fuzzers (CPU-only, -O1): ASan and
# UBSan, plus libFuzzer's coverage instrumentation (TRAINER_FUZZ), so the sources are
# compiled with clang once; clang builds this about twice as fast as g++ would with
# the sanitizers, and g++ already built everything above.
sanitizer_build() {
  CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTRAINER_FUZZ=ON -DTRAINER_CUDA=OFF
  cmake --build build-asan -j "$JOBS" --target unit_tests fuzzers
}

sanitizer_unit_tests() {
  sanitizer_build
  mpi_env
  # Open MPI and oneDNN keep allocations until exit by design: those are not our leaks.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$REPO/scripts/lsan.supp \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -L unit --output-on-failure -j "$TEST_JOBS"
}

# libFuzzer over the parsers of user input: the harnesses (tests/fuzz) from the build
# above, 30 s each on a copy of the checked-in corpus (longer runs: bash
# scripts/fuzz.sh SECONDS).
fuzz_parsers() {
  TRAINER_FUZZ_BUILD=$REPO/build-asan bash scripts/fuzz.sh 30
}

install_python_test_tools() {
  say "PyPI test tools into $PYTHON_TEST_ENV: ${PIP_TEST_PACKAGES[*]}"
  [[ -x $PYTHON_TEST_ENV/bin/python3 ]] || /usr/bin/python3 -m venv --system-site-packages "$PYTHON_TEST_ENV"
  "$PYTHON_TEST_ENV/bin/python3" -m pip install -q --disable-pip-version-check "${PIP_TEST_PACKAGES[@]}"
}

install_packages
find_nvcc
if [[ $MODE == test ]]; then install_python_test_tools; fi
if [[ $MODE == demo ]]; then
  build_cmake
  run_demo
  exit 0
fi

stage "CMake build (TRAINER_CUDA=AUTO)" build_cmake
stage "GPU path compiled when nvcc is present" check_gpu_path_built
stage "ctest (unit + integration)" run_ctest
stage "Lmod module build: Makefile.hpc CUDA=0" bash scripts/ci-lmod.sh "$JOBS"
stage "clang ASan+UBSan build; unit tests under it" sanitizer_unit_tests
stage "fuzzers: config, YAML, label CSV, dataset, weights (30 s each)" fuzz_parsers

say "summary"
failed=0
for line in "${STAGES[@]}"; do
  echo "$line"
  [[ $line == *FAIL* ]] && failed=1
done
exit $failed

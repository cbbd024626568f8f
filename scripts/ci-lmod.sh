#!/usr/bin/env bash
# The module-based build, tested for real: Lmod with small modulefiles (in a temporary
# MODULEPATH) for the system-installed CUDA, Open MPI, HDF5 and Boost that export the
# variables Makefile.hpc reads, `module load` them in a clean environment, then
#   make -f Makefile.hpc CUDA=0      -> ./trainer and ./libtrainer_media.so, and run
#                                       ./trainer --version (which loads the module);
#   make -f Makefile.hpc install     -> a prefix with its modulefile, then, with every
#                                       module purged, `module load trainer`, its
#                                       --version and a plan of its example config.
# The CPU-only variant is built (it doubles as CI's CPU-only build check); the GPU
# variant's compile commands are checked with a dry run so CUDA_HOME is exercised too.
# The build runs at -O0 in a scratch copy of the checkout (its tracked and untracked,
# not ignored, files): it checks that Makefile.hpc finds, compiles and links everything
# under modules, which needs no optimizer (CMake's build checks the optimized code and
# its warnings), and it leaves no objects or ./trainer in the checkout.
# usage: scripts/ci-lmod.sh [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${1:-2}
LMOD_INIT=/usr/share/lmod/lmod/init/bash
[[ -f $LMOD_INIT ]] || { echo "Lmod is not installed (Debian: apt-get install lmod)" >&2; exit 1; }

TRIPLE=$(gcc -print-multiarch)
MODULES=$(mktemp -d)
trap 'rm -rf "$MODULES"' EXIT
mkdir -p "$MODULES"/{cuda,openmpi,hdf5,boost}
cat >"$MODULES/cuda/system.lua" <<LUA
whatis("CUDA toolkit with cuDNN and NCCL in /usr/local/cuda")
setenv("CUDA_HOME", "/usr/local/cuda")
setenv("CUDNN_ROOT", "/usr/local/cuda")
setenv("NCCL_ROOT", "/usr/local/cuda")
prepend_path("PATH", "/usr/local/cuda/bin")
prepend_path("LD_LIBRARY_PATH", "/usr/local/cuda/lib64")
LUA
cat >"$MODULES/openmpi/system.lua" <<LUA
whatis("Debian's Open MPI")
setenv("MPI_HOME", "/usr/lib/$TRIPLE/openmpi")
prepend_path("PATH", "/usr/bin")
LUA
cat >"$MODULES/hdf5/system.lua" <<LUA
whatis("Debian's serial HDF5")
setenv("HDF5_DIR", "/usr/lib/$TRIPLE/hdf5/serial")
setenv("HDF5_ROOT", "/usr/lib/$TRIPLE/hdf5/serial")
LUA
cat >"$MODULES/boost/system.lua" <<LUA
whatis("Debian's Boost")
setenv("BOOST_ROOT", "/usr")
LUA

SRC="$MODULES/src"
mkdir -p "$SRC"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' file; do [[ -e $file ]] || continue; printf '%s\0' "$file"; done |
  tar --null -T - -cf - | tar -x -C "$SRC"
# The copy has no .git: the revision comes from here, as Makefile.hpc would write it.
REVISION=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]] && REVISION+=-dirty

# A clean environment: whatever the variables are, they must come from the modules.
env -u CUDA_HOME -u CUDA_ROOT -u CUDNN_ROOT -u CUDNN_HOME -u NCCL_ROOT -u NCCL_HOME \
    -u HDF5_DIR -u HDF5_ROOT -u BOOST_ROOT -u MODULEPATH -u LOADEDMODULES -u _LMFILES_ \
    MODULES="$MODULES" LMOD_INIT="$LMOD_INIT" JOBS="$JOBS" TRIPLE="$TRIPLE" SRC="$SRC" REVISION="$REVISION" \
    bash --noprofile --norc -euo pipefail -c '
  source "$LMOD_INIT"
  cd "$SRC"
  export MODULEPATH="$MODULES"
  module load cuda openmpi hdf5 boost
  module list 2>&1
  echo "CUDA_HOME=$CUDA_HOME HDF5_DIR=$HDF5_DIR BOOST_ROOT=$BOOST_ROOT mpicxx=$(command -v mpicxx)"

  # The GPU variant would compile against the module paths (dry run: no compiling).
  make -f Makefile.hpc CUDA=1 -n -B >"$MODULES/dry-run.txt"
  grep -q -- "-isystem /usr/local/cuda/include" "$MODULES/dry-run.txt" \
    || { echo "Makefile.hpc CUDA=1 ignores CUDA_HOME" >&2; exit 1; }

  make -f Makefile.hpc CUDA=0 OPT=-O0 REVISION="$REVISION" -j "$JOBS" | tee "$MODULES/build.txt"
  grep -q -- "-isystem /usr/lib/$TRIPLE/hdf5/serial/include" "$MODULES/build.txt" || {
    grep -q "Nothing to be done\|is up to date" "$MODULES/build.txt" \
      || { echo "Makefile.hpc ignores HDF5_DIR" >&2; exit 1; }
  }
  ./trainer --version | tee "$MODULES/version.txt"
  grep -q "Makefile.hpc" "$MODULES/version.txt"
  grep -q "no cuda" "$MODULES/version.txt"
  grep -q "unoptimized" "$MODULES/version.txt"  # OPT reached the compiler
  # The media module was built beside ./trainer and loads from there.
  grep -q "media module (image and video files): OpenCV" "$MODULES/version.txt"

  # An admin install: a prefix with its own modulefile, loaded with nothing else loaded
  # (the dependency libraries come through the binary run path).
  make -f Makefile.hpc install CUDA=0 OPT=-O0 REVISION="$REVISION" PREFIX="$MODULES/prefix" | tail -n 1
  module purge
  module use "$MODULES/prefix/share/trainer/modulefiles"
  module load trainer
  [[ $(command -v trainer) == "$MODULES/prefix/bin/trainer" ]] || { echo "module load trainer: not on PATH" >&2; exit 1; }
  trainer --version | grep -q "media module (image and video files): OpenCV" \
    || { echo "the installed trainer does not load its media module" >&2; exit 1; }
  trainer plan --config "$TRAINER_ROOT/share/trainer/inputs/demo.cfg" | grep -q "^plan: 1 rank" \
    || { echo "the installed trainer cannot plan its example config" >&2; exit 1; }
'
echo "module build OK: ./trainer (in a scratch copy of the checkout, -O0), installed and loaded as a module"

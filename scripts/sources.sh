#!/usr/bin/env bash
# The one source-selection rule shared by the builds, so no hand-kept list can drift:
#   cpp       every src/**/*.cpp except src/app/main.cpp and files under a cuda/ or media/ folder
#   cuda-cpp  src/**/cuda/**/*.cpp (GPU path only)
#   media     src/**/media/**/*.cpp (the media module, libtrainer_media.so)
#   cu        kernels/**/*.cu and src/**/*.cu (GPU path only)
#   main      src/app/main.cpp
# CMakeLists.txt applies the same rule with file(GLOB_RECURSE); Makefile.hpc calls this.
# Paths are printed relative to the repository root, sorted, one per line.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-}
case "$what" in
  cpp)      find src -name '*.cpp' ! -path 'src/app/main.cpp' ! -path '*/cuda/*' ! -path '*/media/*' | LC_ALL=C sort ;;
  media)    find src -name '*.cpp' -path '*/media/*' | LC_ALL=C sort ;;
  cuda-cpp) find src -name '*.cpp' -path '*/cuda/*' | LC_ALL=C sort ;;
  cu)       { [[ -d kernels ]] && find kernels -name '*.cu'; find src -name '*.cu'; } | LC_ALL=C sort ;;
  main)     echo src/app/main.cpp ;;
  *) echo "usage: $0 cpp|cuda-cpp|cu|media|main" >&2; exit 2 ;;
esac

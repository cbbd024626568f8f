#!/usr/bin/env bash
# Fetches cudnn-frontend's C++ headers (header-only; NVIDIA's `nvidia-cudnn-frontend`
# wheel on PyPI carries them under include/) into third_party/cudnn-frontend/include,
# where CMake and Makefile.hpc look for them. With them the GPU build gains
# model.conv_algorithms = graph | graph-autotune (cuDNN's graph API, docs/GPU.md) and the
# deviceless plan test; without them it builds as before and refuses those two values.
#
#   bash scripts/fetch_cudnn_frontend.sh [DEST]     # DEST default: third_party/cudnn-frontend
#
# Pinned: the version the graph code and tests were written against. Nothing runs from
# the wheel; only its include/ is kept. Exit 0 when the headers are in place, 1 if not.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.32.0
DEST=${1:-third_party/cudnn-frontend}
STAMP=$DEST/VERSION

if [[ -f $DEST/include/cudnn_frontend.h && $(cat "$STAMP" 2>/dev/null) == "$VERSION" ]]; then
  echo "cudnn-frontend $VERSION headers: $DEST/include (already there)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# pip from a throwaway virtual environment: Debian's python3 has no pip of its own.
/usr/bin/python3 -m venv "$work/env"
if ! "$work/env/bin/python3" -m pip download -q --disable-pip-version-check --no-deps \
       --only-binary=:all: "nvidia-cudnn-frontend==$VERSION" -d "$work/wheel"; then
  echo "warning: could not download nvidia-cudnn-frontend==$VERSION from PyPI;" \
       "the GPU build goes on without the graph-API convolutions" >&2
  exit 1
fi
rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp"
/usr/bin/python3 - "$work"/wheel/*.whl "$DEST.tmp" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.startswith("include/") and not m.endswith("/")]
    if not any(m == "include/cudnn_frontend.h" for m in members):
        sys.exit(f"{wheel} has no include/cudnn_frontend.h")
    for m in members:
        z.extract(m, dest)
    licenses = [m for m in z.namelist() if ".dist-info/licenses/" in m]
    for m in licenses:
        z.extract(m, dest)
PY
echo "$VERSION" > "$DEST.tmp/VERSION"
rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
echo "cudnn-frontend $VERSION headers: $DEST/include"

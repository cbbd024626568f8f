#!/usr/bin/env bash
# Relocatable bundle of `trainer` for GPU nodes that lack the build dependencies.
#
#   scripts/bundle.sh [--build-dir build] [--out bundle] [--no-mpi] [--with-tests]
#                     [--media] [--pack FILE.tar.xz] [--max-packed-mib 45]
#
# --with-tests  adds OUT/bin/gpu_tests (when the GPU path is built; same RPATH), for
#               scripts/device_check.sh, and
#               OUT/share/mirror-mouse/ (lightning-pose's example from $MIRROR_MOUSE_DIR,
#               default ../shared/data/mirror-mouse-example, when it is there).
# --media       adds the media module (lib/libtrainer_media.so: image and video files,
#               OpenCV imgcodecs/videoio with FFmpeg, GDAL, GStreamer: ~230 MB) and the
#               libraries only it needs. Without it the bundle trains, benchmarks and
#               predicts from HDF5; commands that read images or videos (import,
#               predict --video, unlabelled video frames) say that the module is missing.
# --pack FILE   also writes FILE (tar.xz, top folder trainer-bundle/) without the media
#               module and, with --media, FILE's name with -media before .tar.xz holding
#               only the media files (unpack it over the first). Fails when FILE is over
#               --max-packed-mib MiB (default 45: what a GPU device visit carries, with
#               room for the working tree).
#
# Produces:
#   OUT/bin/trainer           the program, RPATH $ORIGIN/../lib (DT_RPATH, so it also
#                             covers the libraries' own dependencies)
#   OUT/lib/                  every non-system, non-CUDA shared library it needs
#   OUT/lib/openmpi/          Open MPI's MCA plugins (and their dependencies in lib/)
#   OUT/lib/pmix/             PMIx plugins, when Open MPI uses an external PMIx
#   OUT/share/openmpi/        Open MPI help texts; OUT/etc/ its parameter files
#   OUT/bin/mpirun, orted     Open MPI's launcher and daemon
#   OUT/bin/trainer-env.sh    source it: relocates Open MPI (OPAL_PREFIX, ...) and
#                             adds CUDA_HOME / CUDNN_HOME / NCCL_HOME libraries
#   OUT/media-files.txt       with --media: the files that belong to the media module
#
# Not bundled, taken from the node: glibc, the NVIDIA driver (libcuda), and the CUDA
# libraries (cudart, cuBLAS, cuDNN, NCCL): they must match the node's driver. Point
# the bundle at them with `module load cuda cudnn nccl` or CUDA_HOME=... (see
# docs/GPU.md). The RPATH is set with patchelf when it is installed, otherwise by
# relinking the program from the build folder with -Wl,-rpath,$ORIGIN/../lib.
set -euo pipefail

build_dir=build
out=bundle
with_mpi=1
with_tests=0
with_media=0
pack=""
max_packed_mib=45
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-mpi) with_mpi=0; shift ;;
    --with-tests) with_tests=1; shift ;;
    --media) with_media=1; shift ;;
    --pack) pack="$2"; shift 2 ;;
    --max-packed-mib) max_packed_mib="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "error: unknown option $1" >&2; echo "hint: scripts/bundle.sh --help" >&2; exit 2 ;;
  esac
done

die() { echo "error: $1" >&2; [[ -n "${2:-}" ]] && echo "hint: $2" >&2; exit 2; }

trainer="$build_dir/trainer"
[[ -x "$trainer" ]] || die "no program at $trainer" "build first: cmake --build $build_dir, or pass --build-dir"
command -v ldd >/dev/null || die "ldd not found"

# Libraries the node provides: glibc and the loader, the NVIDIA driver, and the
# CUDA toolkit libraries that must match it.
is_node_library() {
  case "$(basename "$1")" in
    linux-vdso.so*|ld-linux*.so*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|\
    libutil.so*|libresolv.so*|libnsl.so*|libanl.so*|libmvec.so*) return 0 ;;
    libcuda.so*|libnvidia-*.so*|libcudart.so*|libcublas.so*|libcublasLt.so*|libcudnn*.so*|\
    libnccl.so*|libnvrtc*.so*|libnvJitLink.so*|libcufft*.so*|libcurand*.so*|libcusparse*.so*|\
    libcusolver*.so*|libnvToolsExt*.so*) return 0 ;;
  esac
  return 1
}

# Resolved dependency paths of an ELF file (ldd lines "name => /path (addr)").
deps_of() {
  ldd "$1" 2>/dev/null | awk '/=> \// { print $3 } /^\t\/[^ ]+ \(/ { print $1 }' | sort -u
}

# libblas.so.3 / liblapack.so.3 are whatever Debian's alternatives point at. OpenCV's
# core links LAPACK but the trainer never calls it; when the alternatives name OpenBLAS
# (the test packages install it for PyTorch), the kit takes Debian's reference
# libraries instead: 45 MB of OpenBLAS would not fit a device visit.
reference_blas() {  # reference_blas PATH: the reference library for an alternatives-chosen one, or PATH
  local dir; dir="$(dirname "$(readlink -f "$1")")"
  case "$(basename "$1")" in
    libblas.so.3|liblapack.so.3)
      local kind; kind="$(basename "$1" .so.3)"; kind="${kind#lib}"
      local reference; reference="$(dirname "$dir")/$kind/$(basename "$1")"
      if [[ "$dir" == */openblas* && -f "$reference" ]]; then echo "$reference"; return; fi ;;
  esac
  echo "$1"
}

copy_deps() {  # copy_deps ELF: copies its non-node dependencies into OUT/lib
  local dep
  while read -r dep; do
    [[ -z "$dep" ]] && continue
    is_node_library "$dep" && continue
    local name; name="$(basename "$dep")"
    [[ -e "$out/lib/$name" ]] && continue
    [[ "$name" == libopenblas*.so* ]] && continue  # reference_blas took its place
    dep="$(reference_blas "$dep")"
    cp -L "$dep" "$out/lib/$name"
    chmod u+w "$out/lib/$name"
  done < <(deps_of "$1")
}

# Only ever replace an earlier bundle, never an unrelated folder.
if [[ -e "$out" ]]; then
  [[ -f "$out/bin/trainer-env.sh" ]] ||
    die "$out exists and is not a bundle" "choose a new --out folder or remove it yourself"
  rm -rf "$out"
fi
mkdir -p "$out/bin" "$out/lib" "$out/share" "$out/etc"

# ---- the program(s) with their RPATH ------------------------------------------
install_program() {  # install_program BUILT_BINARY TARGET_NAME CMAKE_TARGET_DIR
  local built="$1" name="$2" target_dir="$3"
  if command -v patchelf >/dev/null; then
    cp "$built" "$out/bin/$name"
    patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$out/bin/$name"
  else
    local link_txt="$target_dir/link.txt"
    [[ -f "$link_txt" ]] || die "patchelf not installed and no $link_txt to relink from" \
      "install patchelf (apt-get install patchelf) or run from a CMake build folder"
    local abs_out work_dir
    abs_out="$(cd "$out" && pwd)"
    work_dir="$(dirname "$(dirname "$target_dir")")"  # the folder link.txt's paths are relative to
    # Drop the build tree's absolute rpaths, write the program into the bundle and
    # ask for an old-style DT_RPATH that also applies to indirect dependencies.
    local cmd
    cmd="$(sed -e 's/-Wl,-rpath,[^ ]*//g' -e "s| -o [^ ]*$name | -o $abs_out/bin/$name |" "$link_txt")"
    (cd "$work_dir" && eval "$cmd -Wl,--disable-new-dtags -Wl,-rpath,'\$ORIGIN/../lib'")
  fi
  copy_deps "$out/bin/$name"
}
install_program "$trainer" trainer "$build_dir/CMakeFiles/trainer.dir"
if [[ $with_tests == 1 ]]; then
  # No unit_tests: a visit never ran them (ctest runs them on the build machine), and
  # their 22 MB (4.6 MB packed) had taken the packed kit to 41.9 of its 45 MiB.
  if [[ -x "$build_dir/tests/gpu_tests" ]]; then
    install_program "$build_dir/tests/gpu_tests" gpu_tests "$build_dir/tests/CMakeFiles/gpu_tests.dir"
  else
    echo "note: no $build_dir/tests/gpu_tests (CPU-only build): the bundle has no GPU tests" >&2
  fi
  # lightning-pose's mirror-mouse example for the device check's step 10 (the GPU-speed
  # issue's 300-epoch wall-time goal): the trainer's HDF5 of it (the kit's trainer has
  # no image decoder; 5.6 MB packed) and, for PyTorch's loop, its frames at 128x128
  # (scripts/mirror_mouse_torch.py --write-frames: 1 MB; needs torch and h5py here).
  mirror_mouse="${MIRROR_MOUSE_DIR:-$(dirname "$0")/../../shared/data/mirror-mouse-example}"
  frames_python=""
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c "import torch, h5py, numpy" 2>/dev/null; then frames_python="$candidate"; break; fi
  done
  if [[ -f "$mirror_mouse/CollectedData.csv" && -n "$frames_python" ]]; then
    mkdir -p "$out/share/mirror-mouse"
    "$trainer" import --csv "$mirror_mouse/CollectedData.csv" --out "$out/share/mirror-mouse/mirror-mouse.h5" \
      >/dev/null || die "trainer import of $mirror_mouse failed"
    "$frames_python" "$(dirname "$0")/mirror_mouse_torch.py" --write-frames "$out/share/mirror-mouse/frames.npz" \
      --data "$out/share/mirror-mouse/mirror-mouse.h5" >/dev/null || die "writing the mirror-mouse frames failed"
  else
    echo "note: no $mirror_mouse (or no python3 with torch and h5py): the kit has no mirror-mouse data" \
      "(device check step 10 will skip)" >&2
  fi
fi

# ---- Open MPI runtime ------------------------------------------------------------
if [[ $with_mpi == 1 ]]; then
  command -v ompi_info >/dev/null || die "ompi_info not found: cannot locate Open MPI" "use --no-mpi to skip it"
  ompi_path() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
  pkglibdir="$(ompi_path pkglibdir)"
  pkgdatadir="$(ompi_path pkgdatadir)"
  sysconfdir="$(ompi_path sysconfdir)"
  bindir="$(ompi_path bindir)"
  mkdir -p "$out/lib/openmpi" "$out/share/openmpi"
  cp -L "$pkglibdir"/*.so "$out/lib/openmpi/" 2>/dev/null || true
  for plugin in "$out"/lib/openmpi/*.so; do copy_deps "$plugin"; done
  cp -rL "$pkgdatadir"/. "$out/share/openmpi/" 2>/dev/null || true
  [[ -d "$sysconfdir" ]] && cp -L "$sysconfdir"/*.conf "$out/etc/" 2>/dev/null || true
  for tool in mpirun orterun orted prterun prted; do
    if [[ -x "$bindir/$tool" ]]; then
      cp -L "$bindir/$tool" "$out/bin/$tool"
      copy_deps "$out/bin/$tool"
    fi
  done
  # An external PMIx (Debian, many distributions) has plugins of its own.
  pmix_lib="$(ldd "$out/lib/openmpi/"*pmix*.so 2>/dev/null | awk '/libpmix/ { print $3; exit }')"
  if [[ -n "$pmix_lib" ]]; then
    pmix_plugins="$(dirname "$(readlink -f "$pmix_lib")")/pmix"
    if [[ -d "$pmix_plugins" ]]; then
      mkdir -p "$out/lib/pmix"
      cp -L "$pmix_plugins"/*.so "$out/lib/pmix/"
      for plugin in "$out"/lib/pmix/*.so; do copy_deps "$plugin"; done
    fi
  fi
fi

# ---- the media module, last: what it alone needs is listed in media-files.txt ----
if [[ $with_media == 1 ]]; then
  module="$build_dir/libtrainer_media.so"
  [[ -f "$module" ]] || die "no media module at $module" "build it: cmake --build $build_dir --target trainer_media"
  before="$(cd "$out" && find lib -maxdepth 1 -type f | sort)"
  cp -L "$module" "$out/lib/libtrainer_media.so"
  copy_deps "$out/lib/libtrainer_media.so"
  comm -13 <(echo "$before") <(cd "$out" && find lib -maxdepth 1 -type f | sort) > "$out/media-files.txt"
fi

# Bundled libraries look next to themselves first (their build-time RUNPATHs
# would otherwise hide the bundle from their own dependencies).
if command -v patchelf >/dev/null; then
  for lib in "$out"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$lib" 2>/dev/null || true; done
fi

# ---- environment script ------------------------------------------------------------
cat > "$out/bin/trainer-env.sh" <<'ENV'
# Source this file to use the bundle: `source /path/to/bundle/bin/trainer-env.sh`.
# CUDA, cuDNN and NCCL come from the node: load their modules first, or set
# CUDA_HOME (and CUDNN_HOME / NCCL_HOME when they live elsewhere).
_tb="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
export PATH="$_tb/bin:$PATH"
export OPAL_PREFIX="$_tb" OPAL_BINDIR="$_tb/bin" OPAL_LIBDIR="$_tb/lib" \
       OPAL_PKGLIBDIR="$_tb/lib/openmpi" OPAL_DATADIR="$_tb/share" \
       OPAL_PKGDATADIR="$_tb/share/openmpi" OPAL_SYSCONFDIR="$_tb/etc"
[ -d "$_tb/lib/pmix" ] && export PMIX_MCA_mca_base_component_path="$_tb/lib/pmix"
_tl="$_tb/lib"
for _h in "${CUDA_HOME:-}" "${CUDNN_HOME:-}" "${NCCL_HOME:-}"; do
  [ -n "$_h" ] || continue
  for _d in "$_h/lib64" "$_h/lib" "$_h/targets/x86_64-linux/lib"; do
    [ -d "$_d" ] && _tl="$_tl:$_d"
  done
done
# Plugins are dlopen()ed and resolve their own dependencies through this path.
export LD_LIBRARY_PATH="$_tl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset _tb _tl _h _d
ENV

echo "bundle written to $out ($(ls "$out/lib" | wc -l) entries in lib/)"

# ---- archives ------------------------------------------------------------------------
if [[ -n "$pack" ]]; then
  [[ "$pack" == *.tar.xz ]] || die "--pack $pack: the archive name must end in .tar.xz"
  mkdir -p "$(dirname "$pack")"
  media_pack="${pack%.tar.xz}-media.tar.xz"
  trap 'rm -f "$pack.tmp" "$media_pack.tmp"' EXIT
  # Exclusion patterns match member names before --transform renames them.
  exclude_list="$(mktemp)"
  if [[ -f "$out/media-files.txt" ]]; then sed "s|^|$(basename "$out")/|" "$out/media-files.txt" > "$exclude_list"; fi
  # One top folder whatever --out is called, so an unpacked kit is always trainer-bundle/.
  tar -C "$(dirname "$out")" --exclude-from="$exclude_list" --transform "s|^$(basename "$out")|trainer-bundle|" \
      -cf - "$(basename "$out")" | xz -6 -T2 > "$pack.tmp"
  rm -f "$exclude_list"
  mv "$pack.tmp" "$pack"
  bytes=$(stat -c %s "$pack")
  echo "packed $pack: $((bytes / 1024 / 1024)) MiB ($bytes bytes; limit $max_packed_mib MiB)"
  if [[ $with_media == 1 ]]; then
    (cd "$out" && sed 's|^|./|' media-files.txt) |
      tar -C "$out" --transform "s|^\.|trainer-bundle|" -cf - -T - | xz -6 -T2 > "$media_pack.tmp"
    mv "$media_pack.tmp" "$media_pack"
    echo "packed $media_pack: $(( $(stat -c %s "$media_pack") / 1024 / 1024 )) MiB (the media module; unpack over the first)"
  fi
  (( bytes <= max_packed_mib * 1024 * 1024 )) ||
    die "$pack is $((bytes / 1024 / 1024)) MiB, over the $max_packed_mib MiB limit" \
        "see which libraries grew: ls -lS $out/lib | head; the media module belongs in the -media archive"
fi
echo "on the GPU node: source $out/bin/trainer-env.sh && mpirun -np 4 trainer train ..."

# Makefile.hpc builds exactly the sources the source rule names (scripts/sources.sh,
# the same rule as CMake's glob): every src/**/*.cpp except main.cpp and cuda/ folders,
# plus cuda/ folders and .cu files only with CUDA=1; media/ folders go into the media
# module (libtrainer_media.so), position-independent. Dry runs only: nothing is compiled.
source "$(dirname "$0")/lib/common.sh"
cd "$REPO"
command -v make >/dev/null || skip "make is not installed"

expected_cpu=$(find src -name '*.cpp' ! -path '*/cuda/*' | LC_ALL=C sort)
expected_gpu=$( { find src -name '*.cpp' -path '*/cuda/*'; [[ -d kernels ]] && find kernels -name '*.cu'; find src -name '*.cu'; } | LC_ALL=C sort)

# What each variant would compile: the source file of every -c command.
compiled() { make -f Makefile.hpc -n -B "$@" | grep -oE -- '-c [^ ]+\.(cpp|cu)' | cut -c4- | LC_ALL=C sort; }
cpu=$(compiled CUDA=0)
gpu=$(compiled CUDA=1 CUDA_HOME=/usr/local/cuda)

[[ "$cpu" == "$expected_cpu" ]] || { diff <(echo "$expected_cpu") <(echo "$cpu") >&2; fail "CUDA=0 sources differ from the rule"; }
[[ "$gpu" == "$(printf '%s\n' "$expected_cpu" "$expected_gpu" | sed '/^$/d' | LC_ALL=C sort)" ]] \
  || fail "CUDA=1 sources differ from the rule"
[[ -z $(comm -12 <(echo "$cpu") <(echo "$expected_gpu" | sed '/^$/d')) ]] || fail "CUDA=0 compiles GPU-only files"
# The object folder is per variant, so switching CUDA=0/1 never mixes objects.
make -f Makefile.hpc -n -B CUDA=0 >"$SCRATCH/dry-run.txt"
grep -q -- '-o obj/cpu/' "$SCRATCH/dry-run.txt" || fail "CPU objects are not in obj/cpu"
media=$(find src -name '*.cpp' -path '*/media/*' | LC_ALL=C sort)
[[ -n "$media" ]] || fail "no media/ sources: the media module would be empty"
for f in $media; do
  grep -qE -- "-fPIC .* -c $f -o obj/media/" "$SCRATCH/dry-run.txt" || fail "$f is not compiled for the media module"
  ! grep -q -- "-c $f -o obj/cpu/" "$SCRATCH/dry-run.txt" || fail "$f is compiled into the program"
done
grep -q -- "-shared .*obj/media/.* -o libtrainer_media.so .*-lopencv_videoio" "$SCRATCH/dry-run.txt" ||
  fail "Makefile.hpc does not link libtrainer_media.so with OpenCV's video I/O"
if git rev-parse --is-inside-work-tree &>/dev/null; then
  { git check-ignore -q obj/cpu/x.o && git check-ignore -q trainer && git check-ignore -q libtrainer_media.so; } ||
    fail "obj/, ./trainer and ./libtrainer_media.so must be git-ignored"
fi
echo "OK: $(echo "$cpu" | wc -l) CPU sources, $(echo "$expected_gpu" | sed '/^$/d' | wc -l) GPU-only sources"

# The unit-test shards of tests/CMakeLists.txt hold every test case exactly once:
#   bash unit_shards.sh UNIT_TESTS FILTER...
# Catch2 counts the cases each filter matches; the counts must add up to the binary's
# own count of (non-hidden) test cases, and no case may match two filters.
set -euo pipefail
binary=$1
shift
# Catch2 v2 exits with the number of cases it listed, so the exit status says nothing.
list() { "$binary" -# "$@" || true; }
names() { list "$@" --list-test-names-only | sed '/^$/d'; }
count() { list "$@" --list-tests | sed -nE 's/^([0-9]+) (matching )?test cases?$/\1/p'; }
total=$(count)
[[ -n $total && $total -gt 0 ]] || { echo "FAIL: no test cases counted in $binary" >&2; exit 1; }
sum=0
all=$(mktemp)
trap 'rm -f "$all"' EXIT
for filter in "$@"; do
  n=$(count "$filter")
  [[ -n $n && $n -gt 0 ]] || { echo "FAIL: the shard $filter holds no test case" >&2; exit 1; }
  echo "shard: $n test cases"
  sum=$((sum + n))
  names "$filter" >> "$all"
done
[[ $sum == "$total" ]] || { echo "FAIL: the shards hold $sum test cases, the binary $total" >&2; exit 1; }
dups=$(sort "$all" | uniq -d)
[[ -z $dups ]] || { echo "FAIL: in more than one shard: $dups" >&2; exit 1; }
echo "unit_shards: $# shards hold all $total test cases once"

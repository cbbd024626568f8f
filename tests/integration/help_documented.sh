# Every option a subcommand's --help lists is documented: it appears in README.md or
# docs/ (an audit found the bench commands' options in --help alone). Configuration
# keys (--section.key) are checked by docs/CONFIG.md's own test.
source "$(dirname "$0")/lib/common.sh"
missing=()
for command in train predict import synth plan "bench step" "bench loader" "bench plans" "bench allreduce"; do
  # shellcheck disable=SC2086  # the two words of "bench step" are two arguments
  help=$("$TRAINER" $command --help 2>&1) || fail "trainer $command --help failed"
  options=$(grep -oE '^  +(-[a-z] \[ )?--[a-z0-9][a-z0-9_.-]*' <<<"$help" | grep -oE -- '--[a-z0-9][a-z0-9_.-]*' |
    grep -vF . | sort -u)
  [[ -n $options ]] || fail "trainer $command --help lists no options"
  for option in $options; do
    [[ $option == --help ]] && continue
    grep -rqF -- "$option" "$REPO/README.md" "$REPO/docs" || missing+=("$command $option")
  done
done
((${#missing[@]} == 0)) || fail "options in --help but in no doc: ${missing[*]}"
echo "every --help option is documented"

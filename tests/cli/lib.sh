# tests/cli/lib.sh - TAP helpers for black-box CLI tests (git t/ style).
# Each script sources this, calls check ... and ends with `done_testing`.
set -u
CUCO=${CUCO_BIN:-$PWD/build/cuco}
ROOT=${CUCO_ROOT:-$PWD}
TMP=$(mktemp -d /tmp/cuco-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
_n=0 _failed=0

# ok NAME: pass; not_ok NAME WHY: fail
ok() { _n=$((_n + 1)); echo "ok $_n - $1"; }
# not_ok NAME WHY: every line of WHY is a "# " line (the runner and CI show
# only those; a multi-line stderr must not lose its error past line 1)
not_ok() {
  _n=$((_n + 1)); _failed=$((_failed + 1)); echo "not ok $_n - $1"
  printf '%s\n' "$2" | sed 's/^/# /'
}

# expect_rc NAME RC CMD...: run CMD, compare its exit status
expect_rc() {
  local name=$1 want=$2; shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  if [ "$rc" -eq "$want" ]; then ok "$name"
  else not_ok "$name" "exit $rc, wanted $want; stderr: $(head -c 300 "$TMP/err")
... $(tail -c 700 "$TMP/err")"; fi
}
# expect_grep NAME FILE PATTERN
expect_grep() {
  if grep -qE -- "$3" "$2"; then ok "$1"
  else not_ok "$1" "'$3' not in $2: $(head -c 500 "$2")"; fi
}
expect_no_grep() {
  if grep -qE -- "$3" "$2"; then not_ok "$1" "'$3' unexpectedly in $2"
  else ok "$1"; fi
}
done_testing() { echo "1..$_n"; [ "$_failed" -eq 0 ]; }

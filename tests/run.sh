#!/bin/bash
# Run every test that needs no GPU and end with "N passed, N failed".
# Unit tests (cmocka) and CLI scripts all speak TAP; a test program that
# crashes or prints no result counts as one failure.
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CUCO_ROOT="$ROOT" CUCO_BIN="$ROOT/$BUILD/cuco" BUILD
export CMOCKA_MESSAGE_OUTPUT=TAP
pass=0 fail=0
failed_names=()
LOGDIR="$ROOT/$BUILD/test-logs"
mkdir -p "$LOGDIR"

count() { # name, logfile, exit status
  local name=$1 log=$2 rc=$3 p f
  p=$(grep -cE '^ok ' "$log")
  f=$(grep -cE '^not ok ' "$log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  pass=$((pass + p)); fail=$((fail + f))
  if [ "$f" -ne 0 ]; then
    failed_names+=("$name")
    echo "FAIL $name (log: $log)"
    grep -E '^not ok |^# ' "$log" | head -20
  else
    echo "ok   $name ($p)"
  fi
}

for t in "$ROOT/$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  n=$(basename "$t"); log="$LOGDIR/$n.log"
  (cd "$ROOT" && timeout 600 "$t") >"$log" 2>&1; rc=$?
  count "$n" "$log" $rc
done
for t in "$ROOT"/tests/cli/t[0-9]*.sh; do
  [ -f "$t" ] || continue
  n=$(basename "$t" .sh); log="$LOGDIR/$n.log"
  (cd "$ROOT" && timeout 1800 bash "$t") >"$log" 2>&1; rc=$?
  count "$n" "$log" $rc
done
# the failures again at the end: CI shows the tail of this output
for n in "${failed_names[@]}"; do
  echo "failed: $n"
  grep -E '^not ok |^# ' "$LOGDIR/$n.log" | head -8 | cut -c1-300
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

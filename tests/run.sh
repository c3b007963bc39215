#!/bin/bash
# Run every test that needs no GPU and end with "N passed, N failed".
# Unit tests (cmocka) and CLI scripts all speak TAP; a test program that
# crashes or prints no result counts as one failure.
#
# Tests run in parallel: TEST_JOBS, else make's -jN (MAKEFLAGS), else one
# per CPU.  A line per test as it ends ([done/total], result, seconds), the
# slowest tests and the failures again at the end.  Each test's own output
# is in $BUILD/test-logs/NAME.log; the times of the last run order the next
# one (longest first, so the long tests do not start last).
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CUCO_ROOT="$ROOT" CUCO_BIN="$ROOT/$BUILD/cuco" BUILD
# the sandbox's helper for the unit tests' binaries (cuco finds it beside
# itself)
export CUCO_CONFINE="$ROOT/$BUILD/cuco-confine"
export CMOCKA_MESSAGE_OUTPUT=TAP
LOGDIR="$ROOT/$BUILD/test-logs"
mkdir -p "$LOGDIR"
# One object cache for the whole run (src/objcache.c): cuco eval's builds
# and the tests' own nvcc commands (`cuco cc`, tests/cli/lib.sh) compile a
# translation unit once per run and share it.  Fresh each run, so every
# file is still compiled by this run (TEST_KEEP_CACHE=1 keeps it).  Tests
# that need a cache of their own set CUCO_CACHE_DIR themselves.
export CUCO_TEST_CACHE=${CUCO_TEST_CACHE:-$ROOT/$BUILD/test-cache}
[ "${TEST_KEEP_CACHE:-0}" = 1 ] || rm -rf "$CUCO_TEST_CACHE"
mkdir -p "$CUCO_TEST_CACHE" && chmod 700 "$CUCO_TEST_CACHE"
export CUCO_CACHE_DIR=$CUCO_TEST_CACHE
rm -f "$LOGDIR"/*.cc # each test's compile log: NAME.cc (run_one)

# python3 reached through a version manager's shim (pyenv's is a bash
# script that runs `pyenv exec`: 0.37 s a call on the 2-core dev machine,
# against 0.03 s for the interpreter itself) is resolved once, here: the
# tests find the very interpreter the shim picks first on PATH.  A run
# starts python3 some 470 times (cuco's NCCL probe in every cuco eval, the
# tests' JSON checks), so the shim alone cost ~170 s of CPU (issue 27).
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || py=
if [ -n "$py" ] && [ -x "$py" ] && [ "$(command -v python3)" != "$py" ]; then
  mkdir -p "$ROOT/$BUILD/test-bin"
  ln -sfn "$py" "$ROOT/$BUILD/test-bin/python3"
  export PATH="$ROOT/$BUILD/test-bin:$PATH"
fi

# malloc's arenas on transparent huge pages (glibc >= 2.35; older ones
# ignore the name): on a VM where a page fault is dear (the 2-core dev
# machine, a Firecracker VM), an nvcc compile takes ~200k minor faults, 1.4 s of
# its ~6 s in the kernel; with this 117k and ~8% less time.  Only where THP
# is "madvise" or "always"; a user's own tunables are kept.
if grep -qE '\[(madvise|always)\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
  export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1"
fi

# Without a working bubblewrap cuco refuses to run candidates unless told
# (issue 47): the suite then runs them unconfined, said here; t1203 and
# t1206 test the refusal itself.
if [ -z "${CUCO_SANDBOX:-}" ] &&
  ! bwrap --unshare-all --unshare-user --ro-bind / / --dev /dev --proc /proc true 2>/dev/null; then
  echo "note: bubblewrap cannot run here: the tests run candidates with CUCO_SANDBOX=none"
  export CUCO_SANDBOX=none
fi

jobs=${TEST_JOBS:-}
if [ -z "$jobs" ]; then
  for w in ${MAKEFLAGS:-}; do
    case $w in
    -j[0-9]*) jobs=${w#-j} ;;
    --jobs=[0-9]*) jobs=${w#--jobs=} ;;
    esac
  done
fi
case $jobs in '' | *[!0-9]* | 0) jobs=$(nproc 2>/dev/null || echo 2) ;; esac

# Tests that read what another one writes run after it: t1201 links the
# objects t0601 compiles into $BUILD/cuda.
declare -A after=([t1201-harden]=t0601-cuda-compile)

declare -A cmd limit prev
names=()
for t in "$ROOT/$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  n=$(basename "$t"); names+=("$n"); cmd[$n]=$t; limit[$n]=600
done
for t in "$ROOT"/tests/cli/t[0-9]*.sh; do
  [ -f "$t" ] || continue
  n=$(basename "$t" .sh); names+=("$n"); cmd[$n]="bash $t"; limit[$n]=1800
done
# TEST_FILTER=REGEX runs only the tests whose names match
if [ -n "${TEST_FILTER:-}" ]; then
  mapfile -t names < <(printf '%s\n' "${names[@]}" | grep -E -- "$TEST_FILTER")
fi
# the last run's times, else the committed ones (a clean clone, as CI)
times=$LOGDIR/times.txt
[ -f "$times" ] || times=$ROOT/tests/times.txt
if [ -f "$times" ]; then
  while read -r s n; do [[ $s == \#* ]] || prev[$n]=$s; done <"$times"
fi
# longest first by the last run's times (unknown ones first of all)
mapfile -t names < <(for n in "${names[@]}"; do
  printf '%s %s\n' "${prev[$n]:-100000}" "$n"; done | sort -k1,1nr -k2 | cut -d' ' -f2)

total=${#names[@]} done_n=0 pass=0 fail=0 t_start=$EPOCHREALTIME
failed_names=()
declare -A pid_of state took cpu_of
echo "running $total tests, $jobs at a time and one that mostly waits beside them (logs: $LOGDIR)"

run_one() { # name: the test, its log, then NAME.rc = "STATUS SECONDS"
  local n=$1 t0=$EPOCHREALTIME rc
  # shellcheck disable=SC2086
  (cd "$ROOT" && CUCO_CC_LOG=$LOGDIR/$n.cc exec timeout "${limit[$n]}" ${cmd[$n]}) >"$LOGDIR/$n.log" 2>&1
  rc=$?
  # this subshell's children's CPU time (user and system): what the test
  # cost the machine, beside how long it took
  # ($(times) would run in a fork, whose children's times start at zero)
  local cpu
  times >"$LOGDIR/$n.times"
  cpu=$(tail -1 "$LOGDIR/$n.times")
  rm -f "$LOGDIR/$n.times"
  awk -v rc="$rc" -v a="$t0" -v b="$EPOCHREALTIME" -v c="$cpu" 'BEGIN {
    n = split(c, f, /[ ms]+/); cs = f[1] * 60 + f[2] + f[3] * 60 + f[4]
    printf "%d %.2f %.1f\n", rc, b - a, cs }' >"$LOGDIR/$n.rc"
}

finish() { # name: count its TAP lines and print its line
  local n=$1 log=$LOGDIR/$1.log rc s p f
  read -r rc s c <"$LOGDIR/$n.rc"
  p=$(grep -cE '^ok ' "$log")
  # cmocka reports a skipped test as "not ok N # SKIP": a skip, not a failure
  f=$(grep -E '^not ok ' "$log" | grep -cvE '^not ok [0-9]+ *-? *[^#]*# *SKIP')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  pass=$((pass + p)); fail=$((fail + f)); done_n=$((done_n + 1))
  took[$n]=$s; cpu_of[$n]=${c:-?}; state[$n]=done
  if [ "$f" -ne 0 ]; then
    failed_names+=("$n")
    printf '[%d/%d] FAIL %s (%d passed, %d failed) %.1f s (log: %s)\n' \
      "$done_n" "$total" "$n" "$p" "$f" "$s" "$log"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      # timeout(1) ended it: say so, with its deadline and where it was
      printf '  %s: timed out after its deadline of %s s; the last lines of its log:\n' \
        "$n" "${limit[$n]}"
      tail -n 12 "$log" | sed 's/^/  | /'
    else
      grep -E '^not ok |^# ' "$log" | head -20
    fi
  else
    printf '[%d/%d] ok   %s (%d) %.1f s\n' "$done_n" "$total" "$n" "$p" "$s"
  fi
}

ready() { # name: not started and what it waits for has ended
  local d=${after[$1]:-}
  [ -z "${state[$1]:-}" ] && { [ -z "$d" ] || [ -z "${cmd[$d]:-}" ] ||
    [ "${state[$d]:-}" = done ]; }
}

# Tests that mostly wait (a Slurm cluster's daemons and time limits: 220 s
# of wall for 51 s of CPU in CI) run in one slot of their own beside the
# CPU-bound ones, so that their waiting does not hold a core.
declare -A light=([t1401-cluster]=1)
running=0 running_light=0
while [ "$done_n" -lt "$total" ]; do
  for n in "${names[@]}"; do
    ready "$n" || continue
    if [ -n "${light[$n]:-}" ]; then
      [ "$running_light" -lt 1 ] || continue
      running_light=$((running_light + 1))
    else
      [ "$running" -lt "$jobs" ] || continue
      running=$((running + 1))
    fi
    run_one "$n" &
    pid_of[$!]=$n; state[$n]=running
  done
  wait -n -p pid "${!pid_of[@]}"
  n=${pid_of[$pid]:-}
  [ -n "$n" ] || continue
  unset "pid_of[$pid]"
  if [ -n "${light[$n]:-}" ]; then running_light=$((running_light - 1)); else running=$((running - 1)); fi
  finish "$n"
done

{
  for n in "${names[@]}"; do printf '%s %s\n' "${took[$n]}" "$n"; done
  # keep the times of the tests a filtered run left out
  for n in "${!prev[@]}"; do [ -n "${took[$n]:-}" ] || printf '%s %s\n' "${prev[$n]}" "$n"; done
} | sort -k1,1nr >"$LOGDIR/times.txt.new" && mv "$LOGDIR/times.txt.new" "$LOGDIR/times.txt"
# wall and CPU seconds of every test of this run, longest first
for n in "${names[@]}"; do printf '%s %s %s\n' "${took[$n]}" "${cpu_of[$n]}" "$n"; done |
  sort -k1,1nr >"$LOGDIR/cpu.txt"
cc_note() { # name: what its nvcc commands did, from NAME.cc
  [ -s "$LOGDIR/$1.cc" ] || return 0
  awk '{ n[$1]++; t[$1] += $2 } END {
    printf " (nvcc: %d compiled in %.0f s, %d from the cache%s)", n["miss"] + n["fail"],
      t["miss"] + t["fail"], n["hit"], n["uncached"] ? sprintf(", %d not cacheable", n["uncached"]) : "" }' "$LOGDIR/$1.cc"
}
echo "slowest:"
for n in "${names[@]}"; do printf '%s %s\n' "${took[$n]}" "$n"; done |
  sort -k1,1nr | head -8 | while read -r s n; do
    printf '  %7.1f s  %s (cpu %s s)%s\n' "$s" "$n" "${cpu_of[$n]}" "$(cc_note "$n")"; done
# what the shared object cache saved (the log of cuco cc and of cuco
# eval's builds)
cat "$LOGDIR"/*.cc 2>/dev/null | awk '{ n[$1]++; t[$1] += $2 } END {
  if (n["miss"] + n["hit"] + n["fail"] + n["uncached"] > 0)
    printf "nvcc (cuco cc and cuco eval builds): %d compiled (%.0f s), %d from the cache, %d failed (%.0f s), %d uncached\n",
      n["miss"], t["miss"], n["hit"], n["fail"], t["fail"], n["uncached"] }'
# the failures again at the end: CI shows the tail of this output
for n in "${failed_names[@]}"; do
  echo "failed: $n"
  grep -E '^not ok |^# ' "$LOGDIR/$n.log" | head -8 | cut -c1-300
done
# the run's wall time and the CPU its tests used (cpu.txt has each)
awk -v a="$t_start" -v b="$EPOCHREALTIME" '{ c += $2 } END {
  printf "wall %.0f s for the tests, their CPU %.0f s\n", b - a, c }' "$LOGDIR/cpu.txt"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

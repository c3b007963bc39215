#!/bin/bash
# Interrupting `cuco evolve` and resuming it.  SIGTERM to its whole
# process group mid-candidate (what a batch system or `kill -TERM -PGID`
# does): the candidate in flight is recorded "interrupted", not failed
# (before, the signal reached its build or nm and it was "failed"), the
# stop line names the exact command with --resume, and `--resume` without
# any other option evaluates it again and ends the run at its recorded
# length (before, the default 10 generations replaced the run's 6).  An
# override is said in the resume line and kept; a setting the run
# measured with is refused.  SIGINT (Ctrl-C) to cuco alone and SIGHUP:
# the same, and the printed command, run as printed, continues the run.
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$TMP/slow
cd "$TMP" || exit 1
# The landscape fixture with candidates that take a while to run (a busy
# loop in the frozen main, five bench runs), so a signal lands inside one.
mkdir -p "$WL"
python3 - "$ROOT/tests/data/evolve/landscape/seed.c" "$WL/seed.c" <<'PY'
import sys
src = open(sys.argv[1]).read()
busy = "  { volatile double w = 0; long b; for (b = 0; b < 30000000L; b++) w += 1e-9; }\n"
src = src.replace("  got = kernel(x, (int)n);\n", busy + "  got = kernel(x, (int)n);\n", 1)
open(sys.argv[2], "w").write(src)
PY
sed -e 's/^repeat = 1$/repeat = 5/' "$ROOT/tests/data/evolve/landscape/workload.ini" >"$WL/workload.ini"
grep -q 'volatile double w' "$WL/seed.c" && grep -q '^repeat = 5' "$WL/workload.ini" &&
  ok "the slow fixture is made" || not_ok "the slow fixture is made" "$(cat "$WL/workload.ini")"
printf '[evolve]\nconfirm = 0\n' >"$TMP/c.ini"

# start_run OUT EXTRA...: cuco evolve in a process group of its own (setsid:
# a signal to the group reaches cuco and its supervisors, not this script)
start_run() {
  local out=$1; shift
  setsid "$CUCO" --config "$TMP/c.ini" evolve "$WL" --llm none --islands 1 \
    --seed 3 --out "$out" "$@" >"$out.log" 2>"$out.err" &
  PID=$!
}
# wait_mid OUT N: until N candidates passed and one is being evaluated
wait_mid() {
  local i ok_n run_n
  for i in $(seq 1 1200); do
    ok_n=$(sqlite3 "$1/run.db" "select count(*) from programs where status = 'ok' and edit_kind = 'tune'" 2>/dev/null)
    run_n=$(sqlite3 "$1/run.db" "select count(*) from programs where status = 'running'" 2>/dev/null)
    [ "${ok_n:-0}" -ge "$2" ] && [ "${run_n:-0}" -ge 1 ] && return 0
    kill -0 "$PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# 1. SIGTERM to the whole process group, mid-candidate
OUT=$TMP/run
start_run "$OUT" --generations 6
if wait_mid "$OUT" 2; then
  sleep 0.2 # well inside the candidate's build or runs
  inflight=$(sqlite3 "$OUT/run.db" "select id from programs where status = 'running'")
  kill -TERM -- "-$PID"
  ok "SIGTERM sent to the group while #$inflight was evaluated"
else
  inflight=
  kill -TERM -- "-$PID" 2>/dev/null
  not_ok "a candidate was in flight" "$(tail -3 "$OUT.log")"
fi
wait "$PID"
rc=$?
t_stop=$(date +%s.%N)
q() { sqlite3 -cmd ".timeout 5000" "$OUT/run.db" "$1"; }
[ "$rc" = 1 ] && ok "the stopped run exits 1" || not_ok "the stopped run exits 1" "exit $rc"
got=$(q "select status || ' ' || coalesce(stage, '') || ' ' || coalesce(error, '') from programs where id = ${inflight:-0}")
[[ $got =~ ^interrupted\ [a-z]+\ interrupted\ by\ SIGTERM\ to\ cuco$ ]] &&
  ok "the in-flight candidate is recorded interrupted ($got)" ||
  not_ok "the in-flight candidate is recorded interrupted" "#$inflight: $got"
[ "$(q "select count(*) from programs where status = 'failed'")" = 0 ] &&
  ok "no candidate is failed by the signal" ||
  not_ok "no candidate is failed by the signal" "$(q "select id, stage, error from programs where status = 'failed'")"
[ "$(q "select status from runs")" = interrupted ] && ok "the run is interrupted" ||
  not_ok "the run is interrupted" "$(q 'select status from runs')"
expect_grep "the progress line says interrupted" "$OUT.log" "#$inflight .* interrupted .*evaluated again on --resume"
expect_grep "the stop line names the exact command with --resume" "$OUT.err" \
  "^cuco evolve: stopped by SIGTERM; 1 candidate \(#$inflight\) recorded as interrupted; continue the run with: $CUCO --config $TMP/c.ini evolve $WL --llm none --islands 1 --seed 3 --out $OUT --generations 6 --resume$"
expect_grep "the summary counts it apart" "$OUT.log" "^candidates: .* 1 interrupted"
expect_grep "the report counts it apart" <("$CUCO" report "$OUT/run.db" --format md) \
  "\| candidates \| [0-9]+: .* 1 interrupted,"

# --resume alone: the interrupted candidate again, and the run's 6
# generations (seed + 6 candidates), its settings as recorded
expect_rc "--resume alone finishes the run" 0 "$CUCO" --config "$TMP/c.ini" evolve "$WL" --out "$OUT" --resume
cp "$TMP/out" "$TMP/resume.out"
expect_grep "resume says where and that the settings are the recorded ones" "$TMP/resume.out" \
  "^resuming run 1: generation [1-6] of 6, settings as recorded; [0-9]+ programs, 1 to evaluate again$"
expect_grep "... offline, as recorded" "$TMP/resume.out" "^cuco evolve landscape: 1 islands x 6 generations, .*proposer: offline tuner"
got=$(q "select status || ' ' || (finished_at > $t_stop) from programs where id = ${inflight:-0}")
[ "$got" = "ok 1" ] && ok "the interrupted candidate was evaluated again (#$inflight ok)" ||
  not_ok "the interrupted candidate was evaluated again" "#$inflight: $got"
[ "$(q "select count(*) from programs where edit_kind <> 'migrate'")" = 7 ] &&
  ok "the run ends at its recorded length (seed + 6)" ||
  not_ok "the run ends at its recorded length (seed + 6)" "$(q 'select id, generation, status from programs')"
[ "$(q "select status from runs")" = done ] && ok "the run is done" || not_ok "the run is done" "$(q 'select status from runs')"

# an override is said and kept; what the run measured with is not changed
expect_rc "--resume --generations 8" 0 "$CUCO" --config "$TMP/c.ini" evolve "$WL" --out "$OUT" --resume --generations 8
expect_grep "the override is said in the resume line" "$TMP/out" \
  "^resuming run 1: generation 6 of 6, settings as recorded; --generations 8 overrides 6; "
[ "$(q "select count(*) from programs where edit_kind <> 'migrate'")" = 9 ] &&
  ok "8 generations now (seed + 8)" || not_ok "8 generations now" "$(q 'select count(*) from programs')"
expect_rc "a later --resume keeps the override: nothing to do" 0 "$CUCO" --config "$TMP/c.ini" evolve "$WL" --out "$OUT" --resume
expect_grep "... it had finished" "$TMP/out" "already finished, nothing to resume"
expect_rc "--resume --islands 2 is refused" 2 "$CUCO" --config "$TMP/c.ini" evolve "$WL" --out "$OUT" --resume --islands 2
expect_grep "... naming both values" "$TMP/err" \
  "^cuco evolve: --islands 2: the run in $OUT was recorded with islands 1 and --resume keeps it; start a new run \(another --out\) to change it$"

# 2. SIGINT (Ctrl-C) to cuco alone: the same, and the printed command works
OUT2=$TMP/run2
start_run "$OUT2" --generations 4
wait_mid "$OUT2" 1 && sleep 0.2
kill -INT "$PID"
wait "$PID"
rc=$?
[ "$rc" = 1 ] && ok "Ctrl-C: exits 1" || not_ok "Ctrl-C: exits 1" "exit $rc"
expect_grep "Ctrl-C: the message names --resume" "$OUT2.err" \
  "^cuco evolve: stopped by SIGINT \(Ctrl-C\); .*continue the run with: .* --resume$"
n=$(sqlite3 "$OUT2/run.db" "select count(*) from programs where status = 'interrupted'")
[ "$n" = 1 ] && ok "Ctrl-C: the candidate in flight is interrupted" ||
  not_ok "Ctrl-C: the candidate in flight is interrupted" "$(sqlite3 "$OUT2/run.db" 'select id, status, error from programs')"
cmd=$(sed -n 's/^cuco evolve: stopped by .*; continue the run with: //p' "$OUT2.err")
expect_rc "the printed command, as printed, continues the run" 0 bash -c "$cmd"
[ "$(sqlite3 "$OUT2/run.db" "select count(*) || ' ' || sum(status = 'ok') from programs where edit_kind <> 'migrate'")" = "5 5" ] &&
  ok "... to its 4 generations, all evaluated" ||
  not_ok "... to its 4 generations" "$(sqlite3 "$OUT2/run.db" 'select id, status from programs')"

# 3. SIGHUP (an ended salloc) to the group: interrupted too
OUT3=$TMP/run3
start_run "$OUT3" --generations 4
wait_mid "$OUT3" 1 && sleep 0.2
kill -HUP -- "-$PID"
wait "$PID"
expect_grep "SIGHUP: the stop line" "$OUT3.err" "^cuco evolve: stopped by SIGHUP; 1 candidate \(#[0-9]+\) recorded as interrupted; "
[ "$(sqlite3 "$OUT3/run.db" "select group_concat(status) from programs where status not in ('ok')")" = interrupted ] &&
  ok "SIGHUP: the candidate in flight is interrupted, nothing failed" ||
  not_ok "SIGHUP: interrupted" "$(sqlite3 "$OUT3/run.db" 'select id, status, error from programs')"
done_testing

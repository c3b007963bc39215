#!/bin/bash
# Build-ahead (issue 26): with [evolve] build_ahead = 1 and one evaluation
# slot, a second worker checks and builds its candidate while the slot runs
# another's, and the runs still take turns.  The landscape fixture's program
# spins 0.3 s per run (one verify and one bench run per candidate), so a
# candidate holds the slot for >= 0.6 s.  In the database, some candidates'
# [started_at, finished_at] overlap (one was built during another's runs);
# any two that overlap finished >= 0.5 s apart (their runs did not).  With
# build_ahead = 0 no two overlap.  The start line names the extra worker.
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$TMP/slow
mkdir -p "$WL"
cp "$ROOT/tests/data/evolve/landscape/workload.ini" "$WL/"
# frozen text: every run of every candidate waits 0.3 s first (a spin:
# the allowlist refuses nanosleep)
sed -e 's/^#include <string.h>$/&\n#include <time.h>/' \
  -e 's/^  int i, ok;$/&\n  struct timespec t0, t1;\n\n  clock_gettime(CLOCK_MONOTONIC, \&t0); \/* a slow run on purpose *\/\n  do\n    clock_gettime(CLOCK_MONOTONIC, \&t1);\n  while ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec) < 3e8);/' \
  "$ROOT/tests/data/evolve/landscape/seed.c" >"$WL/seed.c"
grep -q 'while ((t1.tv_sec' "$WL/seed.c" && ok "the slow fixture is made" ||
  not_ok "the slow fixture is made" "$(sed -n 50,62p "$WL/seed.c")"

# run NAME AHEAD: an evolve run of 6 candidates, then its program intervals
run() {
  printf '[evolve]\nconfirm = 0\nbuild_ahead = %s\n' "$2" >"$TMP/$1.ini"
  expect_rc "$1: evolve succeeds" 0 "$CUCO" --config "$TMP/$1.ini" evolve "$WL" \
    --llm none --generations 5 --islands 1 --seed 3 --out "$TMP/$1"
  cp "$TMP/out" "$TMP/$1.out"
  # pairs whose intervals overlap, and the closest finish among them
  sqlite3 "$TMP/$1/run.db" "select count(*), coalesce(min(abs(a.finished_at - b.finished_at)), -1)
    from programs a join programs b on a.id < b.id
    where a.started_at < b.finished_at and b.started_at < a.finished_at
      and a.status = 'ok' and b.status = 'ok'" >"$TMP/$1.pairs"
}
run ahead 1
expect_grep "ahead: the start line names the worker building ahead" "$TMP/ahead.out" \
  "^cuco evolve landscape: 1 islands x 5 generations, 1 evaluation slot \(\+1 building ahead\),"
n=$(sqlite3 "$TMP/ahead/run.db" "select count(*) from programs where status = 'ok'")
[ "$n" -ge 5 ] && ok "ahead: the candidates were evaluated ($n ok)" ||
  not_ok "ahead: the candidates were evaluated" "$n ok: $(cat "$TMP/ahead.out")"
IFS='|' read -r pairs gap <"$TMP/ahead.pairs"
[ "${pairs:-0}" -ge 1 ] && ok "ahead: a candidate was built during another's runs ($pairs pairs)" ||
  not_ok "ahead: a candidate was built during another's runs" "$(cat "$TMP/ahead.pairs")"
awk -v g="${gap:--1}" 'BEGIN { exit !(g >= 0.5) }' &&
  ok "ahead: overlapping candidates' runs took turns (closest finishes ${gap} s apart)" ||
  not_ok "ahead: overlapping candidates' runs took turns" "closest finishes $gap s apart"

run serial 0
expect_grep "serial: no extra worker" "$TMP/serial.out" \
  "^cuco evolve landscape: 1 islands x 5 generations, 1 evaluation slot, "
IFS='|' read -r pairs gap <"$TMP/serial.pairs"
[ "${pairs:-1}" = 0 ] && ok "serial: no two candidates overlap" ||
  not_ok "serial: no two candidates overlap" "$(cat "$TMP/serial.pairs")"

# a bad value is a config error naming it
printf '[evolve]\nbuild_ahead = 7\n' >"$TMP/bad.ini"
expect_rc "build_ahead = 7 is refused" 1 "$CUCO" --config "$TMP/bad.ini" evolve "$WL" \
  --llm none --generations 1 --islands 1 --out "$TMP/bad"
expect_grep "... naming the key" "$TMP/err" "build_ahead"
done_testing

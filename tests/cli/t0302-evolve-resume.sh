#!/bin/bash
# kill -9 in the middle of a run, then --resume: every candidate is
# evaluated exactly once (no row lost, none duplicated, none unfinished).
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$ROOT/tests/data/evolve/landscape
OUT=$TMP/run
cd "$TMP" || exit 1
q() { sqlite3 -cmd ".timeout 5000" "$OUT/run.db" "$1" 2>/dev/null; }

"$CUCO" evolve "$WL" --llm none --generations 8 --islands 2 --seed 3 \
  --out "$OUT" >"$TMP/first.out" 2>&1 &
pid=$!
# wait until a few candidates are done and one is being evaluated
killed=0
for i in $(seq 1 600); do
  done_n=$(q "select count(*) from programs where status = 'ok' and edit_kind = 'tune'")
  running=$(q "select count(*) from programs where status in ('pending','running')")
  if [ "${done_n:-0}" -ge 4 ] && [ "${running:-0}" -ge 1 ]; then
    kill -9 "$pid" && killed=1
    break
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
wait "$pid" 2>/dev/null
[ "$killed" = 1 ] && ok "killed mid-run with kill -9" ||
  not_ok "killed mid-run with kill -9" "the run ended first: $(tail -3 "$TMP/first.out")"
before=$(q "select count(*) from programs where status in ('pending','running')")
[ "${before:-0}" -ge 1 ] && ok "the kill left an unfinished row ($before)" ||
  not_ok "the kill left an unfinished row" "none"
[ "$(q "select status from runs")" = running ] && ok "run still marked running" ||
  not_ok "run still marked running" "$(q 'select status from runs')"
unfinished_ids=$(q "select group_concat(id) from programs where status in ('pending','running')")

expect_rc "--resume finishes the run" 0 "$CUCO" evolve "$WL" --llm none \
  --generations 8 --islands 2 --seed 3 --out "$OUT" --resume
cp "$TMP/out" "$TMP/resume.out"
expect_grep "resume says what it picked up" "$TMP/resume.out" \
  "^resuming run 1: generation [0-9]+ of 8, settings as recorded; [0-9]+ programs, [1-9][0-9]* to evaluate again$"
[ "$(q "select count(*) from programs where status in ('pending','running')")" = 0 ] &&
  ok "no unfinished rows after resume" || not_ok "no unfinished rows" "$(q 'select id,status from programs')"
[ "$(q "select count(*) from programs where edit_kind <> 'migrate'")" = 17 ] &&
  ok "17 candidate rows (seed + 2 x 8): none lost, none duplicated" ||
  not_ok "17 candidate rows" "$(q 'select id, island, generation, edit_kind, status from programs')"
[ "$(q "select count(*) from (select island, generation from programs where edit_kind not in ('migrate', 'seed') group by island, generation having count(*) <> 1)")" = 0 ] &&
  ok "exactly one candidate per island and generation" ||
  not_ok "one candidate per island and generation" "$(q 'select island, generation, count(*) from programs group by 1, 2')"
[ "$(q "select count(*) from (select island, generation from programs where edit_kind not in ('migrate', 'seed') group by island, generation)")" = 16 ] &&
  ok "every generation of both islands present" || not_ok "every generation present" "$(q 'select island, generation from programs')"
[ "$(q "select count(*) from (select code_hash from programs where edit_kind <> 'migrate' group by code_hash having count(*) > 1)")" = 0 ] &&
  ok "no configuration evaluated twice" || not_ok "no configuration evaluated twice" "dups"
[ "$(q "select count(*) from programs where id in ($unfinished_ids) and status = 'ok' and finished_at is not null")" = "$(echo "$unfinished_ids" | tr ',' '\n' | wc -l)" ] &&
  ok "the interrupted rows were evaluated on resume" ||
  not_ok "interrupted rows evaluated" "$(q "select id, status from programs where id in ($unfinished_ids)")"
[ "$(q "select status from runs")" = done ] && ok "run status done" ||
  not_ok "run status done" "$(q 'select status from runs')"
expect_grep "summary after resume" "$TMP/resume.out" "^candidates: 17 \(17 correct"

# resuming the finished run: says so, runs nothing, and its wall time is
# the run's (started_at to finished_at, what the report shows), not 0.0 s
before=$(q "select count(*) from programs")
expect_rc "--resume of a finished run exits 0" 0 "$CUCO" evolve "$WL" --llm none \
  --generations 8 --islands 2 --seed 3 --out "$OUT" --resume
expect_grep "it says the run had already finished" "$TMP/out" "^== cuco evolve landscape: already finished, nothing to resume ==$"
[ "$(q "select count(*) from programs")" = "$before" ] && ok "nothing was added" || not_ok "nothing was added" "$(q "select count(*) from programs") rows"
want=$(q "select printf('%.1f s', finished_at - started_at) from runs")
expect_grep "the wall time is the run's ($want)" "$TMP/out" "; wall $want$"
expect_no_grep "not 0.0 s" "$TMP/out" "wall 0\.0 s"
done_testing

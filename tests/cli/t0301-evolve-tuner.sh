#!/bin/bash
# cuco evolve with the offline tuner on the landscape fixture: the run
# completes, every candidate is a row, the known optimum (order=b tile=32
# unroll=4, cost 1.0) is found within 20 evaluations (seed included), and
# bad invocations fail cleanly; 3 evaluation slots keep the guarantees.
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$ROOT/tests/data/evolve/landscape
OUT=$TMP/run
cd "$TMP" || exit 1

expect_rc "tuner run succeeds" 0 "$CUCO" evolve "$WL" --llm none \
  --generations 10 --islands 2 --seed 1 --out "$OUT"
cp "$TMP/out" "$TMP/run.out"
expect_grep "one progress line per candidate" "$TMP/run.out" \
  "^\[ *20/21\] #[0-9]+ +gen 10 +island [01] tune"
expect_grep "summary has the seed" "$TMP/run.out" "^seed +2\.5 "
expect_grep "summary has the best at 1.0 (2.5x the seed, confirmed)" "$TMP/run.out" \
  "^best +1 +0 +2\.500x .*; confirmed, 95% CI \[2\.5, 2\.5\]\) -> $OUT/best\.c$"
expect_grep "summary counts candidates" "$TMP/run.out" \
  "^candidates: 21 \(21 correct, 0 failed, 0 rejected"
expect_grep "best directives printed" "$TMP/run.out" \
  '"order":"b","tile":32,"unroll":4'
expect_grep "best.c holds the optimum" "$OUT/best.c" "^// CUCO-PARAM tile=32$"
# the workload has no baseline: the seed is what speedups are against, and
# nothing speaks of a bar
expect_grep "the best is confirmed with an interval, against the seed" "$TMP/run.out" \
  "^confirmed best #[0-9]+: 2\.5x the seed, 95% CI \[2\.5, 2\.5\] \(3 rounds\)"
expect_grep "the confirmed figure is the summary's headline" "$TMP/run.out" \
  "^speedup: best #[0-9]+: 2\.5x the seed, 95% CI \[2\.5, 2\.5\], confirmed over 3 rounds$"
expect_no_grep "no bar where the workload has none" "$TMP/run.out" "the bar|^bar "
bid=$(sqlite3 "$OUT/run.db" "select best_program_id from runs")
expect_grep "best.c's header says the headline" "$OUT/best.c" \
  "^// cuco evolve run 1 \(landscape\): best #$bid: 2\.5x the seed, 95% CI \[2\.5, 2\.5\], confirmed over 3 rounds$"
expect_rc "best.c with its header passes as a candidate" 0 "$CUCO" eval "$WL" \
  --candidate "$OUT/best.c" --static-only
expect_grep "contenders are compared paired" "$TMP/run.out" \
  "^  #[0-9]+ vs #[0-9]+: 1\.[0-9]+ of its time, 95% CI .* over 3 rounds: slower"
q() { sqlite3 "$OUT/run.db" "$1"; }
[ "$(q "select count(*) from confirmations where verdict = 'slower'")" = 2 ] &&
  [ "$(q "select program_id = (select best_program_id from runs) from confirmations where versus = 'seed' and verdict = 'best'")" = 1 ] &&
  [ "$(q "select count(*) from confirmations where versus = 'bar'")" = 0 ] &&
  ok "confirmations stored (2 contenders, the best against the seed, no bar row)" ||
  not_ok "confirmations stored" "$(q 'select * from confirmations')"
[ "$(q "select status from runs")" = done ] && ok "run status done" ||
  not_ok "run status done" "$(q 'select status from runs')"
[ "$(q "select count(*) from programs where edit_kind <> 'migrate'")" = 21 ] &&
  ok "21 candidate rows (seed + 2 x 10)" ||
  not_ok "21 candidate rows" "$(q 'select count(*) from programs')"
[ "$(q "select count(*) from programs where status in ('pending','running')")" = 0 ] &&
  ok "no unfinished rows" || not_ok "no unfinished rows" "$(q 'select id,status from programs')"
[ "$(q "select count(*) from (select code_hash from programs where edit_kind <> 'migrate' group by code_hash having count(*) > 1)")" = 0 ] &&
  ok "no configuration evaluated twice" ||
  not_ok "no configuration evaluated twice" "$(q 'select code_hash, count(*) from programs group by code_hash')"
first=$(q "select count(*) from programs where edit_kind <> 'migrate' and id <= (select min(id) from programs where median_ms = 1.0)")
if [ -n "$first" ] && [ "$first" -ge 1 ] && [ "$first" -le 20 ]; then
  ok "optimum reached within 20 evaluations (at $first)"
else
  not_ok "optimum reached within 20 evaluations" "first at '$first'"
fi
[ "$(q "select count(*) from programs where edit_kind = 'migrate'")" -ge 2 ] &&
  ok "islands exchanged programs by copy" || not_ok "migration" "$(q 'select id, island, edit_kind from programs')"
[ "$(q "select count(*) from meta_summaries")" -ge 2 ] &&
  ok "meta summaries written" || not_ok "meta summaries written" "none"
expect_grep "a summary names what paid" <(q "select text from meta_summaries order by id desc limit 1") \
  "order=b: "
[ "$(q "select best_program_id = (select min(id) from programs where median_ms = 1.0) from runs")" = 1 ] &&
  ok "runs.best_program_id is the optimum" || not_ok "runs.best_program_id" "$(q 'select * from runs')"

# three evaluation slots (threads): same guarantees
expect_rc "3 slots run succeeds" 0 "$CUCO" evolve "$WL" --llm none \
  --generations 6 --islands 3 --slots 3 --seed 2 --out "$TMP/slots"
grep -q "^cuco evolve landscape: 3 islands x 6 generations, 3 evaluation slots" "$TMP/out" &&
  ok "3 slots announced" || not_ok "3 slots announced" "$(head -2 "$TMP/out")"
s3=$(sqlite3 "$TMP/slots/run.db" "select count(*) || ' ' || count(distinct code_hash) || ' ' || sum(status = 'ok') from programs where edit_kind <> 'migrate'")
[ "$s3" = "19 19 19" ] && ok "3 slots: 19 distinct candidates, all evaluated" || not_ok "3 slots rows" "$s3"

# bad invocations
expect_rc "missing workload is a usage error" 2 "$CUCO" evolve
expect_rc "an existing run is not overwritten" 2 "$CUCO" evolve "$WL" --llm none --out "$OUT"
expect_grep "it says to resume" "$TMP/err" "already holds a run: add --resume"
expect_rc "--resume needs a run" 2 "$CUCO" evolve "$WL" --llm none --resume --out "$TMP/none"
expect_rc "bad --generations" 2 "$CUCO" evolve "$WL" --generations zero
expect_rc "unknown model" 2 "$CUCO" evolve "$WL" --llm nosuch --out "$TMP/x"
expect_grep "the model is named" "$TMP/err" "--llm nosuch: no such model"
expect_rc "missing workload dir" 1 "$CUCO" evolve "$TMP/nowhere" --llm none --out "$TMP/y"
done_testing

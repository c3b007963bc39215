#!/bin/bash
# One program, one evaluation (issue 49).  A copy of the landscape fixture
# with a param the code never reads (spare): its values compile to the
# same program, so a proposal that differs from an evaluated one only in
# spare is answered from the database (a row of status 'duplicate' naming
# the program that answers it), not evaluated, printed as such and
# counted apart: fewer candidates than proposals, and no program
# evaluated twice.  The noise floor of the machine (the seed against
# itself, paired) is measured first, printed and recorded.  And a seed
# the allowlist refuses says which [allow] line would let it run.
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$TMP/spare
OUT=$TMP/run
cd "$TMP" || exit 1
cp -r "$ROOT/tests/data/evolve/landscape" "$WL"
sed -i 's/^unroll = 1, 2, 4, 8$/&\nspare  = 1, 2, 3, 4/' "$WL/workload.ini"
sed -i 's|^// CUCO-PARAM unroll=1$|&\n// CUCO-PARAM spare=1|' "$WL/seed.c"
grep -q '^spare  = 1, 2, 3, 4$' "$WL/workload.ini" && grep -q '^// CUCO-PARAM spare=1$' "$WL/seed.c" &&
  ! grep -q 'CUCO_PARAM_spare' "$WL/seed.c" &&
  ok "the fixture has a param its code never reads" ||
  not_ok "the fixture has a param its code never reads" "$(grep -n spare "$WL"/*)"

expect_rc "evolve runs" 0 "$CUCO" evolve "$WL" --llm none --generations 10 \
  --islands 2 --seed 1 --out "$OUT"
cp "$TMP/out" "$TMP/run.out"
q() { sqlite3 "$OUT/run.db" "$1"; }

# the noise floor, first
floor='noise floor: the seed against itself differs by [0-9.]+% \(95% interval \[[0-9.]+, [0-9.]+\]\) over 3 paired rounds; one pair differs by [0-9.]+%; cost 5 evaluations, [0-9.]+ s'
expect_grep "the noise floor is measured at the start" "$TMP/run.out" \
  "^noise floor: measuring the seed #1 against itself, 3 paired rounds \(5 evaluations besides its own\)$"
[ "$(grep -nE "^$floor$" "$TMP/run.out" | head -1 | cut -d: -f1)" -lt \
  "$(grep -n '^\[ *2/21\]' "$TMP/run.out" | cut -d: -f1)" ] 2>/dev/null &&
  ok "... and printed before the search" ||
  not_ok "... and printed before the search" "$(head -8 "$TMP/run.out")"
[ "$(grep -cE "^$floor$" "$TMP/run.out")" = 2 ] && ok "... and again in the summary" ||
  not_ok "... and again in the summary" "$(grep 'noise floor' "$TMP/run.out")"
[ "$(q "select count(*) from confirmations where versus = 'itself' and verdict = 'noise floor' and program_id = versus_id and program_id = (select seed_program_id from runs) and rounds = 3")" = 1 ] &&
  ok "... and recorded (confirmations: the seed versus itself)" ||
  not_ok "... and recorded" "$(q 'select * from confirmations')"

# duplicates: answered from the database, counted apart
ncand=$(q "select count(*) from programs where edit_kind <> 'migrate' and status <> 'duplicate'")
ndup=$(q "select count(*) from programs where status = 'duplicate'")
[ "$ndup" -ge 1 ] && [ "$ncand" = 21 ] &&
  ok "$ndup proposals were duplicates; 21 candidates evaluated (fewer than the $((ncand + ndup)) proposals)" ||
  not_ok "fewer candidates than proposals" "$ncand candidates, $ndup duplicates"
expect_grep "the summary counts them apart" "$TMP/run.out" \
  "^candidates: 21 \(21 correct, 0 failed, 0 rejected before evaluation\) \+ [0-9]+ migrate cop(y|ies) \(not evaluated\) \+ $ndup duplicates? \(not evaluated\);"
expect_grep "... and says what they were" "$TMP/run.out" \
  "^duplicates: $ndup proposals? compiled to a program already evaluated and (was|were) answered from the database: 21 candidates for $((ncand + ndup)) proposals$"
expect_grep "a progress line names the program that answers a duplicate" "$TMP/run.out" \
  "^\[  =  \] #[0-9]+ +gen [0-9]+ +island [01] tune +the same program as #[0-9]+ \(.*spare [1-4] -> [1-4].*\): answered from the database, not evaluated$"
bad=$(q "select d.id from programs d join programs o on o.id = d.same_as
  where d.status = 'duplicate' and (o.status <> 'ok' or d.median_ms is not null or
  json_extract(d.directives_json, '\$.params.order') <> json_extract(o.directives_json, '\$.params.order') or
  json_extract(d.directives_json, '\$.params.tile') <> json_extract(o.directives_json, '\$.params.tile') or
  json_extract(d.directives_json, '\$.params.unroll') <> json_extract(o.directives_json, '\$.params.unroll') or
  json_extract(d.directives_json, '\$.params.spare') = json_extract(o.directives_json, '\$.params.spare'))")
[ -z "$bad" ] && [ "$(q "select count(*) from programs where status = 'duplicate' and same_as is null")" = 0 ] &&
  ok "each duplicate names an evaluated program that differs from it only in spare" ||
  not_ok "each duplicate names its program" "rows $bad: $(q "select id, same_as, directives_json from programs where status = 'duplicate'")"
expect_grep "... and says so in its error" <(q "select error from programs where status = 'duplicate'") \
  "^the same program as #[0-9]+ \(what it compiles to: [0-9a-f]{16}\): answered from the database, not evaluated$"
[ "$(q "select count(*) from (select 1 from programs where status = 'ok' and edit_kind <> 'migrate'
  group by json_extract(directives_json, '\$.params.order'), json_extract(directives_json, '\$.params.tile'),
  json_extract(directives_json, '\$.params.unroll') having count(*) > 1)")" = 0 ] &&
  ok "no program was evaluated twice" ||
  not_ok "no program was evaluated twice" "$(q "select id, directives_json from programs where status = 'ok' order by directives_json")"
expect_grep "the optimum is still found" "$TMP/run.out" \
  '"order":"b","spare":[1-4],"tile":32,"unroll":4'
expect_rc "report written" 0 "$CUCO" report "$OUT/run.db" -o "$TMP/r.html"
expect_grep "the report counts the duplicates apart" "$TMP/r.html" \
  "candidates</th><td>21: 21 ok, .*; besides, $ndup duplicates? \(a proposal that compiles to a program already evaluated: answered from the database, not evaluated\)"

# a seed the allowlist refuses (rand, srand, time without an [allow] line)
# names the line to add
MM=$TMP/mm
mkdir -p "$MM" && cp "$ROOT"/examples/cpu_matmul/* "$MM/" && sed -i '/^\[allow\]/,$d' "$MM/workload.ini"
awk '/EVOLVE-BLOCK-START/ {print; print "#include <stdlib.h>\n#include <time.h>\nint cuco_noise(void) { srand(1); return rand() + (int)time(NULL); }"; next} 1' \
  "$ROOT/examples/cpu_matmul/seed.c" >"$MM/seed.c"
expect_rc "evolve with a seed the allowlist refuses fails" 1 "$CUCO" evolve "$MM" \
  --llm none --generations 1 --islands 1 --out "$TMP/mmrun"
expect_grep "... naming the [allow] symbols line to add" "$TMP/err" \
  "the seed seed\.c did not pass \(rejected at allowlist\): allowlist: .* calls '[a-z]+' \(not on runtime/symbols\.allow.*; to allow them, add \`symbols = [a-z, ]+\` under \[allow\] in workload\.ini$"
for f in rand srand time; do
  grep -qE "add \`symbols = [a-z, ]*\b$f\b" "$TMP/err" && ok "... the line names $f" ||
    not_ok "... the line names $f" "$(cat "$TMP/err")"
done
done_testing

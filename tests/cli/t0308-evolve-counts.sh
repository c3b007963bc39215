#!/bin/bash
# The candidate count and the best agree everywhere: a small cpu_matmul
# evolve with the offline tuner and migration between two islands, then
# the summary line, the database and the report HTML say the same number
# of candidates (migrate copies apart, counted as copies) and the report's
# plot legend names the summary's best with the same id and speedup.
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
OUT=$TMP/run
cd "$TMP" || exit 1

expect_rc "evolve with migration runs" 0 nice "$CUCO" evolve \
  "$ROOT/examples/cpu_matmul" --llm none --generations 4 --islands 2 \
  --seed 3 --out "$OUT"
cp "$TMP/out" "$TMP/run.out"
q() { sqlite3 "$OUT/run.db" "$1"; }
ncand=$(q "select count(*) from programs where edit_kind <> 'migrate'")
ncopy=$(q "select count(*) from programs where edit_kind = 'migrate'")
[ "$ncopy" -ge 1 ] && ok "the run has migrate copies ($ncopy)" ||
  not_ok "the run has migrate copies" "$(q 'select id, edit_kind from programs')"
line=$(grep -E '^candidates: ' "$TMP/run.out")
if [[ $line =~ ^candidates:\ ([0-9]+)\ \(.*\)\ \+\ ([0-9]+)\ migrate\ cop ]] &&
  [ "${BASH_REMATCH[1]}" = "$ncand" ] && [ "${BASH_REMATCH[2]}" = "$ncopy" ]; then
  ok "summary counts $ncand candidates + $ncopy copies, as the database"
else
  not_ok "summary counts as the database" "summary: '$line'; db: $ncand + $ncopy"
fi
expect_rc "report written" 0 "$CUCO" report "$OUT/run.db" -o "$TMP/r.html"
cell=$(grep -oE 'candidates</th><td>[^<]*' "$TMP/r.html")
if [[ $cell =~ \<td\>([0-9]+):\ .*besides,\ ([0-9]+)\ migrate\ cop ]] &&
  [ "${BASH_REMATCH[1]}" = "$ncand" ] && [ "${BASH_REMATCH[2]}" = "$ncopy" ]; then
  ok "report counts $ncand candidates + $ncopy copies, as the database"
else
  not_ok "report counts as the database" "report: '$cell'; db: $ncand + $ncopy"
fi
nmig=$(grep -o 'class="pt migrate"' "$TMP/r.html" | wc -l)
[ "$nmig" = "$ncopy" ] && ok "the plot marks the $ncopy copies as copies" ||
  not_ok "the plot marks the copies" "$nmig marks, $ncopy copies"
best=$(grep -E '^best +[0-9.]+ ' "$TMP/run.out")
bid=$(q "select best_program_id from runs")
if [[ $best =~ \ ([0-9.]+)x\ +#([0-9]+)\  ]] && [ "${BASH_REMATCH[2]}" = "$bid" ]; then
  want="best #$bid: ${BASH_REMATCH[1]}x"
  expect_grep "the legend names the summary's best ($want)" "$TMP/r.html" \
    ">$want, score "
else
  not_ok "summary's best is runs.best_program_id" "summary '$best', db $bid"
fi
done_testing

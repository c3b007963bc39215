#!/bin/bash
# The candidate count and the best agree everywhere: a small cpu_matmul
# evolve with the offline tuner and migration between two islands, then
# the summary line, the database and the report HTML say the same number
# of candidates (migrate copies apart, counted as copies) and the report's
# plot legend names the summary's best with the same id and speedup.
# (kunroll is read only in the ikj nest: its values compile to one program
# elsewhere, and those proposals are answered from the database.)
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
OUT=$TMP/run
cd "$TMP" || exit 1

expect_rc "evolve with migration runs" 0 nice "$CUCO" evolve \
  "$ROOT/examples/cpu_matmul" --llm none --generations 4 --islands 2 \
  --seed 3 --out "$OUT"
cp "$TMP/out" "$TMP/run.out"
q() { sqlite3 "$OUT/run.db" "$1"; }
# duplicates (a proposal that compiles to a program already evaluated,
# answered from the database) are not candidates either: counted apart
ncand=$(q "select count(*) from programs where edit_kind <> 'migrate' and status <> 'duplicate'")
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
# The headline is the confirmation's figure (against the seed: cpu_matmul
# has no baseline), with its interval, everywhere: the summary's first
# line and best row, the report (page, legend, Markdown), cuco serve's
# /api/run and best.c's header.  The search's own figure for the best is
# not it (a real measurement differs from its re-measurement).
conf=$(q "select printf('%.3g', ratio) || ' ' || printf('%.3g', lo) || ' ' || printf('%.3g', hi) || ' ' || printf('%.3f', ratio) || ' ' || rounds from confirmations where program_id = $bid and versus = 'seed' and verdict = 'best' order by id desc limit 1")
read -r r lo hi r3 rounds <<<"$conf"
text="$r""x the seed, 95% CI \[$lo, $hi\], confirmed over $rounds rounds"
[ -n "$conf" ] && ok "the best was confirmed against the seed ($conf)" ||
  not_ok "the best was confirmed against the seed" "$(q 'select * from confirmations')"
expect_grep "summary: the headline is the confirmed figure" "$TMP/run.out" "^speedup: best #$bid: $text$"
if [[ $best =~ \ ([0-9.]+)x\ +#([0-9]+)\  ]] && [ "${BASH_REMATCH[2]}" = "$bid" ] &&
  [ "${BASH_REMATCH[1]}" = "$r3" ]; then
  ok "summary's best row shows the confirmed ${r3}x for #$bid"
else
  not_ok "summary's best row shows the confirmed figure" "summary '$best', db #$bid ${r3}x"
fi
expect_grep "... and says it is confirmed, with the interval" "$TMP/run.out" \
  "^best .*; confirmed, 95% CI \[$lo, $hi\]\) -> "
expect_no_grep "no bar where the workload has none (summary)" "$TMP/run.out" "the bar|^bar "
expect_grep "report page: the headline" "$TMP/r.html" \
  "<p id=\"headline\"><strong>Speedup:</strong> best #$bid: $text</p>"
expect_grep "report: the legend names the best with the confirmed figure" "$TMP/r.html" \
  ">best #$bid: $r""x the seed, confirmed \[$lo, $hi\], score "
expect_rc "report --format md" 0 "$CUCO" report "$OUT/run.db" --format md
expect_grep "report md: the headline" "$TMP/out" "^\*\*Speedup:\*\* best #$bid: $text$"
expect_grep "best.c's header: the headline" "$OUT/best.c" \
  "^// cuco evolve run 1 \(cpu_matmul\): best #$bid: $text$"
"$CUCO" serve "$OUT/run.db" --port 0 >"$TMP/serve.out" 2>&1 &
spid=$!
for _ in $(seq 50); do grep -q 'http://' "$TMP/serve.out" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$TMP/serve.out")
curl -s "${url}api/run" >"$TMP/api.json"
kill "$spid"; wait "$spid" 2>/dev/null
if python3 - "$TMP/api.json" "$bid" "$(echo "$text" | tr -d '\\')" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))["headline"]
assert h["program_id"] == int(sys.argv[2]) and h["confirmed"] and h["versus"] == "seed", h
assert h["text"] == sys.argv[3], (h["text"], sys.argv[3])
PY
then ok "serve /api/run: the same headline"
else not_ok "serve /api/run: the same headline" "$(head -c 600 "$TMP/api.json")"; fi
done_testing

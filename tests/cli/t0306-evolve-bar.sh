#!/bin/bash
# cuco evolve and cuco report against the workload's bar: two baselines of
# known costs (tests/fixtures/bar_landscape: base_a 2.0 at full, 4.0 at
# big; base_b 3.0 at both; the seed 2.5 at both), bar over both.  Speedups
# are against the faster baseline per size, the database says which one.
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$ROOT/tests/fixtures/bar_landscape
OUT=$TMP/run
cd "$TMP" || exit 1

expect_rc "tuner run succeeds" 0 "$CUCO" evolve "$WL" --llm none \
  --generations 2 --islands 1 --seed 1 --out "$OUT"
cp "$TMP/out" "$TMP/run.out"
expect_grep "both baselines measured" "$TMP/run.out" "^baseline base_b.c: evaluating"
expect_grep "bar at full is base_a" "$TMP/run.out" "^bar full: base_a.c 2 ms$"
expect_grep "bar at big is base_b" "$TMP/run.out" "^bar big: base_b.c 3 ms$"
# geometric mean of the per-size minima: sqrt(2*3) = 2.449
expect_grep "summary bar row names the bar per size" "$TMP/run.out" \
  "^bar +2\.449 +- +1\.000x +big=base_b\.c, full=base_a\.c$"
# sqrt(6)/2.5 = 0.980 (against base_a alone it would be sqrt(8)/2.5 = 1.131)
expect_grep "seed speedup is against the bar" "$TMP/run.out" "^seed +2\.5 +0 +0\.980x "
q() { sqlite3 "$OUT/run.db" "$1"; }
got=$(q "select json_extract(baseline_json, '\$.full.bar') || ' ' || json_extract(baseline_json, '\$.full.median_ms') || ' ' || json_extract(baseline_json, '\$.big.bar') || ' ' || json_extract(baseline_json, '\$.big.median_ms') from runs")
[ "$got" = "base_a.c 2.0 base_b.c 3.0" ] && ok "baseline_json records the bar per size" ||
  not_ok "baseline_json records the bar per size" "$got"
got=$(q "select json_extract(baseline_json, '\$.big.baselines.\"base_a.c\".median_ms') || ' ' || json_extract(baseline_json, '\$.full.baselines.\"base_b.c\".median_ms') from runs")
[ "$got" = "4.0 3.0" ] && ok "baseline_json keeps every baseline's median" ||
  not_ok "baseline_json keeps every baseline's median" "$got"
got=$(q "select count(*) from programs where status = 'ok' and abs(speedup - 2.449489742783178 / median_ms) > 1e-9")
[ "$got" = 0 ] && ok "every stored speedup is bar / median" ||
  not_ok "every stored speedup is bar / median" "$(q 'select id, median_ms, speedup from programs')"

expect_rc "report --format md" 0 "$CUCO" report "$OUT/run.db" --format md
expect_grep "report: bar at full is base_a, seed 0.80x" "$TMP/out" \
  "^\| full \| 2 \| base_a\.c \(base_b\.c 3 ms\) \| 2\.5 \(0\.80x\) \|"
expect_grep "report: bar at big is base_b, seed 1.20x" "$TMP/out" \
  "^\| big \| 3 \| base_b\.c \(base_a\.c 4 ms\) \| 2\.5 \(1\.20x\) \|"
expect_rc "report HTML" 0 "$CUCO" report "$OUT/run.db" -o "$TMP/r.html"
expect_grep "html names the bar baseline" "$TMP/r.html" \
  "<tr><td>big</td><td>3</td><td>base_b\.c \(base_a\.c 4 ms\)</td><td>2\.5 \(1\.20x\)</td>"

# --resume keeps the stored bar (no baseline is measured again) and the
# new candidates' speedups are against it too.
expect_rc "--resume with more generations" 0 "$CUCO" evolve "$WL" --llm none \
  --generations 4 --islands 1 --seed 1 --out "$OUT" --resume
expect_no_grep "resume measures no baseline" "$TMP/out" "^baseline .*evaluating"
expect_grep "resume summary keeps the bar" "$TMP/out" "^bar +2\.449 .*big=base_b\.c, full=base_a\.c$"
got=$(q "select count(*) || ' ' || sum(abs(speedup - 2.449489742783178 / median_ms) < 1e-9) from programs where status = 'ok'")
[ "${got% *}" -gt 3 ] && [ "${got% *}" = "${got#* }" ] && ok "resumed candidates' speedups are bar / median ($got)" ||
  not_ok "resumed candidates' speedups are bar / median" "$got"

# A bar of one baseline that is not baselines[0]: base_a still runs (it
# freezes the thresholds) but only base_b is the bar.
cp -r "$WL" "$TMP/wl_b"
sed -i 's/^bar .*/bar = base_b.c/' "$TMP/wl_b/workload.ini"
expect_rc "bar = base_b.c run succeeds" 0 "$CUCO" evolve "$TMP/wl_b" --llm none \
  --generations 1 --islands 1 --seed 1 --out "$TMP/run_b"
expect_grep "base_a still measured" "$TMP/out" "^baseline base_a.c: evaluating"
expect_grep "bar at full is base_b" "$TMP/out" "^bar full: base_b.c 3 ms$"
expect_grep "seed speedup 3/2.5" "$TMP/out" "^seed +2\.5 +0 +1\.200x "

# A bar baseline that fails is left out (warned); the other stays the bar.
sed -i 's/^bar .*/bar = base_a.c, base_b.c/' "$TMP/wl_b/workload.ini"
sed -i 's/return n == 4096 ? 3.0 : 3.0;/return n == 4096 ? (exit(7), 3.0) : 3.0;/' "$TMP/wl_b/base_b.c"
grep -q 'exit(7)' "$TMP/wl_b/base_b.c" || not_ok "fixture edit" "base_b.c unchanged"
expect_rc "run with a failing bar baseline succeeds" 0 "$CUCO" evolve "$TMP/wl_b" --llm none \
  --generations 1 --islands 1 --seed 1 --out "$TMP/run_f"
expect_grep "the failure is said" "$TMP/err" "baseline base_b.c: .*it is not part of the bar"
expect_grep "base_a is the bar at both sizes" "$TMP/out" "^bar +2\.828 +- +1\.000x +big=base_a\.c, full=base_a\.c$"
done_testing

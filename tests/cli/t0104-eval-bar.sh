#!/bin/bash
# cuco eval --impl all against the workload's bar (tests/fixtures/
# bar_landscape: base_a 2.0 at full, 4.0 at big; base_b 3.0 at both; the
# seed 2.5): the seed's ratio per size is against the faster baseline, named.
. "$(dirname "$0")/lib.sh"
WL=$ROOT/tests/fixtures/bar_landscape
cd "$TMP" || exit 1

expect_rc "eval --impl all succeeds" 0 "$CUCO" eval "$WL" --impl all
expect_grep "bar at full is base_a" "$TMP/out" "^bar full: base_a\.c 2 ms \(base_b\.c 3 ms\)$"
expect_grep "bar at big is base_b" "$TMP/out" "^bar big: base_b\.c 3 ms \(base_a\.c 4 ms\)$"
expect_grep "seed at full: 0.8x base_a" "$TMP/out" "^seed\.c full: 2\.5 ms, 0\.800x the bar \(base_a\.c 2 ms\)$"
expect_grep "seed at big: 1.2x base_b" "$TMP/out" "^seed\.c big: 2\.5 ms, 1\.200x the bar \(base_b\.c 3 ms\)$"

expect_rc "eval --impl all --json succeeds" 0 "$CUCO" eval "$WL" --impl all --json
if python3 - "$TMP/out" <<'PY'
import json, sys
txt = open(sys.argv[1]).read()
arr = json.loads(txt[txt.index("\n[") + 1:] if not txt.startswith("[") else txt)
seed = [r for r in arr if r["impl"] == "seed.c"][0]
v = seed["vs_bar"]
assert v["full"]["bar"] == "base_a.c" and v["full"]["bar_ms"] == 2.0, v
assert v["big"]["bar"] == "base_b.c" and abs(v["big"]["speedup"] - 1.2) < 1e-9, v
assert all("vs_bar" not in r for r in arr if r["impl"] != "seed.c"), arr
PY
then ok "json: the seed's vs_bar names the bar per size"
else not_ok "json: the seed's vs_bar names the bar per size" "$(head -c 400 "$TMP/out")"; fi

# One baseline alone: no bar table (nothing to compare).
expect_rc "eval --impl base_b.c" 0 "$CUCO" eval "$WL" --impl base_b.c
expect_no_grep "no bar lines for one implementation" "$TMP/out" "^bar "
done_testing

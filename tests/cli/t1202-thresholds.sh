#!/bin/bash
# Frozen accuracy thresholds (src/thresh.h, docs/contracts.md 4c) end to end
# on a freeform CPU workload (tests/fixtures/thresh_matmul: cpu_matmul's
# program reporting global, worst-row and worst-block relative L2).
. "$(dirname "$0")/lib.sh"
FX=$ROOT/tests/fixtures/thresh_matmul
export CUCO_CACHE_DIR=$TMP/cache
STORE=$CUCO_CACHE_DIR/thresholds/thresh_matmul.json
# A copy with a tiny floor, so the thresholds are 2 x the baseline's errors.
WL=$TMP/wl
mkdir -p "$WL" && cp "$FX"/*.c "$WL/" && sed 's/^floor  = 1e-6/floor  = 1e-9/' "$FX/workload.ini" >"$WL/workload.ini"
# A candidate whose first row is 3.6e-7 too large (1 + 3 float ulps): the program's own check
# (rel_l2 < 1e-4) passes it, the frozen row threshold (about 2e-7) does not.
python3 - "$WL/seed.c" "$TMP/rowerr.c" <<'PY'
import sys
s = open(sys.argv[1]).read()
end = s.index("// EVOLVE-BLOCK-END")
body_end = s.rindex("}\n", 0, end)  # the end of matmul(), inside the block
s = s[:body_end] + "  for (j = 0; j < N; j++)\n    C[j] *= 1.0000004f;\n" + s[body_end:]
open(sys.argv[2], "w").write(s)
PY

expect_rc "candidate before any baseline run passes (cap only)" 0 "$CUCO" eval "$WL" --candidate "$TMP/rowerr.c" --no-bench --json
cp "$TMP/out" "$TMP/unfrozen.json"
expect_grep "says the thresholds are not frozen yet" "$TMP/err" "thresholds: small_a not frozen \(no run of the first baseline baseline.c"
[ ! -e "$STORE" ] && ok "a candidate never freezes thresholds" || not_ok "a candidate never freezes thresholds" "$(cat "$STORE")"

expect_rc "baseline evaluates" 0 "$CUCO" eval "$WL" --impl baseline.c --json
cp "$TMP/out" "$TMP/base.json"
expect_grep "eval output shows the frozen thresholds" "$TMP/err" "verify  ok: 2 sizes passed .*thresholds: small_a rel_l2<=[0-9.e+-]+ row<=[0-9.e+-]+ block<=[0-9.e+-]+ \(frozen now from baseline.c\)"
if python3 - "$TMP/base.json" "$STORE" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); st = json.load(open(sys.argv[2]))["entries"]
assert len(st) == 3, st.keys()   # small_a, small_b (verify) and full (bench)
for mode, size in (("verify", "small_a"), ("verify", "small_b"), ("bench", "full")):
    m = r["metrics"][mode][size]
    t = m["thresholds"]
    assert t["frozen"] is True and t["frozen_now"] is True and t["baseline"] == "baseline.c", t
    last = m["last"]
    for k in ("rel_l2", "row_rel_l2", "block_rel_l2"):
        err = last[k]
        assert t["baseline_error"][k] == err, (k, t, last)
        want = min(1e-4, max(1e-9, 2 * err))
        assert abs(t[k] - want) <= 1e-12 + 1e-6 * want, (k, t[k], want)
    key = [k for k in st if k.startswith(m["params"] + "|r1|v0|")]
    assert len(key) == 1 and abs(st[key[0]]["row_rel_l2"] - t["row_rel_l2"]) < 1e-15, (key, st)
PY
then ok "thresholds = min(cap, max(floor, 2 x the baseline's own error)), stored per size"
else not_ok "thresholds = min(cap, max(floor, 2 x the baseline's own error)), stored per size" "$(head -c 600 "$TMP/base.json")"; fi

cp "$STORE" "$TMP/store.before"
expect_rc "the seed passes under the frozen thresholds" 0 "$CUCO" eval "$WL" --no-bench
expect_grep "seed run reuses them" "$TMP/out" "small_a rel_l2<=.* \(frozen from baseline.c\)"
expect_rc "the baseline again: nothing refrozen" 0 "$CUCO" eval "$WL" --impl baseline.c --no-bench
cmp -s "$STORE" "$TMP/store.before" && ok "the store is unchanged by later evals" || not_ok "the store is unchanged by later evals" "$(diff "$STORE" "$TMP/store.before" | head)"

expect_rc "row error within the cap is rejected by the frozen row threshold" 1 "$CUCO" eval "$WL" --candidate "$TMP/rowerr.c" --no-bench --json
cp "$TMP/out" "$TMP/rowerr.json"
if python3 - "$TMP/rowerr.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "failed" and r["stage"] == "verify", r["error"]
assert "thresholds: row_rel_l2" in r["error"] and "frozen from baseline.c" in r["error"], r["error"]
assert r["metrics"]["verify"]["small_a"]["last"]["ok"] is True   # the program itself was fine
PY
then ok "the verdict names the row threshold and where it came from"
else not_ok "the verdict names the row threshold and where it came from" "$(head -c 600 "$TMP/rowerr.json")"; fi

# Editing the baseline changes the key: the next baseline run freezes anew.
echo "/* edited */" >>"$WL/baseline.c"
expect_rc "edited baseline evaluates" 0 "$CUCO" eval "$WL" --impl baseline.c --no-bench
expect_grep "edited baseline freezes anew" "$TMP/out" "frozen now from baseline.c"
python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['entries']; sys.exit(0 if len(e) == 5 else 1)" "$STORE" &&
  ok "old entries kept beside the new ones" || not_ok "old entries kept beside the new ones" "$(python3 -c "import json,sys; print(list(json.load(open(sys.argv[1]))['entries']))" "$STORE")"

# The store is untrusted input: malformed -> a clear error naming the file.
echo '{"entries": {' >"$STORE"
expect_rc "corrupt thresholds file fails the eval" 1 "$CUCO" eval "$WL" --no-bench
expect_grep "error names the file" "$TMP/err" "thresholds: .*thresh_matmul.json:[0-9]+:"
python3 - "$STORE" <<'PY'
import json, sys
json.dump({"entries": {"x": 1}, "schema": 1}, open(sys.argv[1], "w"))
PY
expect_rc "foreign entries are ignored" 0 "$CUCO" eval "$WL" --no-bench
sed -i 's/"x": 1/"M=33,K=17,N=45|r1|v0|0000000000000000": 1/' "$STORE"
python3 - "$STORE" "$TMP/store.before" <<'PY'
import json, sys
cur = json.load(open(sys.argv[1])); old = json.load(open(sys.argv[2]))["entries"]
k = [k for k in old if k.startswith("M=33,K=17,N=45|")][0]
cur["entries"] = {k: dict(old[k], row_rel_l2=5.0)}   # out of range
json.dump(cur, open(sys.argv[1], "w"))
PY
# the key of the current baseline differs (edited above): restore the old text
head -n -1 "$WL/baseline.c" >"$WL/b.c" && mv "$WL/b.c" "$WL/baseline.c"
expect_rc "out-of-range threshold refused" 1 "$CUCO" eval "$WL" --no-bench
expect_grep "refusal names entry and remedy" "$TMP/err" "entry 'M=33,K=17,N=45\|r1\|v0\|[0-9a-f]+' is malformed .*remove the file"

printf '[workload]\nname = x\nkind = freeform\nranks = 1\nseed = s.c\n[tolerance]\nfloor = 2\n' >"$TMP/badfloor.ini"
mkdir -p "$TMP/badfloor" && mv "$TMP/badfloor.ini" "$TMP/badfloor/workload.ini" && touch "$TMP/badfloor/s.c"
expect_rc "bad floor refused" 1 "$CUCO" eval "$TMP/badfloor"
expect_grep "bad floor names file:line" "$TMP/err" "badfloor/workload.ini:7: floor '2' is not in \(0, 1\)"
done_testing

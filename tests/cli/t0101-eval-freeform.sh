#!/bin/bash
# cuco eval on the freeform CPU example: the whole cascade end to end.
. "$(dirname "$0")/lib.sh"
WL=$ROOT/examples/cpu_matmul
export CUCO_CACHE_DIR=$TMP/cache

expect_rc "seed evaluates" 0 "$CUCO" eval "$WL" --out "$TMP/seed"
expect_grep "static verdict" "$TMP/out" "^  static +ok: CUCO_PARAM_order=ijk"
expect_grep "build verdict" "$TMP/out" "^  build +ok"
expect_grep "verify verdict" "$TMP/out" "^  verify +ok: 2 sizes passed \(checked by the workload's check, run by cuco\)"
expect_grep "bench verdict" "$TMP/out" "^  bench +ok: 1 size, median"
expect_grep "summary line" "$TMP/out" "^seed.c: ok; median [0-9.]+ ms"
for f in seed.c seed.bin build.log run.log eval.json; do
  [ -s "$TMP/seed/seed/$f" ] && ok "--out keeps $f" || not_ok "--out keeps $f" "$(ls "$TMP/seed/seed")"
done

# param edits via sed: the tuned configuration (known best: order=ikj)
tune() { sed -e "s|^// CUCO-PARAM order=ijk|// CUCO-PARAM order=$1|" \
             -e "s|^// CUCO-PARAM tile=256|// CUCO-PARAM tile=$2|" \
             -e "s|^// CUCO-PARAM kunroll=1|// CUCO-PARAM kunroll=$3|" "$WL/seed.c"; }
tune ijk 256 1 >"$TMP/seedcopy.c"
tune ikj 64 2 >"$TMP/best.c"
expect_rc "seed as --json" 0 "$CUCO" eval "$WL" --candidate "$TMP/seedcopy.c" --json
cp "$TMP/out" "$TMP/seed.json"
expect_rc "tuned candidate as --json" 0 "$CUCO" eval "$WL" --candidate "$TMP/best.c" --json
cp "$TMP/out" "$TMP/best.json"
if python3 - "$TMP/seed.json" "$TMP/best.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
for r in (s, b):
    assert r["stage"] == "done" and r["status"] == "ok" and r["error"] == "", r
    assert r["score"] > 0 and r["median_ms"] > 0 and r["noise_ms"] >= 0
    full = r["metrics"]["bench"]["full"]
    assert len(full["samples_ms"]) == 3 and full["verified_by"] == "cuco"
    # every run: cuco's own clock around it, the workload's check's verdict
    last = r["metrics"]["verify"]["small_a"]["last"]
    assert last["check"]["ok"] is True and last["check"]["nan"] == 0, last
    assert last["cuco_wall_ms"] >= last["time_ms"] > 0, last
    assert r["metrics"]["verify"]["small_a"]["last"]["ok"] is True
assert b["directives"]["params"] == {"order": "ikj", "tile": 64, "kunroll": 2}
# measured: the ikj nest is several times faster than the seed's ijk
assert b["median_ms"] * 2 < s["median_ms"], (b["median_ms"], s["median_ms"])
PY
then ok "json results: tuned ikj beats the ijk seed by > 2x"
else not_ok "json results: tuned ikj beats the ijk seed by > 2x" "$(cat "$TMP/seed.json" "$TMP/best.json" | head -c 800)"; fi

# static rejections: frozen text, params, forbidden calls
sed 's|  reps = strcmp(mode, "bench") ? 1 : 3;|  reps = 1;|' "$WL/seed.c" >"$TMP/frozen.c"
expect_rc "frozen-text edit rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/frozen.c"
expect_grep "frozen edit names stage and line" "$TMP/out" "frozen.c: rejected: static: frozen text differs from the seed at line [0-9]+: '  reps = 1;'"
tune kij 64 2 >"$TMP/badparam.c"
expect_rc "bad param rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/badparam.c"
expect_grep "bad param quoted" "$TMP/out" "param 'order=kij' is not one of"
sed 's|^  int i0, k0, i, j, k;|  int i0, k0, i, j, k; system("true");|' "$WL/seed.c" >"$TMP/sys.c"
expect_rc "system() in a block rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/sys.c"
expect_grep "forbidden call named" "$TMP/out" "forbidden call 'system'"
expect_no_grep "rejected before any build" "$TMP/out" "^  build"

# build, verify and hang failures
sed 's|^  int i0, k0, i, j, k;|  int i0, k0, i, j, k = nosuchvar;|' "$WL/seed.c" >"$TMP/broken.c"
expect_rc "compile error fails at build" 1 "$CUCO" eval "$WL" --candidate "$TMP/broken.c" --out "$TMP/broken"
expect_grep "build failure named" "$TMP/out" "broken.c: failed: build: exit 1: .*nosuchvar"
expect_grep "build log kept" "$TMP/broken/broken/build.log" "nosuchvar"
sed 's|^      for (i = i0; i < i1; i++)$|      for (i = i0; i < i1 - 1; i++)|' "$WL/seed.c" >"$TMP/wrong.c"
expect_rc "wrong output fails at verify" 1 "$CUCO" eval "$WL" --candidate "$TMP/wrong.c"
expect_grep "verify failure named" "$TMP/out" "failed: verify: size small_a: "
sed 's|^  for (i = 0; i < M \* N; i++)$|  for (;;) i++;\n  for (i = 0; i < M * N; i++)|' "$WL/seed.c" >"$TMP/hang.c"
expect_rc "a hang fails at verify" 1 "$CUCO" eval "$WL" --candidate "$TMP/hang.c" --timeout 1
expect_grep "hang named" "$TMP/out" "failed: verify: size small_a: hang: timed out"

# Forged metrics (issue 52): a program is not believed about itself.  Each
# edit goes inside the EVOLVE block (before its end marker).
forge() { python3 - "$WL/seed.c" "$1" <<'PY'
import sys
src = open(sys.argv[1]).read()
print(src.replace("// EVOLVE-BLOCK-END", sys.argv[2] + "\n// EVOLVE-BLOCK-END", 1), end="")
PY
}
# The forgers' tools, token-pasted so the static stage's text checks do not
# see them (a block's #define of what the frozen text uses, a destructor
# attribute and _exit are refused there: issue 47): a destructor that
# writes LINE to stdout and leaves with _exit, so the program's own line,
# still in stdout's buffer (a pipe), is never written.  WLF widens the
# example's allowlist to write and _exit.
WLF=$TMP/wlf
cp -r "$WL" "$WLF"
sed -i 's/^symbols = \(.*\)$/symbols = \1, write, _exit/' "$WLF/workload.ini"
forge_exit() { # LINE [EXTRA]: the seed with the destructor (and EXTRA) in its block
  forge "#include <sys/types.h>
#define FG_CAT2(a, b) a##b
#define FG_CAT(a, b) FG_CAT2(a, b)
extern ssize_t FG_CAT(wri, te)(int, const void *, size_t);
extern void FG_CAT(_ex, it)(int);
__attribute__((FG_CAT(destr, uctor))) static void fg_late(void) {
  static const char l[] = \"$1\\n\";
  FG_CAT(wri, te)(1, l, sizeof(l) - 1);
  FG_CAT(_ex, it)(0);
}
${2:-}"
}
# a second metrics line, written at exit beside the honest one
forge '#include <stdio.h>
#define FG_CAT2(a, b) a##b
#define FG_CAT(a, b) FG_CAT2(a, b)
__attribute__((FG_CAT(destr, uctor))) static void late(void) { puts("{\"time_ms\": 0.001, \"ok\": true}"); }' >"$TMP/second.c"
expect_rc "a second JSON line is refused" 1 "$CUCO" eval "$WL" --candidate "$TMP/second.c" --no-bench
expect_grep "... naming it" "$TMP/out" "failed: verify: size small_a: the program printed 2 JSON metrics lines: one is the contract"
# a time no run can have: 5e-324 ms, and above the run's own wall time
forge_exit '{\"time_ms\": 5e-324, \"ok\": true, \"rel_l2\": 0, \"nan\": 0}' >"$TMP/tiny.c"
expect_rc "a 5e-324 ms time is refused" 1 "$CUCO" eval "$WLF" --candidate "$TMP/tiny.c" --no-bench
expect_grep "... as impossible" "$TMP/out" "size small_a: 'time_ms' 4.94066e-324 ms is impossible"
forge_exit '{\"time_ms\": 1e300, \"ok\": true}' >"$TMP/huge.c"
expect_rc "a time past the run's wall clock is refused" 1 "$CUCO" eval "$WLF" --candidate "$TMP/huge.c" --no-bench
expect_grep "... with cuco's clock" "$TMP/out" "'time_ms' 1e\+300 ms is impossible: the whole run took [0-9.]+ ms on cuco's clock"
# no work done, NaN left, yet the program's line says ok
forge_exit '{\"time_ms\": 1.5, \"ok\": true, \"rel_l2\": 0, \"nan\": 0}' >"$TMP/nocheck.c"
sed -i 's|^  int i0, k0, i, j, k;$|  int i0, k0, i, j, k;\n  if (M > 0) return;|' "$TMP/nocheck.c"
expect_rc "a check defined away is refused" 1 "$CUCO" eval "$WLF" --candidate "$TMP/nocheck.c" --no-bench
expect_grep "... by the workload's check" "$TMP/out" "failed: verify: size small_a: verification failed \(the workload's check, run by cuco\): NaN or Inf in the output"
expect_no_grep "... though the program said ok" "$TMP/out" "passed"
# where the frozen text prints the metric, a block's #define of its printf
# or #undef of its isnan is refused before anything is built
forge '#define printf(...) puts("{\"time_ms\": 5e-324, \"ok\": true}")' >"$TMP/tiny_frozen.c"
expect_rc "a block's #define of the frozen text's printf is refused" 1 "$CUCO" eval "$WL" --candidate "$TMP/tiny_frozen.c" --no-bench
expect_grep "... at static, naming it" "$TMP/out" "rejected: static: line [0-9]+: forbidden #define of 'printf', which the frozen text uses"

# sizes and usage
expect_rc "explicit shape" 0 "$CUCO" eval "$WL" --sizes M=7,K=5,N=3,small_b --no-bench --json
expect_grep "explicit shape ran" "$TMP/out" "\"M=7,K=5,N=3\""
expect_rc "unknown size" 2 "$CUCO" eval "$WL" --sizes huge
expect_grep "unknown size named" "$TMP/err" "'huge' is neither a size"
expect_rc "bad rank count" 2 "$CUCO" eval "$WL" --ranks zero
expect_rc "ranks not allowed" 2 "$CUCO" eval "$WL" --ranks 2
expect_rc "unknown impl" 2 "$CUCO" eval "$WL" --impl nope.c
expect_rc "no workload" 2 "$CUCO" eval
mkdir -p "$TMP/badwl" && cp "$WL/seed.c" "$TMP/badwl/" &&
  printf '[workload]\nname = x\nkind = freeform\nranks = 1\nseed = seed.c\nfoo = 1\n' >"$TMP/badwl/workload.ini"
expect_rc "malformed workload.ini" 1 "$CUCO" eval "$TMP/badwl"
expect_grep "ini error names file:line" "$TMP/err" "badwl/workload.ini:6: unknown key 'foo'"
done_testing

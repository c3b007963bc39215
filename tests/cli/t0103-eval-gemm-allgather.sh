#!/bin/bash
# cuco eval on workloads/gemm_allgather without a GPU: static checks of the
# baselines, seed and cheat suite, and a compile-only build of the seed
# (objects cached in the default cache, so later runs compile little).
. "$(dirname "$0")/lib.sh"
WL=$ROOT/workloads/gemm_allgather
if [ ! -f "$WL/workload.ini" ]; then
  ok "# SKIP workloads/gemm_allgather is not in this tree"
  done_testing; exit 0
fi
expect_rc "static: baselines and seed" 0 "$CUCO" eval "$WL" --impl all --static-only
expect_grep "seed directives valid" "$TMP/out" "seed.cu: ok \(static checks\)"
expect_grep "seed directive flags" "$TMP/out" "CUCO_BACKEND=CUCO_BACKEND_LSA .*CUCO_PARAM_comm_ctas="
expect_rc "static: cheat suite" 0 "$CUCO" eval "$WL" --cheats --static-only
expect_grep "frozen-text cheat rejected at static" "$TMP/out" "frozen_edit.cu: rejected at static as expected \(static: frozen text differs from the seed at line [0-9]+"
expect_no_grep "no cheat slips through static wrongly" "$TMP/out" "NOT caught"
n=$(ls "$WL"/cheats/*.cu "$WL"/cheats/*.edit | wc -l)
expect_grep "only the judged cheats count" "$TMP/out" "^cheats: 1 rejected at static as expected, 4 need a build \(not judged\), $((n - 5)) need a GPU \(not judged\)$"
expect_grep "an allowlist cheat needs a build" "$TMP/out" "internal_call.cu: passed the static checks; its rejection at allowlist \(rt_mix64\) needs a build run \(not judged\)"
# A cheat edit that does not apply (the seed moved on, a typo, bad block
# syntax) stops the suite before anything runs, naming the file and why.
cp -r "$WL" "$TMP/wl"
sed -i '3s/^static int step(/static int stepX(/' "$TMP/wl/cheats/skip_rank.edit"
expect_rc "an edit whose SEARCH is not in the seed fails the suite" 1 "$CUCO" eval "$TMP/wl" --cheats --static-only
expect_grep "one line naming the file and the SEARCH text" "$TMP/err" "^cuco eval: $TMP/wl/cheats/skip_rank.edit: SEARCH block 1 of 1 matches nothing inside an EVOLVE block: \"static int stepX\(struct wl_ctx"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && ok "the error is one line" || not_ok "the error is one line" "$(cat "$TMP/err")"
expect_no_grep "no cheat ran" "$TMP/out" "passed the static checks"
expect_rc "--write-cheats fails the same way" 1 "$CUCO" eval "$TMP/wl" --write-cheats "$TMP/wc"
expect_grep "naming the file" "$TMP/err" "skip_rank.edit: SEARCH block 1 of 1 matches nothing"
cp "$WL/cheats/skip_rank.edit" "$TMP/wl/cheats/"
sed -i '/^=======$/d' "$TMP/wl/cheats/stale_flags.edit"
expect_rc "bad block syntax fails the suite" 1 "$CUCO" eval "$TMP/wl" --cheats --static-only
expect_grep "naming the file and the block" "$TMP/err" "^cuco eval: $TMP/wl/cheats/stale_flags.edit: malformed patch: SEARCH block at line 2 "
cp "$WL/cheats/stale_flags.edit" "$TMP/wl/cheats/"
cp "$WL/cheats/frozen_edit.cu" "$TMP/wl/cheats/skip_rank.cu"
expect_rc "one cheat as an edit and a whole file fails" 1 "$CUCO" eval "$TMP/wl" --cheats --static-only
expect_grep "naming both" "$TMP/err" "skip_rank.cu and skip_rank.edit are one cheat twice"
# a candidate that calls a host collective inside the block
sed '0,/^\/\/ CUCO-PARAM comm_ctas=.*/s//&\nstatic void hc(void) { ncclAllGather(0, 0, 0, ncclBfloat16, 0, 0); }/' "$WL/seed.cu" >"$TMP/hc.cu"
expect_rc "host collective rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/hc.cu" --static-only
expect_grep "host collective named" "$TMP/out" "forbidden use of 'ncclAllGather' \(host collective"
sed 's/^\(\/\/ CUCO-DIRECTIVES .*\)chunk=[0-9A-Za-z]*/\1chunk=3MiB/' "$WL/seed.cu" >"$TMP/chunk.cu"
expect_rc "bad chunk rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/chunk.cu" --static-only
expect_grep "bad chunk quoted" "$TMP/out" "'chunk=3MiB' is not a power of two"

if ! "$CUCO" doctor --json -o "$TMP/m.json" >/dev/null 2>&1 ||
   ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["cuda"]["nvcc"] and d["nccl"]["include_dir"]' "$TMP/m.json" 2>/dev/null; then
  ok "# SKIP no nvcc or NCCL headers: no compile-only build"
  done_testing; exit 0
fi
expect_rc "compile-only: seed" 0 "$CUCO" eval "$WL" --compile-only --build-timeout 900
expect_grep "seed compiled" "$TMP/out" "seed.cu: ok \(compiled\)"
expect_grep "seed linked" "$TMP/out" "build +ok \(.*; (linked against .*libnccl.so.2|no libnccl.so.2 found: .*)\)"
expect_grep "seed passes the allowlist" "$TMP/out" "allowlist ok \(seed.o calls only what runtime/symbols.allow allows; no raw system call\)"
done_testing

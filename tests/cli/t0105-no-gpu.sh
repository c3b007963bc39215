#!/bin/bash
# Without a GPU, eval and evolve of a GPU workload say so up front, in one
# line, before building anything (they once built for 21 s and then failed
# with "CUDA driver version is insufficient"), and point at --compile-only
# and the CPU example.  Skipped on a machine with a GPU.
. "$(dirname "$0")/lib.sh"
WL=$ROOT/workloads/gemm_allgather
export CUCO_CACHE_DIR=$TMP/cache
"$CUCO" doctor --json -o "$TMP/m.json" >/dev/null 2>&1
if ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["gpus"]["count"]==0 and d["cuda"]["nvcc"]' "$TMP/m.json" 2>/dev/null; then
  ok "# SKIP this machine has a GPU (or no nvcc)"
  done_testing; exit 0
fi
for cmd in eval evolve; do
  start=$(date +%s)
  expect_rc "$cmd without a GPU fails" 1 "$CUCO" $cmd "$WL" --out "$TMP/$cmd"
  took=$(( $(date +%s) - start ))
  if [ "$(wc -l <"$TMP/err")" -eq 1 ]; then ok "$cmd: one line"; else not_ok "$cmd: one line" "$(cat "$TMP/err")"; fi
  expect_grep "$cmd: says no GPU was found" "$TMP/err" "^cuco $cmd: no GPU found on this machine"
  expect_grep "$cmd: suggests --compile-only and the CPU example" "$TMP/err" "--compile-only.*cuco $cmd examples/cpu_matmul"
  expect_no_grep "$cmd: no CUDA driver error" "$TMP/err" "driver version"
  if [ "$took" -lt 10 ] && [ ! -d "$CUCO_CACHE_DIR" ]; then ok "$cmd: nothing built (${took} s)"
  else not_ok "$cmd: nothing built" "${took} s; cache: $(ls "$CUCO_CACHE_DIR" 2>&1 | head -3)"; fi
done
if [ ! -e "$TMP/evolve/run.db" ]; then ok "evolve wrote no run database"; else not_ok "evolve wrote no run database" "it did"; fi
expect_rc "static checks still work without a GPU" 0 "$CUCO" eval "$WL" --static-only
done_testing

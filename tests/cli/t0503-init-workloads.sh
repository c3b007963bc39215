#!/bin/bash
# cuco init --from every workload's baseline.cu: the scaffold holds the local
# files the baseline and its reference include (by their #include "..."
# graph), the sizes of the workload beside it, and the README's next command
# (`cuco eval . --impl baseline.cu --compile-only`, run in the folder) builds
# it.  The build needs nvcc and NCCL headers (CI has both; skipped without).
. "$(dirname "$0")/lib.sh"
export CUCO_CACHE_DIR=${CUCO_TEST_CACHE:-$ROOT/${BUILD:-build}/cuco-cache}

for wl in gemm_allgather kv_transfer flash_attn_cp moe_dsv3; do
  src=$ROOT/workloads/$wl
  [ -f "$src/baseline.cu" ] || continue
  d=$TMP/$wl
  expect_rc "$wl: init --from baseline.cu" 0 "$CUCO" init "$d" --from "$src/baseline.cu"
  missing=
  for h in $(cat "$src/baseline.cu" "$src/reference.cu" "$src"/*.cuh "$src"/*.h 2>/dev/null |
             sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' | sort -u); do
    if [ -f "$src/$h" ] && ! cmp -s "$src/$h" "$d/$h"; then missing="$missing $h"; fi
  done
  if [ -z "$missing" ]; then ok "$wl: every local include copied"
  else not_ok "$wl: every local include copied" "missing:$missing"; fi
  # the sizes are the workload's, not guessed from wl_param defaults
  first=$(sed -n '/^\[sizes\]/,/^\[/{/^[a-z_0-9]* *=/{s/ *=.*//;p;q}}' "$src/workload.ini")
  expect_grep "$wl: sizes from the workload.ini beside it" "$d/workload.ini" "^$first +="
  expect_grep "$wl: README names the compile-only eval" "$d/README.md" \
    '`cuco eval \. --impl baseline\.cu --compile-only`'
  expect_no_grep "$wl: README has no refused command" "$d/README.md" '`cuco eval \. baseline\.cu`'
  expect_rc "$wl: the scaffold loads (static checks)" 0 "$CUCO" eval "$d" --impl baseline.cu --static-only
done

if ! "$CUCO" doctor --json -o "$TMP/m.json" >/dev/null 2>&1 ||
   ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["cuda"]["nvcc"] and d["nccl"]["include_dir"]' "$TMP/m.json" 2>/dev/null; then
  ok "# SKIP no nvcc or NCCL headers: no compile-only build"
  done_testing; exit 0
fi
for wl in gemm_allgather kv_transfer flash_attn_cp moe_dsv3; do
  d=$TMP/$wl
  [ -d "$d" ] || continue
  cmd=$(grep -o '`cuco eval \. --impl baseline\.cu --compile-only`' "$d/README.md" | tr -d '`' | sed 's/^cuco //')
  (cd "$d" && "$CUCO" $cmd --build-timeout 900) >"$TMP/out" 2>"$TMP/err"; rc=$?
  if [ "$rc" -eq 0 ] && grep -q "baseline.cu: ok (compiled)" "$TMP/out"; then
    ok "$wl: the README's eval builds the scaffold"
  else
    not_ok "$wl: the README's eval builds the scaffold" "exit $rc: $(tail -c 900 "$TMP/out") $(tail -c 400 "$TMP/err")"
  fi
done
done_testing

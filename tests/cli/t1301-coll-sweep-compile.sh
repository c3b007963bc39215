#!/bin/bash
# bench/coll_sweep.cu (issue 8's collectives sweep) and the GEMM-alone probe
# workloads/gemm_allgather/tools/gemm_only.cu compile for sm_90; where
# it also links (libnccl present), its host side runs without a GPU: the
# --plan document (sizes 1 MiB..1 GiB, operations, formulas) and the
# argument checks.  The GPU part runs in tests/gpu/coll_sweep.sh.
. "$(dirname "$0")/lib.sh"

need_nvcc
INC=()
[ -n "${NCCL_INCLUDE:-}" ] && INC+=(-I"$NCCL_INCLUDE")
expect_rc "coll_sweep.cu compiles for sm_90" 0 \
  "$NVCC" -arch=sm_90 -std=c++17 -O3 "${INC[@]}" -Xptxas -v -c "$ROOT/bench/coll_sweep.cu" \
  -o "$TMP/cs.o"
expect_grep "ptxas built the LSA copy kernel" "$TMP/err" "cs_lsa_copy"
expect_no_grep "LSA copy kernel does not spill" "$TMP/err" "[1-9][0-9]* bytes spill"

# The GEMM-alone probe of the overlap bound (tests/gpu/two_rank.sh).
expect_rc "gemm_allgather tools/gemm_only.cu compiles" 0 \
  "$NVCC" -arch=sm_90 -std=c++17 "${INC[@]}" -I"$ROOT/runtime" -I"$ROOT/workloads/gemm_allgather" \
  -c "$ROOT/workloads/gemm_allgather/tools/gemm_only.cu" -o "$TMP/go.o"
for g in two_rank coll_sweep; do
  expect_rc "tests/gpu/$g.sh parses" 0 bash -n "$ROOT/tests/gpu/$g.sh"
done

if ! "$NVCC" -arch=sm_90 "$TMP/cs.o" -o "$TMP/cs" -lnccl >"$TMP/link.log" 2>&1; then
  echo "ok $((_n + 1)) # skip no libnccl to link against: $(head -c 200 "$TMP/link.log")"
  _n=$((_n + 1))
  done_testing
  exit $?
fi
CS=$TMP/cs
expect_rc "--plan runs without a GPU" 0 "$CS" --plan --ranks 4
cp "$TMP/out" "$TMP/plan.json"
if python3 - "$TMP/plan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["sizes"]
assert s[0] == 1 << 20 and s[-1] == 1 << 30 and len(s) == 11, s
assert all(b == 2 * a for a, b in zip(s, s[1:])), s
assert d["ops"] == ["allgather", "alltoall", "lsa_copy", "memcpy_d2d"], d["ops"]
assert d["ranks"] == 4 and d["iters"] >= 20 and d["status"] == "plan", d
assert "(n-1)/n" in d["formulas"]["allgather"] and "(n-1)/n" in d["formulas"]["alltoall"]
PY
then ok "plan: 11 power-of-two sizes 1 MiB..1 GiB, four operations, formulas"
else not_ok "plan: 11 power-of-two sizes 1 MiB..1 GiB, four operations, formulas" "$(cat "$TMP/plan.json")"; fi
# The report's arithmetic, on synthetic samples (rank r, repetition i:
# (i+1)(r+1)/10 ms): per repetition the slowest rank, the median over
# repetitions, algbw = bytes/t, busbw = algbw (n-1)/n, memcpy hbm = 2 algbw.
expect_rc "--fake-samples report" 0 "$CS" --fake-samples --ranks 4 --sizes 64MiB,1GiB --iters 21
cp "$TMP/out" "$TMP/fake.json"
if python3 - "$TMP/fake.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "ok" and len(d["results"]) == 2, d
for r in d["results"]:
    S = r["bytes"]
    for op in ("allgather", "alltoall", "lsa_copy", "memcpy_d2d"):
        x = r[op]
        med = 11 * 4 / 10.0  # 21 reps: the 11th of (i+1)*4/10
        assert abs(x["median_ms"] - med) < 1e-4, (op, x)
        assert abs(x["p10_ms"] - 3 * 4 / 10.0) < 1e-4 and abs(x["p90_ms"] - 19 * 4 / 10.0) < 1e-4, x
        alg = S / (med * 1e-3) / 1e9
        assert abs(x["algbw_GBps"] - alg) < 1e-3 * alg, (op, x, alg)
        bus = alg if op == "memcpy_d2d" else alg * 3 / 4
        assert abs(x["busbw_GBps"] - bus) < 1e-3 * bus, (op, x, bus)
        assert x["verified"] is True
    assert abs(r["memcpy_d2d"]["hbm_GBps"] - 2 * r["memcpy_d2d"]["algbw_GBps"]) < 1e-2
PY
then ok "report: slowest rank per repetition, median, algbw, busbw (n-1)/n"
else not_ok "report: slowest rank per repetition, median, algbw, busbw (n-1)/n" "$(head -c 600 "$TMP/fake.json")"; fi
expect_rc "--fake-samples at 1 rank" 0 "$CS" --fake-samples --ranks 1 --sizes 1M
expect_grep "busbw is null at 1 rank (formula gives 0)" "$TMP/out" '"allgather": \{[^}]*"busbw_GBps": null'
expect_rc "--sizes with suffixes" 0 "$CS" --plan --sizes 64MiB,3M,1G --ranks 2 --ops allgather
expect_grep "custom sizes are taken exactly" "$TMP/out" '"sizes": \[67108864, 3145728, 1073741824\]'
expect_grep "--ops narrows the operations" "$TMP/out" '"ops": \["allgather"\]'
expect_rc "size not a multiple of 16 x ranks is refused" 2 "$CS" --plan --sizes 1040 --ranks 8
expect_grep "the refusal names the size and the rule" "$TMP/err" "1040 bytes is not a multiple of 16 x 8 ranks"
expect_rc "fewer than 20 timed repetitions refused" 2 "$CS" --plan --iters 19
expect_grep "the refusal names the option" "$TMP/err" "--iters: '19' is not an integer in 20..1000"
expect_rc "unknown operation refused" 2 "$CS" --plan --ops allgather,allreduce
expect_grep "the refusal names the operation" "$TMP/err" "unknown operation 'allreduce'"
expect_rc "bad size suffix refused" 2 "$CS" --plan --max 4TB
expect_rc "min above max refused" 2 "$CS" --plan --min 2G --max 1G
expect_rc "more than 8 ranks refused" 2 "$CS" --plan --ranks 9
expect_rc "unknown option refused" 2 "$CS" --warp 1
expect_rc "an option without its value refused" 2 "$CS" --plan --max
done_testing

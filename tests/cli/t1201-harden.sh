#!/bin/bash
# Harness hardening (issue 10), what CI can check without a GPU:
#  - one gemm_allgather cheat per mechanism, named on its first line (t0601
#    checks that each edit differs from the seed only inside the EVOLVE
#    block);
#  - tests/gpu/harden.sh's table: every --skip-check name exists in the
#    runtime, every reason word is one the runtime writes;
#  - harden.sh itself (runs, verdicts, harden.json, exit status) against a
#    stand-in binary (HARDEN_FAKE) that behaves like the runtime, and one
#    that lets a cheat through (must be reported, exit 1);
#  - nvcc -arch=sm_90 compiles the runtime's judge and the cheats that need
#    virtual ranks in that mode (t0601 compiles every cheat for real ranks);
#  - a linked workload binary refuses unknown --skip-check names.
. "$(dirname "$0")/lib.sh"
WL=$ROOT/workloads/gemm_allgather
H=$ROOT/tests/gpu/harden.sh
MECHS="fresh-inputs input-hash recv-poison snapshot host-clock perturb-delay perturb-hog perturb-order local-check timed-verify rel-l2"

# One cheat per mechanism, named on its first line.
for m in $MECHS; do
  if grep -lqE "^// CUCO-EXPECT-REJECT: (verify|bench) .*\b$m\b" "$WL"/cheats/*; then ok "a cheat expects mechanism $m"
  else not_ok "a cheat expects mechanism $m" "$(head -qn1 "$WL"/cheats/*)"; fi
done
expect_rc "the cheats as whole sources" 0 "$CUCO" eval "$WL" --write-cheats "$TMP/cheats"

# harden.sh's table against the runtime's vocabulary.
sed -n '/^TABLE="/,/"$/p' "$H" | sed 's/^TABLE="//; s/"$//' >"$TMP/table"
[ "$(wc -l <"$TMP/table")" -eq 15 ] && ok "harden.sh table: 15 rows" || not_ok "harden.sh table: 15 rows" "$(cat "$TMP/table")"
while IFS='|' read -r mech cheat mode skip words extra; do
  [ -f "$WL/cheats/$cheat.edit" ] && ok "$mech: cheat $cheat exists" || not_ok "$mech: cheat $cheat exists" ""
  for sk in $skip; do  # "A --skip-check B": every name exists
    [ "$sk" = --skip-check ] && continue
    grep -q "{\"$sk\", RT_CK_" "$ROOT/runtime/rt_boot.cu" && ok "$mech: --skip-check $sk exists" ||
      not_ok "$mech: --skip-check $sk exists" "not in runtime/rt_boot.cu"
  done
  w=${words%%:*}
  grep -qF "\"$w" "$ROOT"/runtime/rt_judge.cu "$ROOT"/runtime/rt_main.cu "$ROOT"/runtime/rt_boot.cu &&
    ok "$mech: the runtime writes '$w'" || not_ok "$mech: the runtime writes '$w'" ""
  : "$mode" "$extra"
done <"$TMP/table"

# harden.sh with a stand-in binary that behaves as the runtime should:
# a cheat is rejected naming its mechanism unless that one is skipped.
cat >"$TMP/fake" <<'EOF'
#!/bin/bash
out= impl= skip=" " vr=0
while [ $# -gt 0 ]; do case $1 in
  --out) out=$2; shift ;; --impl) impl=$2; shift ;; --skip-check) skip="$skip$2 "; shift ;;
  --vranks) vr=$2; shift ;; esac; shift; done
c=${impl#?_}
case $c in
  cached_output) m=fresh-inputs w="fresh-inputs: replayed" ;; input_mutation) m=input-hash w="input-hash: B" ;;
  masked_recv) m=recv-poison w="recv-poison: 120 NaN" ;; late_write | timing_escape) m=snapshot w="snapshot: late" ;;
  escaped_tail) m=host-clock w="host-clock: 2 ms" ;; no_wait) m=perturb-delay w="perturb-delay: rel-l2" ;;
  hog_race) m=perturb-hog w="perturb-hog: recv-poison" ;; order_race) m=perturb-order w="perturb-order: nan" ;;
  row_error) m=local-check w="local-check: row 199" ;; block_error) m=local-check w="local-check: block 0" ;;
  counted_steps) m=timed-verify w="timed-verify: poison" ;;
  regen_peers) m=secret-inputs w="rel-l2: 1.41 > tol 0.02" ;;
  public_steps) m=secret-steps w="timed-verify: poison"
    [[ "$skip" == *" secret-steps "* ]] && m=speed-of-light w="speed-of-light: faster than the hardware allows" ;;
  *) m= ;;
esac
[ "$c" = "${FAKE_BROKEN:-}" ] && m=
st=ok err= rc=0
if [ -n "$m" ] && [[ "$skip" != *" $m "* ]]; then st=verify_failed err="rank 0 check C: $w" rc=3; fi
n=$(echo "$skip" | wc -w)
printf '{"status": "%s", "error": "%s", "checks_skipped": %d, "protocol_test": %s, "verify": {"checks": []}}\n' \
  "$st" "$err" "$n" "$([ "$vr" -gt 0 ] && echo true || echo false)" >"$out"
exit $rc
EOF
chmod +x "$TMP/fake"
OUT=$TMP/h1 HARDEN_FAKE=$TMP/fake bash "$H" >"$TMP/h1.out" 2>&1
rc=$?
[ $rc -eq 0 ] && ok "harden.sh: all mechanisms necessary -> exit 0" || not_ok "harden.sh: all mechanisms necessary -> exit 0" "exit $rc: $(tail -5 "$TMP/h1.out")"
if python3 - "$TMP/h1/harden.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["all_ok"] is True
m = d["mechanisms"]
want = {"fresh-inputs", "input-hash", "recv-poison", "snapshot", "host-clock", "perturb-delay",
        "perturb-hog", "perturb-order", "local-check", "local-check (block)", "timed-verify",
        "secret-steps", "speed-of-light", "secret-inputs", "secret-inputs (1 rank)"}
assert set(m) == want, set(m) ^ want
for k, v in m.items():
    assert v["necessary"] and v["on"]["rc"] == 3 and v["off"]["rc"] == 0, (k, v)
    assert v["on"]["named"] and v["off"]["checks_skipped"] > 0, (k, v)
    assert ("--skip-check " + v["skip_check"]) in v["off"]["args"], v["off"]["args"]
    assert ("--vranks 2" in v["on"]["args"]) == (v["mode"] == "virtual ranks, R=2"), v
assert m["perturb-order"]["mode"] == "virtual ranks, R=2" and m["perturb-delay"]["mode"] == "virtual ranks, R=2"
assert "--block-tol 0.02" in m["local-check (block)"]["on"]["args"]
assert "--mode bench" in m["timed-verify"]["on"]["args"]
assert "--skip-check secret-steps" in m["speed-of-light"]["on"]["args"]
assert "--vranks 2" in m["secret-inputs"]["on"]["args"]
assert len(d["controls"]) == 6 and all(c["rc"] == 0 for c in d["controls"])
PY
then ok "harden.json: every mechanism on/off with its cheat, controls, modes"
else not_ok "harden.json: every mechanism on/off with its cheat, controls, modes" "$(head -c 800 "$TMP/h1/harden.json")"; fi
n=$(find "$TMP/h1" -type f | wc -l)
[ "$n" -le 8 ] && ok "harden.sh leaves <= 8 files under OUT ($n)" || not_ok "harden.sh leaves <= 8 files under OUT" "$n"
OUT=$TMP/h2 HARDEN_FAKE=$TMP/fake FAKE_BROKEN=hog_race bash "$H" >"$TMP/h2.out" 2>&1
rc=$?
[ $rc -eq 1 ] && ok "harden.sh: a cheat let through -> exit 1" || not_ok "harden.sh: a cheat let through -> exit 1" "exit $rc"
expect_grep "summary marks it" "$TMP/h2/summary.md" "^\| perturb-hog \| hog_race.cu .*\*\*NO\*\* \|$"

# ---- compile checks (nvcc, no GPU)
NVCC=${CUCO_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if ! [ -x "$NVCC" ]; then
  echo "ok $((_n + 1)) # SKIP no nvcc"; _n=$((_n + 1)); done_testing; exit $?
fi
INC=(-I"$ROOT/runtime" -I"$WL")
[ -n "${NCCL_INCLUDE:-}" ] && INC+=(-I"$NCCL_INCLUDE")
NV=("${CCW[@]}" "$NVCC" -arch=sm_90 -std=c++17 "${INC[@]}")
# (make cuda's flags: t0601 and t0701 compile the same, lib.sh nv_wl)
expect_rc "rt_judge.cu compiles (real ranks)" 0 nv_wl "" -- runtime/rt_judge.cu "$TMP/j.o"
expect_rc "rt_vranks.cu compiles (virtual ranks)" 0 nv_wl "" -DCUCO_VRANKS -- runtime/rt_vranks.cu "$TMP/v.o"
# the three in one unit (lib.sh unity_cc: the headers parsed once; an error
# names the cheat's own file and line)
unity_cc "cheats no_wait, order_race, regen_peers compile with -DCUCO_VRANKS (one unit)" -DCUCO_VRANKS -- \
  "$TMP/cheats/no_wait.cu" "$TMP/cheats/order_race.cu" "$TMP/cheats/regen_peers.cu"

# ---- a linked binary's command line, from t0601's objects (build/cuda)
B=${BUILD:-build}
objs=("$ROOT/$B"/cuda/runtime_*.o "$ROOT/$B"/cuda/gemm_allgather_reference.o "$ROOT/$B"/cuda/gemm_allgather_seed.o)
if [ -f "${objs[0]}" ] && "$NVCC" -arch=sm_90 "${objs[@]}" -o "$TMP/bin" -lnccl -lcublas -lcublasLt >"$TMP/link" 2>&1; then
  expect_rc "unknown --skip-check refused" 2 "$TMP/bin" --params M=8,K=8,N=8 --mode verify --out "$TMP/r.json" --skip-check nosuch
  expect_grep "refusal names it" "$TMP/err" "usage error: unknown check 'nosuch'"
  expect_rc "bad --block-tol refused" 2 "$TMP/bin" --params M=8,K=8,N=8 --mode verify --out "$TMP/r.json" --block-tol x
  expect_grep "usage lists --block-tol" "$TMP/err" "\[--block-tol X\]"
else
  echo "ok $((_n + 1)) # SKIP no objects from t0601 or cannot link (libnccl/cuBLAS)"; _n=$((_n + 1))
fi
done_testing

#!/bin/bash
# The GPU scripts (tests/gpu/*.sh) without a GPU (issue 29):
#  - every script parses (bash -n), and shellcheck finds no error or warning
#    in tests/gpu/lib.sh and kv_transfer.sh, moe.sh, flash_attn.sh (with
#    GPU_SCRIPTS_BASE: every script that sources lib.sh), when installed; not
#    SC2054: "--params M=1,K=2" is one word on purpose;
#  - kv_transfer.sh, moe.sh and flash_attn.sh run against a fake toolchain
#    (nvcc that writes objects and stand-in binaries, nvidia-smi, python3
#    that answers the NCCL query and the torch anchors) and issue the
#    expected compiles, links and harness runs, write the TAP/JSON files
#    the bench records read, and exit 0; every cheat is run and rejected;
#    a machine where every first-size run fails with exit 4 stops them
#    (exit 1); a compile that fails is reported and fails the script.
#  - GPU_SCRIPTS_BASE=REV (by hand, not in CI): every script that sources
#    lib.sh is run from REV and from the working tree against the same fakes
#    (./cuco included); the recorded command lines (with the environment the
#    GPU scripts set), the files under $OUT, stdout and the exit status must
#    be identical.  The fakes pin the clock (date) and mktemp's names, so
#    identical means byte for byte.
. "$(dirname "$0")/lib.sh"
[ -n "${GPU_SCRIPTS_KEEP:-}" ] && { trap - EXIT; echo "# kept: $TMP"; }
G=$ROOT/tests/gpu
H=$TMP/h
SCRIPTS="kv_transfer moe flash_attn gemm_ag harden coll_sweep two_rank attn_step gemm_tile eval sandbox
transform evolve workloads compare"

for f in "$G"/*.sh; do
  if bash -n "$f" 2>"$TMP/n.err"; then ok "$(basename "$f") parses"
  else not_ok "$(basename "$f") parses" "$(cat "$TMP/n.err")"; fi
done
if command -v shellcheck >/dev/null; then
  # every script that sources lib.sh when comparing (slow), else the three harnesses
  users=("$G/kv_transfer.sh" "$G/moe.sh" "$G/flash_attn.sh")
  [ -n "${GPU_SCRIPTS_BASE:-}" ] && mapfile -t users < <(grep -l 'tests/gpu/lib.sh\|/lib.sh"' "$G"/*.sh)
  if shellcheck -x -P "$G" -S warning -e SC2054 "$G/lib.sh" "${users[@]}" >"$TMP/sc" 2>&1; then
    ok "shellcheck: lib.sh and its ${#users[@]} users"
  else not_ok "shellcheck: lib.sh and its ${#users[@]} users" "$(head -30 "$TMP/sc")"; fi
else
  echo "ok $((_n + 1)) # SKIP no shellcheck"; _n=$((_n + 1))
fi

# ---- the fakes ----------------------------------------------------------------
mkdir -p "$H/bin" "$H/nccl/include" "$H/nccl/lib" "$H/lib64" "$H/tmp"
: >"$H/nccl/include/nccl.h"; : >"$H/nccl/lib/libnccl.so.2"; : >"$H/lib64/libcublas.so"
REAL_PY=$(PATH=/usr/bin:/bin command -v python3)  # not a pyenv shim: many calls
# rec PROG ARGS...: one line per call, with the environment the scripts set
cat >"$H/bin/rec.sh" <<'EOF'
rec() {
  local e v
  e=""
  for v in NCCL_NVLS_ENABLE NVSHMEM_DISABLE_NVLS TORCH_SYMM_MEM_DISABLE_MULTICAST CUCO_NCCL_HOME \
    LD_LIBRARY_PATH CUCO_CACHE_DIR CUCO_SANDBOX CUDA_DEVICE_MAX_CONNECTIONS CUDA_MODULE_LOADING \
    CUCO_ROOT CUCO_LLM_PROVIDER CUCO_LLM_MODEL CUCO_LLM_BASE_URL CUCO_LLM_API_KEY_ENV \
    CUDA_VISIBLE_DEVICES IN_P1; do
    [ -n "${!v+x}" ] && e="$e $v=${!v}"
  done
  printf '%s |%s\n' "$*" "$e" >>"$FAKE_H/calls.log"
}
EOF
cat >"$H/bin/date" <<'EOF'
#!/bin/bash
exec /bin/date -d @1700000000 "$@"
EOF
cat >"$H/bin/mktemp" <<'EOF'
#!/bin/bash
d=; t=
for a in "$@"; do case $a in -d) d=1 ;; *) t=$a ;; esac; done
n=$(($(cat "$FAKE_H/tmp/.n" 2>/dev/null || echo 0) + 1)); echo "$n" >"$FAKE_H/tmp/.n"
p=$FAKE_H/tmp/$(basename "${t:-tmp.XXXXXX}" | sed "s/XXXXXX\$/$(printf %06d "$n")/")
if [ -n "$d" ]; then mkdir -p "$p"; else : >"$p"; fi
echo "$p"
EOF
cat >"$H/bin/nvidia-smi" <<'EOF'
#!/bin/bash
. "$FAKE_H/bin/rec.sh"; rec nvidia-smi "$@"
case " $* " in
  *" -L "*) echo "GPU 0: NVIDIA H200 (UUID: GPU-fake)" ;;
  *" topo "*) echo "GPU0 X" ;;
  *) echo "NVIDIA H200, 580.00, 1980 MHz, 1980 MHz" ;;
esac
EOF
# nvcc: -c writes an object naming its source; a link writes a stand-in binary.
cat >"$H/bin/nvcc" <<'EOF'
#!/bin/bash
. "$FAKE_H/bin/rec.sh"; rec nvcc "$@"
[ "$1" = --version ] && { echo "nvcc fake"; echo "Cuda compilation tools, release 13.0, V13.0.88"; echo "Build fake"; exit 0; }
o= c= src=
while [ $# -gt 0 ]; do
  case $1 in -o) o=$2; shift ;; -c) c=1 ;; *.cu) src="$src $1" ;; esac; shift
done
if [ -n "${FAKE_NVCC_FAIL:-}" ] && [[ "$src" =~ $FAKE_NVCC_FAIL ]]; then echo "$src: error: fake" >&2; exit 1; fi
if [ -n "$c" ]; then echo "obj$src" >"$o"; exit 0; fi
printf '#!/bin/bash\nexec "%s/bin/fakebin" "$0" "$@"\n' "$FAKE_H" >"$o" && chmod +x "$o"
EOF
# fakebin BIN ARGS...: a workload harness binary (RESULT.json as the runtime
# writes it), or one of the bench programs.
cat >"$H/bin/fakebin" <<'EOF'
#!/bin/bash
. "$FAKE_H/bin/rec.sh"
self=$1; shift
rec "bin:${self#"$FAKE_H"/}" "$@"
out= impl= mode= size= vr=0 odir=
while [ $# -gt 0 ]; do
  case $1 in --out) out=$2; odir=$2; shift ;; --impl) impl=$2; shift ;; --mode) mode=$2; shift ;;
    --size-name) size=$2; shift ;; --vranks) vr=$2; shift ;; esac; shift
done
case $(basename "$self") in
  attn_step_bench*)
    echo "PASS fake"; echo "BENCH S=8192 fake"
    echo '{"device": "fake", "results": [{"S": 8192, "full_tflops": 100.0, "step_tflops": 110.0, "verified": true}]}' \
      >"$odir/attn_step_bench.json"; exit 0 ;;
  gemm_tile_bench) echo "PASS dense fake"; echo "BENCH fake"; exit 0 ;;
  gemm_bench) echo "{\"shape\": \"$1:$2\", \"median_ms\": 1.0}"; exit 0 ;;
  coll_sweep)
    echo '{"ops": ["allgather"], "ranks": 1, "results": [{"MiB": 1, "allgather": {"busbw_GBps": 1.5, "verified": true}}]}' >"$out"
    exit 0 ;;
esac
rc=${FAKE_BIN_RC:-0} st=ok err=
case $impl in *cheat_*) rc=3 st=verify_failed err="rank 0: nan: 3 poison: 4 rel-l2: 1 local-check: row 1" ;; esac
t=
[ "$mode" = bench ] && t=',\n "timing": {"median_ms": 2.0, "p10_ms": 1.9, "p90_ms": 2.1, "ci95_lo_ms": 1.95, "ci95_hi_ms": 2.05, "host_median_ms": 2.2, "steps": 20}'
[ "$rc" = 4 ] && { echo "setup error (fake)" >&2; exit 4; }
[ -n "$out" ] && printf '{"impl": "%s", "size": "%s", "mode": "%s", "vranks": %d, "status": "%s", "error": "%s"%b, "verify": {"checks": [{"rel_l2": 0.001, "poison": 0, "passed": true}]}}\n' \
  "$impl" "$size" "$mode" "$vr" "$st" "$err" "$t" >"$out"
echo "stderr of $impl" >&2
exit "$rc"
EOF
cat >"$H/bin/python3" <<EOF
#!/bin/bash
. "\$FAKE_H/bin/rec.sh"
case "\$1 \$2" in
  *nvidia.nccl*) rec python3 nccl-query; echo "\$FAKE_H/nccl"; exit 0 ;;
  *_torch.py*|*sdpa*) rec python3 "\$@"; echo '{}'; exit 0 ;;
esac
if [ "\$1" = - ]; then
  cat >"\$FAKE_H/py.\$\$"; rec python3 "\$@" "sha=\$(sha1sum <"\$FAKE_H/py.\$\$" | cut -c1-12)"
  "$REAL_PY" "\$@" <"\$FAKE_H/py.\$\$"; rc=\$?; rm -f "\$FAKE_H/py.\$\$"; exit \$rc
fi
rec python3 "\$@"
exec "$REAL_PY" "\$@"
EOF
cat >"$H/bin/compute-sanitizer" <<'EOF'
#!/bin/bash
. "$FAKE_H/bin/rec.sh"; rec compute-sanitizer "$@"; echo "========= ERROR SUMMARY: 0 errors"
EOF
cat >"$H/bin/cuobjdump" <<'EOF'
#!/bin/bash
echo " HMMA.16816"; echo " HGMMA.64x128"
EOF
cat >"$H/bin/fakellm" <<'EOF'
#!/bin/bash
. "$FAKE_H/bin/rec.sh"; rec fakellm "$@"; echo "port 40000"; exec sleep 30
EOF
# ./cuco: the subcommands the scripts use, each with plausible files.
cat >"$H/bin/cuco" <<EOF
#!/bin/bash
. "\$FAKE_H/bin/rec.sh"; rec cuco "\$@"
PY=$REAL_PY
REAL_CUCO=$CUCO
EOF
cat >>"$H/bin/cuco" <<'EOF'
# the cheats as whole sources: the real cuco writes them (no GPU needed)
if [ "$1" = eval ] && [[ " $* " == *" --write-cheats "* ]]; then exec "$REAL_CUCO" "$@"; fi
out= json= o= a
for a in "$@"; do
  case $a in --json) json=1 ;; esac
done
set -- "$@" ""
args=("$@")
for ((i = 0; i < ${#args[@]} - 1; i++)); do
  case ${args[i]} in --out) out=${args[i+1]} ;; -o) o=${args[i+1]} ;; esac
done
case $1 in
  --version) echo "cuco 0.fake" ;;
  doctor) [ -n "$o" ] && echo '{"gpus": 1}' >"$o"; printf 'cuco 0.fake\ngpus: 1 x H200\nsandbox: auto\n' ;;
  eval)
    mkdir -p "$out/seed"; echo "build of $*" >"$out/seed/build.log"; echo "run of $*" >"$out/seed/run.log"
    echo '{"replay": {"secret": "5ec"}}' >"$out/seed/RESULT.json"
    if [[ "$*" == *c32_t1024.cu*"--vranks 8"* ]]; then echo "error: co-residency: refused" >&2; exit 1; fi
    echo "seed.cu: ok" >&2
    [ -n "$json" ] && echo '[{"impl": "seed.cu", "status": "ok", "metrics": {"bench": {"short": {"timing": {"median_ms": 1.0}}}}, "vs_bar": {"short": {"median_ms": 1.0, "bar": "B", "bar_ms": 1.1, "speedup": 1.1}}}]'
    exit "${FAKE_CUCO_RC:-0}" ;;
  evolve)
    mkdir -p "$out"; echo "// best" >"$out/best.cu"
    "$PY" -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("create table if not exists programs(status, edit_kind)"); d.execute("insert into programs values (?, ?)", ("ok", "param")); d.commit()' "$out/run.db"
    echo "evolve: 1 candidate" ;;
  transform)
    mkdir -p "$2/transform"; echo '{"verified": true}' >"$2/transform/transform.json"; echo "// seed" >"$2/transform/seed.cu" ;;
esac
exit 0
EOF
chmod +x "$H"/bin/*

# run_one LABEL SCRIPT_FILE [VAR=VALUE...]: the script as tests/gpu/NAME.sh of
# a fresh tree at $H/tree (the same path every time), its outputs to $H/res/LABEL.
tree() {
  rm -rf "$H/tree" "$H/tmp" "$H/out" "$H/calls.log"
  mkdir -p "$H/tree/tests" "$H/tmp" "$H/out"
  cp -r "$ROOT/workloads" "$ROOT/runtime" "$ROOT/bench" "$ROOT/examples" "$H/tree/"
  cp -r "$G" "$H/tree/tests/gpu"
  cp "$H/bin/cuco" "$H/tree/cuco"
  : >"$H/calls.log"
}
run_one() {
  local label=$1 src=$2 name; shift 2
  name=$(basename "$src")
  tree
  [ "$src" -ef "$G/$name" ] || cp "$src" "$H/tree/tests/gpu/$name"
  (cd "$H/tree" && env -i PATH="$H/bin:/usr/bin:/bin" HOME="$TMP" LANG=C.UTF-8 FAKE_H="$H" OUT="$H/out" \
    KV_BUILD="$H/tmp/kvb" MOE_BUILD="$H/tmp/moeb" ATTN_BUILD="$H/tmp/attnb" NVCC="$H/bin/nvcc" \
    FAKELLM="$H/bin/fakellm" RUN_DIR="$H/tmp/evolve-run" "$@" \
    timeout 180 bash "tests/gpu/$name" >"$H/stdout" 2>&1)
  echo $? >"$H/rc"
  rm -rf "$H/res/$label" && mkdir -p "$H/res/$label"
  sort "$H/calls.log" >"$H/res/$label/calls.sorted"
  mv "$H/out" "$H/res/$label/OUT"
  mv "$H/stdout" "$H/rc" "$H/res/$label/"
  mv "$H/calls.log" "$H/res/$label.calls"  # in the order of the calls: not compared
}
R=$H/res

# ---- kv_transfer, moe_dsv3, flash_attn_cp against the fakes ------------------------
# the cheats the scripts verify: all but those only the bench exposes
ncheat() { grep -L '^// CUCO-EXPECT-REJECT: bench ' "$ROOT/workloads/$1/cheats"/*.cu "$ROOT/workloads/$1/cheats"/*.edit 2>/dev/null | wc -l; }
[ -n "${GPU_SCRIPTS_ONLY:-}" ] && { run_one only "$G/$GPU_SCRIPTS_ONLY.sh"; exit; }
if [ -z "${GPU_SCRIPTS_LIST:-}" ]; then
run_one kv "$G/kv_transfer.sh"
nkv=$(ncheat kv_transfer) nrt=$(find "$ROOT/runtime" -maxdepth 1 -name '*.cu' | wc -l)
[ "$(cat "$R/kv/rc")" = 0 ] && ok "kv_transfer.sh: exit 0 against the fakes" ||
  not_ok "kv_transfer.sh: exit 0 against the fakes" "exit $(cat "$R/kv/rc"): $(tail -5 "$R/kv/stdout")"
# compiles: runtime + reference, 10 implementations + the cheats, then the
# --vranks runtime + reference and 6 implementations
want=$((nrt + 1 + 10 + nkv + nrt + 1 + 6))
got=$(grep -c '^nvcc .* -c ' "$R/kv.calls")
[ "$got" -eq "$want" ] && ok "kv_transfer.sh: $want compiles" || not_ok "kv_transfer.sh: $want compiles" "got $got"
got=$(grep -c '^nvcc -arch=sm_90 -o ' "$R/kv.calls")
[ "$got" -eq $((10 + nkv + 6)) ] && ok "kv_transfer.sh: every binary linked" || not_ok "kv_transfer.sh: every binary linked" "got $got"
expect_grep "kv_transfer.sh: links against the package's NCCL, its rpath, CUDA's lib64" "$R/kv.calls" \
  "^nvcc -arch=sm_90 -o $H/tmp/kvb/seed .*/rt_rt_main.o .* $H/tmp/kvb/seed.o -L$H/tmp/kvb/lib -L.* -Xlinker -rpath -Xlinker $H/nccl/lib .*-lnccl \|"
expect_grep "kv_transfer.sh: compiles with the package's NCCL headers" "$R/kv.calls" \
  "^nvcc -gencode=arch=compute_90a,code=sm_90a -std=c\+\+17 -O3 -lineinfo -I$H/nccl/include -I.*/runtime -I.*/workloads/kv_transfer -DCUCO_PARAM_direction=pull -c .*/seed.cu -o $H/tmp/kvb/seed_pull.o"
expect_grep "kv_transfer.sh: a harness run as the runtime's CLI wants it, with the NVLS switches" "$R/kv.calls" \
  "^bin:tmp/kvb/seed --params L=2,DM=64,HKV=1,HD=64,NREQ=2,LEN=32 --size-name v_tiny --mode verify --rank 0 --nranks 1 --seed 12345 --tol 5e-3 --impl seed --workload kv_transfer --out $H/tmp/kvb/res.json --perturb \| NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 LD_LIBRARY_PATH=/.*:$H/nccl/lib:"
expect_grep "kv_transfer.sh: --vranks runs" "$R/kv.calls" "^bin:tmp/kvb/vr/seed_tile_pull .* --vranks 4 .*--impl seed_tile_pull_vr4 "
got=$(grep -c '^bin:.*/cheat_.* --mode verify ' "$R/kv.calls")
[ "$got" -eq "$nkv" ] && ok "kv_transfer.sh: every cheat run" || not_ok "kv_transfer.sh: every cheat run" "got $got of $nkv"
if python3 - "$R/kv/OUT" "$nkv" <<'PY'
import json, os, sys
d, nkv = sys.argv[1], int(sys.argv[2])
assert sorted(os.listdir(d)) == ["build.log", "kv_transfer.tap", "results.jsonl", "runs.log", "summary.json"], os.listdir(d)
s = json.load(open(os.path.join(d, "summary.json")))
runs = s["runs"]
assert set(s["bench"]) == {"short", "mid", "long"}
b = s["bench"]["mid"]
assert b["B_ms"] == 2.0 and b["seed_pull_over_B"] == 1.0 and b["seed_over_B (goal <= 1.03)"] == 1.0, b
ch = [r for r in runs if r["impl"].startswith("cheat_")]
assert len(ch) == nkv and all(r["rc"] == 3 and r["status"] == "verify_failed" for r in ch), ch
assert all(r["status"] is not None for r in runs), [r for r in runs if r["status"] is None]
assert len(open(os.path.join(d, "results.jsonl")).read().splitlines()) == len(runs)
tap = open(os.path.join(d, "kv_transfer.tap")).read()
assert "not ok" not in tap and tap.rstrip().endswith("1..%d" % tap.count("\nok ")), tap[-300:]
PY
then ok "kv_transfer.sh: summary.json (bench table, every run with its RESULT.json), TAP, 5 files"
else not_ok "kv_transfer.sh: summary.json (bench table, every run with its RESULT.json), TAP, 5 files" "see above"; fi

run_one kv4 "$G/kv_transfer.sh" FAKE_BIN_RC=4
[ "$(cat "$R/kv4/rc")" = 1 ] && ok "kv_transfer.sh: nothing runs -> exit 1" || not_ok "kv_transfer.sh: nothing runs -> exit 1" "exit $(cat "$R/kv4/rc")"
expect_grep "kv_transfer.sh: ... and says why" "$R/kv4/OUT/kv_transfer.tap" "every v_tiny run failed with exit 4"
got=$(grep -c '^bin:' "$R/kv4.calls")
[ "$got" -eq 3 ] && ok "kv_transfer.sh: stops after the first size (3 runs)" || not_ok "kv_transfer.sh: stops after the first size" "$got runs"

run_one moe "$G/moe.sh"
nmoe=$(ncheat moe_dsv3)
[ "$(cat "$R/moe/rc")" = 0 ] && ok "moe.sh: exit 0 against the fakes" ||
  not_ok "moe.sh: exit 0 against the fakes" "exit $(cat "$R/moe/rc"): $(tail -5 "$R/moe/stdout")"
got=$(grep -c '^nvcc .* -c ' "$R/moe.calls") want=$((2 * (nrt + 1) + 7 + 2 * nmoe))
[ "$got" -eq "$want" ] && ok "moe.sh: $want compiles" || not_ok "moe.sh: $want compiles" "got $got"
expect_grep "moe.sh: gemm_bench built" "$R/moe.calls" "^nvcc -arch=sm_90 -std=c\+\+17 -O3 -o $H/tmp/moeb/gemm_bench .*gemm_bench.cu -L.* -lcublas \|"
expect_grep "moe.sh: --vranks binaries get no --rank" "$R/moe.calls" "^bin:tmp/moeb/v_seed --params T=4096,E=2,G=1,TG=1,K=1,NOSH=1,MODE=1,RHO=200 --size-name paper_2 --mode verify --seed 12345 --tol 1e-2 --impl v_seed --workload moe_dsv3 --out $H/tmp/moeb/res.json --vranks 2 \|"
got=$(grep -c '^bin:tmp/moeb/gemm_bench ' "$R/moe.calls")
[ "$got" -eq 5 ] && ok "moe.sh: 5 GEMM anchors" || not_ok "moe.sh: 5 GEMM anchors" "$got"
if python3 - "$R/moe/OUT" "$nmoe" <<'PY'
import json, os, sys
d, n = sys.argv[1], int(sys.argv[2])
assert sorted(os.listdir(d)) == ["build.log", "gemm.json", "moe.tap", "results.jsonl", "runs.log", "summary.json"], os.listdir(d)
s = json.load(open(os.path.join(d, "summary.json")))
assert s["bench_R1"]["prefill"]["seed_vs_B"] == 1.0 and "cublas" in s["gemm"]
ch = [r for r in s["runs"] if "cheat_" in r["impl"]]
assert len(ch) == 3 * n and all(r["rc"] == 3 for r in ch), len(ch)
assert all(r["args"] == "--vranks 2" for r in ch if r["impl"].startswith("v_"))
PY
then ok "moe.sh: summary.json, gemm.json, 6 files"; else not_ok "moe.sh: summary.json, gemm.json, 6 files" "see above"; fi

run_one fa "$G/flash_attn.sh"
nfa=$(ncheat flash_attn_cp)
[ "$(cat "$R/fa/rc")" = 0 ] && ok "flash_attn.sh: exit 0 against the fakes" ||
  not_ok "flash_attn.sh: exit 0 against the fakes" "exit $(cat "$R/fa/rc"): $(grep -A1 '^not ok' "$R/fa/stdout" | head -6)"
got=$(grep -c '^nvcc -arch=sm_90 -o ' "$R/fa.calls") want=$((3 + 3 * 2 + 2 * nfa))
[ "$got" -eq "$want" ] && ok "flash_attn.sh: $want links (real and vr)" || not_ok "flash_attn.sh: $want links" "got $got"
got=$(grep -c '^bin:tmp/attnb/vr_cheat_.* --vranks [24] ' "$R/fa.calls")
[ "$got" -eq $((2 * nfa)) ] && ok "flash_attn.sh: every cheat at R = 2 and 4" || not_ok "flash_attn.sh: every cheat at R = 2 and 4" "$got"
if python3 - "$R/fa/OUT" <<'PY'
import json, os, sys
d = sys.argv[1]
assert sorted(os.listdir(d)) == ["build.log", "flash_attn.tap", "results.jsonl", "runs.log", "summary.json"], os.listdir(d)
s = json.load(open(os.path.join(d, "summary.json")))
assert s["bench"]["short"]["seed_over_bar (goal <= 1.03 at R=1)"] == 1.0
assert {r["vranks"] for r in s["runs"]} == {0, 2, 4, 8}
PY
then ok "flash_attn.sh: summary.json with the bar and the vranks rows"; else not_ok "flash_attn.sh: summary.json" "see above"; fi
run_one fa_part "$G/flash_attn.sh" PART=bench FAKE_NVCC_FAIL=baseline_allgather
[ "$(cat "$R/fa_part/rc")" = 1 ] && ok "flash_attn.sh: a compile fails -> exit 1" || not_ok "flash_attn.sh: a compile fails -> exit 1" "exit $(cat "$R/fa_part/rc")"
expect_grep "flash_attn.sh: ... named in the TAP log" "$R/fa_part/OUT/flash_attn.tap" "^not ok [0-9]+ - build real C$"
expect_grep "flash_attn.sh: ... and its run 'not built'" "$R/fa_part/OUT/flash_attn.tap" "^not ok [0-9]+ - C short bench --warmup 3 --iters 20 --min-time 0.5$"

# seed_bar.sh (issue 24): a seed and a directive variant through cuco eval only
run_one sb "$G/seed_bar.sh" WL=kv_transfer VARIANT=placement=deferred SIZES=short
[ "$(cat "$R/sb/rc")" = 0 ] && ok "seed_bar.sh: exit 0 against the fakes" ||
  not_ok "seed_bar.sh: exit 0 against the fakes" "exit $(cat "$R/sb/rc"): $(tail -5 "$R/sb/stdout")"
expect_grep "seed_bar.sh: the variant is the seed with that directive" "$R/sb/OUT/kv_transfer.txt" \
  "^variant: placement=deferred .*CUCO-DIRECTIVES backend=lsa placement=deferred sync=per_peer"
expect_grep "seed_bar.sh: the variant against the bar per size" "$R/sb/OUT/kv_transfer.txt" \
  "^variant vs bar B at short: 1.1 / 1 ms = 1.100x$"
expect_grep "seed_bar.sh: the variant compiled, verified, then benched" "$R/sb.calls" \
  "^cuco eval workloads/kv_transfer --candidate .*/tile.cu --json --sizes short"

# harden_wl.sh (issue 22): against the fakes nothing is rejected and no binary
# is built, so no mechanism may be reported necessary (exit 1, every row NO)
run_one hw "$G/harden_wl.sh"
[ "$(cat "$R/hw/rc")" = 1 ] && ok "harden_wl.sh: exit 1 when the cheats are not rejected" ||
  not_ok "harden_wl.sh: exit 1 when the cheats are not rejected" "exit $(cat "$R/hw/rc"): $(tail -5 "$R/hw/stdout")"
got=$(grep -c '^| [a-z0-9_]* | [a-z-]* | .* | \*\*NO\*\* |$' "$R/hw/OUT/harden_wl.md")
[ "$got" = 9 ] && ok "harden_wl.sh: 3 workloads x 3 mechanisms, none necessary" ||
  not_ok "harden_wl.sh: 3 workloads x 3 mechanisms, none necessary" "$got rows: $(cat "$R/hw/OUT/harden_wl.md")"
expect_grep "harden_wl.sh: public_steps at a sampled bench size (moe prefill)" "$R/hw.calls" \
  "^cuco eval workloads/moe_dsv3 --candidate .*/public_steps.cu --out .* --timeout 60 --sizes prefill "
expect_grep "harden_wl.sh: ... (flash_attn_cp mid)" "$R/hw.calls" \
  "^cuco eval workloads/flash_attn_cp --candidate .*/public_steps.cu --out .* --timeout 60 --sizes mid "
expect_grep "harden_wl.sh: regen_inputs at a verify size, no bench" "$R/hw.calls" \
  "^cuco eval workloads/kv_transfer --candidate .*/regen_inputs.cu --out .* --timeout 60 --sizes v_small --no-bench "

fi  # GPU_SCRIPTS_LIST

# ---- before/after: GPU_SCRIPTS_BASE=REV ----------------------------------------------
# variants NAME: the settings each script is compared under, ';' between them
variants() {
  case $1 in
    kv_transfer) echo "-;FAKE_BIN_RC=4;FAKE_NVCC_FAIL=seed;KV_PART=new KV_VRANKS=0" ;;
    moe) echo "-;PART=quick;FAKE_NVCC_FAIL=cheats;FAKE_BIN_RC=4" ;;
    flash_attn) echo "-;PART=bench;PART=verify FAKE_NVCC_FAIL=cheats;FAKE_BIN_RC=4" ;;
    gemm_ag) echo "-;ONLY=tile;QUICK=1 FAKE_NVCC_FAIL=cheats;CUCO_NCCL_HOME=/nonexistent" ;;
    harden) echo "-;FAKE_NVCC_FAIL=cheats;CUCO_NCCL_HOME=/nonexistent" ;;
    coll_sweep|two_rank|compare) echo "-;RANKS=2 FAKE_NVCC_FAIL=coll;CUCO_NCCL_HOME=/nonexistent" ;;
    attn_step|gemm_tile) echo "-;FAKE_NVCC_FAIL=bench" ;;
    eval|sandbox|transform|evolve) echo "-;FAKE_CUCO_RC=1 RANKS=2;CUCO_NCCL_HOME=/x CUCO_CACHE_DIR=/y" ;;
    workloads) echo "-;WLS=kv_transfer BENCH=0;FAKE_CUCO_RC=1" ;;
    *) echo "-" ;;
  esac
}
if [ -n "${GPU_SCRIPTS_BASE:-}" ]; then
  for s in ${GPU_SCRIPTS_LIST:-$SCRIPTS}; do
    git -C "$ROOT" show "$GPU_SCRIPTS_BASE:tests/gpu/$s.sh" >"$TMP/before.sh" || continue
    IFS=';' read -ra vs <<<"$(variants "$s")"
    for v in "${vs[@]}"; do
      [ "$v" = - ] && v=
      # shellcheck disable=SC2086
      run_one before "$TMP/before.sh" $v
      # shellcheck disable=SC2086
      run_one after "$G/$s.sh" $v
      # what is not the script's to order: parallel compiles appending to one
      # build.log, and a tar.gz's member times (the files' own mtimes)
      for x in before after; do
        find "$R/$x/OUT" -name build.log -exec sort -o {} {} \;
        find "$R/$x/OUT" -name '*.tar.gz' | while read -r z; do
          { tar -tzf "$z"; tar -xzOf "$z" | sha1sum; } >"$z.contents" && rm -f "$z"
        done
      done
      if diff -r "$R/before" "$R/after" >"$TMP/d"; then
        ok "$s.sh ${v:-(defaults)}: as $GPU_SCRIPTS_BASE ($(wc -l <"$R/after.calls") calls, $(find "$R/after/OUT" -type f | wc -l) files, exit $(cat "$R/after/rc"))"
      else not_ok "$s.sh ${v:-(defaults)}: as $GPU_SCRIPTS_BASE" "$(head -40 "$TMP/d")"; fi
    done
  done
fi
done_testing

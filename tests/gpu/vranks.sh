#!/bin/bash
# tests/gpu/vranks.sh - virtual-rank protocol tests on ONE GPU (issue 17).
# R virtual ranks share the GPU through the emulation (runtime/vnccl.cuh);
# these are protocol tests, never performance numbers.
#
# Run from the repository root on the GPU machine (one H200 is enough):
#   OUT=/some/dir bash tests/gpu/vranks.sh          # everything (about 5 min)
#   PART=proto OUT=... bash tests/gpu/vranks.sh     # only the standalone protocol harness
#   PART=runtime OUT=... bash tests/gpu/vranks.sh   # only the runtime's --vranks mode
#   PART=quick OUT=... bash tests/gpu/vranks.sh     # runtime mode, trimmed (< 90 s): the
#     seed at R=2,4,8 (small sizes), the three two-rank cheats at R=2, the
#     baseline's refusal; no standalone harness, no other cheats
# Writes to $OUT (at most 8 files): vranks.tap (TAP log), vranks.json (one
# result object per test run, all "protocol_test": true), vranks.log (the
# harness's stderr/stdout), build.log. Exit status 0 when every check passed.
set -u
PART=${PART:-all}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/build/gpu-vranks}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export CUDA_DEVICE_MAX_CONNECTIONS=32
# Not exported on purpose: the runtime's --vranks mode must itself force
# eager module loading (lazy loading deadlocked it on the first H200 run).
unset CUDA_MODULE_LOADING
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
# NCCL 2.28.9 headers: the python package on the GPU machines, else CUDA's.
NCCL_DIR=${NCCL_DIR:-$(python3 -c 'import nvidia.nccl,os;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)}
[ -n "$NCCL_DIR" ] && export LD_LIBRARY_PATH=$NCCL_DIR/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
INC=(-I"$ROOT/runtime" -I"$ROOT/tests/gpu")
[ -n "$NCCL_DIR" ] && [ -d "$NCCL_DIR/include" ] && INC+=(-I"$NCCL_DIR/include")
BIN=$OUT/vranks_proto
TAP=$OUT/vranks.tap JSON=$OUT/vranks.json LOG=$OUT/vranks.log
: >"$TAP"; : >"$JSON"; : >"$LOG"
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1" | tee -a "$TAP"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1" | tee -a "$TAP"; echo "# $2" | tee -a "$TAP"; }

# 3 s barrier/flag timeout so the deliberate hang ends quickly.
if [ "$PART" = quick ]; then :
elif ! "$NVCC" -arch=sm_90 -std=c++17 -O3 -lineinfo -DCUCO_VRANKS \
    -DVNCCL_WAIT_TIMEOUT_NS=3000000000ull "${INC[@]}" -o "$BIN" \
    "$ROOT/tests/gpu/vranks_proto.cu" "$ROOT/runtime/vnccl_host.cu" >"$OUT/build.log" 2>&1; then
  not_ok "build vranks_proto" "$(tail -5 "$OUT/build.log")"
  echo "1..$n" >>"$TAP"; exit 1
else ok "build vranks_proto"
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$LOG" 2>&1

# run NAME WANT_RC ARGS...: one harness run; WANT_RC 0 = passes, 3 = protocol
# errors must be found, 4 = the kernel must fail (trap) with a message.
run() {
  local name=$1 want=$2; shift 2
  local res=$OUT/res.json
  rm -f "$res"
  echo "== $name: $*" >>"$LOG"
  timeout 60 "$BIN" "$@" --out "$res" >>"$LOG" 2>"$OUT/stderr.txt"; local rc=$?
  cat "$OUT/stderr.txt" >>"$LOG"
  [ -f "$res" ] && cat "$res" >>"$JSON"
  if [ "$rc" -eq "$want" ]; then ok "$name (exit $rc)"
  else not_ok "$name" "exit $rc, wanted $want: $(tail -3 "$OUT/stderr.txt")"; fi
}

if [ "$PART" != runtime ] && [ "$PART" != quick ]; then
for R in 2 4 8; do
  run "barrier ordering, CTA coop, R=$R" 0 --test barrier_cta --vranks "$R" --iters 50
  run "barrier ordering, warp coop, R=$R" 0 --test barrier_warp --vranks "$R" --iters 50
  run "peer pointers (4 ways), R=$R" 0 --test peers --vranks "$R"
  run "epochs across 200 launches, R=$R" 0 --test epochs --vranks "$R" --iters 50
  run "all-gather with barriers, one rank late per step, R=$R" 0 --test allgather --vranks "$R" --steps 6
  run "all-gather with sequence flags, R=$R" 0 --test flag_ok --vranks "$R" --steps 6
done
run "peer pointers with 2 LSA teams of 2 (R=4)" 0 --test peers --vranks 4 --lsa 2
run "all-gather with 2 LSA teams of 4 (R=8)" 0 --test allgather --vranks 8 --lsa 4 --steps 4
# Cheats that need two ranks to show: each must be caught (exit 3).
run "cheat: consumer reads before waiting is caught, R=2" 3 --test cheat_nowait --vranks 2 --steps 6
run "cheat: a rank skipping its sends is caught, R=2" 3 --test cheat_skip --vranks 2 --steps 3
run "cheat: stale constant flags are caught, R=2" 3 --test cheat_stale --vranks 2 --steps 6
# Deliberate faults: the emulation turns them into a failed kernel + message.
run "a rank that never arrives: barrier wait times out, R=2" 4 --test hang --vranks 2
if grep -q "ncclLsaBarrierSession::wait timed out" "$LOG"; then ok "timeout message names the barrier wait"
else not_ok "timeout message names the barrier wait" "no message in $LOG"; fi
run "world rank passed as LSA peer is trapped (R=4, LSA 2)" 4 --test bad_peer --vranks 4 --lsa 2
if grep -q "ncclGetLsaPointer: LSA peer out of range" "$LOG"; then ok "bad peer message names ncclGetLsaPointer"
else not_ok "bad peer message names ncclGetLsaPointer" "no message in $LOG"; fi
# Co-residency: the largest grid whose R copies fit passes, one CTA more is refused.
run "co-residency check accepts the limit and refuses one CTA more, R=8" 0 --test coresidency --vranks 8
fi

# ---- The runtime's --vranks mode: the whole harness (fresh inputs, poison,
# snapshots, input hashes, per-rank verification, one rank late per step)
# with R virtual ranks, on an LSA GEMM+AllGather (tests/gpu/vranks_gemm_ag.cu)
# against workloads/gemm_allgather's trusted reference.
WL=$ROOT/workloads/gemm_allgather
if [ "$PART" != proto ] && [ -f "$WL/reference.cu" ] && [ -f "$ROOT/runtime/rt_main.cu" ]; then
  LIBS=(-lcublasLt -lcublas)
  if [ -n "$NCCL_DIR" ] && [ -f "$NCCL_DIR/lib/libnccl.so.2" ]; then
    LIBS+=(-L"$NCCL_DIR/lib" -lnccl -Xlinker -rpath -Xlinker "$NCCL_DIR/lib")  # nvcc takes no .so path
  else LIBS+=(-lnccl); fi
  OBJ=$OUT/obj; mkdir -p "$OBJ"
  . "$ROOT/tests/gpu/cheats.sh"
  CH=$(mktemp -d /tmp/cuco-vranks-cheats.XXXXXX)  # whole sources (edits of the seed), not under OUT
  gpu_cheats "$WL" "$CH" || exit 2
  NVF=(-arch=sm_90 -std=c++17 -O3 -DCUCO_VRANKS "${INC[@]}" -I"$WL")
  pids=()
  cc() { # object source defines...: one compile in the background
    local o=$1 src=$2; shift 2
    "$NVCC" "${NVF[@]}" "$@" -DCUCO_WORKLOAD_NAME='"gemm_allgather"' -DCUCO_IMPL_NAME="\"$o\"" \
      -c "$src" -o "$OBJ/$o.o" >>"$OUT/build.log" 2>&1 || echo "BUILD FAIL $o" >>"$OUT/build.log"
  }
  RTO=()
  for f in "$ROOT"/runtime/*.cu "$WL/reference.cu"; do
    o=rt_$(basename "$f" .cu); RTO+=("$OBJ/$o.o"); cc "$o" "$f" & pids+=($!)
  done
  cc vranks_gemm_ag "$ROOT/tests/gpu/vranks_gemm_ag.cu" & pids+=($!)
  cc cheat "$ROOT/tests/gpu/vranks_gemm_ag.cu" -DVR_CHEAT=1 & pids+=($!)
  cc baseline "$WL/baseline.cu" & pids+=($!)
  IMPLS=(vranks_gemm_ag cheat baseline)
  if [ -f "$WL/seed.cu" ] && [ "$PART" = quick ]; then
    cc seed "$WL/seed.cu" & pids+=($!)
    IMPLS+=(seed)
  elif [ -f "$WL/seed.cu" ]; then
    cc seed "$WL/seed.cu" & pids+=($!)
    cc seed_global "$WL/seed.cu" -DCUCO_SYNC=CUCO_SYNC_GLOBAL -DCUCO_PLACEMENT=CUCO_PLACEMENT_DEFERRED -DCUCO_ISSUER=CUCO_ISSUER_WARP & pids+=($!)
    cc seed_chunk "$WL/seed.cu" -DCUCO_SYNC=CUCO_SYNC_PER_CHUNK -DCUCO_ISSUER=CUCO_ISSUER_THREAD -DCUCO_CHUNK_BYTES=65536 & pids+=($!)
    IMPLS+=(seed seed_global seed_chunk)
  fi
  for c in "$CH"/*.cu; do
    [ -f "$c" ] || continue
    cn=cheat_$(basename "$c" .cu)
    if [ "$PART" = quick ]; then
      case $cn in cheat_stale_flags | cheat_skip_rank | cheat_no_wait) ;; *) continue ;; esac
    fi
    IMPLS+=("$cn"); cc "$cn" "$c" & pids+=($!)
  done
  wait "${pids[@]}"
  bok=1; grep -q "BUILD FAIL" "$OUT/build.log" && bok=0
  if [ "$bok" = 1 ]; then
    lpids=()  # links in parallel too
    for impl in "${IMPLS[@]}"; do
      { "$NVCC" -arch=sm_90 -o "$OBJ/$impl" "${RTO[@]}" "$OBJ/$impl.o" "${LIBS[@]}" >>"$OUT/build.log" 2>&1 ||
          echo "LINK FAIL $impl" >>"$OUT/build.log"; } & lpids+=($!)
    done
    wait "${lpids[@]}"
    grep -q "LINK FAIL" "$OUT/build.log" && bok=0
  fi
  if [ "$bok" = 1 ]; then
    ok "build the runtime in --vranks mode (seed-like impl, cheat, baseline)"
    # wrun NAME WANT_RC IMPL ARGS...: one runtime run, RESULT.json appended to vranks.json
    wrun() {
      local name=$1 want=$2 impl=$3; shift 3
      local res=$OUT/result.json
      rm -f "$res"
      echo "== $name: $impl $*" >>"$LOG"
      local t0=$(date +%s.%N)
      timeout 90 "$OBJ/$impl" --workload gemm_allgather --impl "$impl" --mode verify --out "$res" "$@" >>"$LOG" 2>"$OUT/stderr.txt"; local rc=$?
      cat "$OUT/stderr.txt" >>"$LOG"
      echo "-- exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >>"$LOG"
      [ -f "$res" ] && tr -d '\n' <"$res" >>"$JSON" && echo >>"$JSON"
      if [ "$want" = any ]; then ok "$name (exit $rc, not asserted)"
      elif [ "$want" = hang ] && [ "$rc" -eq 4 ] && grep -q "a peer never arrived" "$OUT/stderr.txt"; then
        ok "$name (exit 4: the barrier names the peer that never arrived)"
      elif [ "$rc" -eq "$want" ]; then ok "$name (exit $rc)"
      else not_ok "$name" "exit $rc, wanted $want: $(tail -3 "$OUT/stderr.txt")"; fi
      # (a run without --vranks is the real-mode refusal: no protocol test)
      if [ -f "$res" ] && [[ " $* " == *" --vranks "* ]] && ! grep -q '"protocol_test": true' "$res"; then not_ok "$name: result says protocol_test" "$(head -c 300 "$res")"; fi
      if [ -f "$res" ] && grep -q '"timing"' "$res"; then not_ok "$name: result carries no timing" "$(head -c 300 "$res")"; fi
    }
    RS=(2 4 8); [ "$PART" = quick ] && RS=(2)
    for R in "${RS[@]}"; do
      wrun "runtime --vranks $R: LSA GEMM+AllGather passes small_a" 0 vranks_gemm_ag --params M=256,K=512,N=384 --vranks "$R"
      [ "$PART" = quick ] || wrun "runtime --vranks $R: LSA GEMM+AllGather passes odd K" 0 vranks_gemm_ag --params M=512,K=776,N=512 --vranks "$R" --seed 7
    done
    wrun "runtime --vranks 2: barrier-less cheat is caught" 3 cheat --params M=256,K=512,N=384 --vranks 2
    wrun "runtime --vranks 2: host-NCCL baseline cannot run, says so" 4 baseline --params M=256,K=512,N=384 --vranks 2
    if grep -q "host NCCL calls are unavailable" "$LOG"; then ok "baseline error names the reason"
    else not_ok "baseline error names the reason" "no hint in $LOG"; fi
    wrun "runtime without --vranks refuses a virtual build" 4 vranks_gemm_ag --params M=256,K=512,N=384
    # The workload's own seed (its default directives and two other sync
    # variants) at R = 2, 4, 8 on the verify shapes of workload.ini.
    if [ -f "$WL/seed.cu" ] && [ "$PART" = quick ]; then
      for R in 2 4 8; do
        wrun "seed --vranks $R M=256,K=512,N=384" 0 seed --params M=256,K=512,N=384 --vranks "$R" --seed 11
      done
    elif [ -f "$WL/seed.cu" ]; then
      for R in 2 4 8; do
        for p in M=256,K=512,N=384 M=200,K=136,N=120 M=72,K=40,N=24 M=1032,K=1000,N=1048; do
          wrun "seed --vranks $R $p" 0 seed --params "$p" --vranks "$R" --seed 11
        done
        for v in seed_global seed_chunk; do
          for p in M=200,K=136,N=120 M=1032,K=1000,N=1048; do
            wrun "$v --vranks $R $p" 0 "$v" --params "$p" --vranks "$R" --seed 11
          done
        done
      done
    fi
    # The cheat suite at R=2: the three that need two ranks must be caught
    # (exit 3); the others target single-rank mechanisms (host clock, static
    # checks...) and are only recorded.
    for c in "$CH"/*.cu; do
      [ -f "$c" ] || continue
      cn=cheat_$(basename "$c" .cu)
      [ -x "$OBJ/$cn" ] || continue  # PART=quick builds only the two-rank ones
      case $cn in
        cheat_stale_flags | cheat_no_wait) want=3 ;;
        # A rank that skips its step never arrives at the barrier: its peer's
        # wait times out naming it (seen on the H200, 2026-11-29), the
        # emulation's form of the hang that the tool reports for real ranks.
        cheat_skip_rank) want=hang ;;
        *) want=any ;;
      esac
      wrun "$cn --vranks 2 small_b" "$want" "$cn" --params M=200,K=136,N=120 --vranks 2 --seed 11
    done
  else
    not_ok "build the runtime in --vranks mode" "$(grep -m5 error "$OUT/build.log")"
  fi
  rm -rf "$OBJ" "$OUT/result.json" "$OUT"/result.json.rank*.progress
fi
rm -f "$OUT/res.json" "$OUT/stderr.txt" "$BIN" "$OUT"/res.json.rank*.progress
echo "1..$n" >>"$TAP"
echo "$((n - failed)) passed, $failed failed" | tee -a "$TAP"
[ "$failed" -eq 0 ]

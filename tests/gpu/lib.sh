# shellcheck shell=bash
# shellcheck disable=SC2034  # what it sets is read by the scripts that source it
# tests/gpu/lib.sh - what the GPU scripts share (issue 29).  Sourced, never
# run: `. "$ROOT/tests/gpu/lib.sh"` (or tests/gpu/lib.sh from the repository
# root).  Only functions (gpu_ prefix) and no side effect at source time.
# tests/cli/t1601 runs the scripts that use it against a fake toolchain.
#
# Environment of a GPU machine (NCCL 2.28.9 from the python package
# nvidia-nccl-cu13; NVLink SHARP/multicast off):
#   gpu_out DIR             OUT defaults to DIR; creates it
#   gpu_script_dirs         reads ROOT, OUT, RANKS: cd ROOT (exit 2 when it
#                           cannot), OUT defaults to ROOT/out (created), RANKS to 1
#   gpu_nvls_off            exports NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
#                           TORCH_SYMM_MEM_DISABLE_MULTICAST=1
#   gpu_nccl_dir            prints the package's directory (empty: none)
#   gpu_cuco_nccl_home      exports CUCO_NCCL_HOME (kept when set) = gpu_nccl_dir
#   gpu_gpulibs ROOT        prepends ROOT/.gpulibs (the .so files `ldd ./cuco`
#                           misses, carried with ./cuco) to LD_LIBRARY_PATH
#   gpu_cuco_env ROOT CACHE for the scripts that run ./cuco: gpu_nvls_off,
#                           gpu_gpulibs, gpu_cuco_nccl_home, and exports
#                           CUCO_CACHE_DIR (kept when set, else CACHE)
#   gpu_variant SRC DST KVS DST = SRC with the directive / CUCO-PARAM values
#                           "key=value ..." replaced (a candidate of the space)
#   gpu_size_params INI NAME  the params of size NAME in the workload.ini INI
#   gpu_eval_env ROOT       for the scripts that judge only through ./cuco eval:
#                           gpu_script_dirs, gpu_cuco_env ROOT /tmp/cuco-cache,
#                           32 hardware queues
#   gpu_capped_init NAME    for the scripts that run capped commands (evalprof.sh,
#                           evalfast.sh): LIMIT (kept when set, else 540), T0
#                           (now), T=OUT/NAME.txt (emptied)
#   gpu_capped NAME CAP OUTFILE CMD...  CMD under min(CAP, the s left of LIMIT),
#                           stdout to OUTFILE, stderr to OUT/NAME.log; a line
#                           "NAME: exit RC after MS ms (cap S s)" and the
#                           cuco stage lines of its log to T ("skipped (limit)"
#                           with under 20 s left)
#   gpu_seed_variant WL NAME LINES  the seed of WL with LINES ('|'-separated;
#                           a line replaces the seed's one line that starts
#                           with the same "// CUCO-PARAM KEY=" or
#                           "// CUCO-DIRECTIVES ") through cuco eval
#                           --candidate --json: gpu_capped WL-NAME 120
#                           OUT/WL-NAME.json (a line that matches nothing
#                           or twice: a note in T)
#   gpu_diag_env ROOT NAME  for the diagnostic scripts (diagN.sh): gpu_script_dirs,
#                           gpu_cuco_env ROOT /tmp/NAME-cache, 32 hardware queues,
#                           no sandbox unless CUCO_SANDBOX is set; sets W=/tmp/NAME
#                           (created), D=OUT/NAME.txt (emptied) and T0 (now)
#   gpu_nccl_home LOG [MSG] for the scripts that build with nvcc against NCCL:
#                           sets NCCL_HOME (CUCO_NCCL_HOME, else gpu_nccl_dir),
#                           CUDA_LIB=/usr/local/cuda/lib64 and exports
#                           LD_LIBRARY_PATH=NCCL_HOME/lib:CUDA_LIB:...; without
#                           NCCL headers says MSG (| tee -a LOG) and exits 2
#   gpu_libnccl_link NCCL DIR  pip's NCCL ships only libnccl.so.2: links a
#                           DIR/libnccl.so to it for the linker (mkdir -p DIR;
#                           nothing when NCCL is empty or has a libnccl.so)
#
# The per-implementation harness scripts (kv_transfer.sh, moe.sh,
# flash_attn.sh): build with nvcc, run each binary, one TAP log.
#   gpu_nvcc_env WL BDIR [NVFLAGS...]  reads NVCC, NCCL_DIR, CUDA_LIB (each kept
#                           when set); sets T_START, NVCC, NCCL_DIR (the package),
#                           INC, LIBS (cuBLAS, NCCL; -L/rpath), NV (the compile
#                           command + NVFLAGS), B=BDIR (emptied; B/lib holds
#                           libnccl.so), CUDA_LIB; exports LD_LIBRARY_PATH
#                           (CUDA_LIB:NCCL lib:...)
#   gpu_harness_init TAPNAME [FILE...]  reads OUT, B; sets TAP=OUT/TAPNAME.tap,
#                           RUNS=OUT/runs.log, JL=OUT/results.jsonl,
#                           REC=B/records.txt; removes them, OUT/summary.json,
#                           OUT/build.log and OUT/FILE...; starts the TAP
#                           counters and notes the GPU and NCCL_DIR
#   gpu_ok NAME / gpu_not_ok NAME WHY / gpu_note TEXT  TAP lines (to stdout
#                           and TAP); counters gpu_n, gpu_failed
#   gpu_tap_end             notes the total time, writes the plan line;
#                           returns 0 when no check failed
#   gpu_stop_if_none_ran SIZE N  when N verify runs in REC exited 4 (setup,
#                           CUDA, NCCL): says so, ends the TAP log, exits 1
#   gpu_build_obj SRC OBJ [FLAGS...]  one compile (NV), output in OBJ.log
#   gpu_throttle N          waits while N or more background jobs run
#   gpu_build_impls ARRAY DIR JOBS [FLAGS...]  compiles, JOBS at a time, each
#                           "name|source|flags" of the array ARRAY into
#                           DIR/name.o with FLAGS, then the entry's flags
#   gpu_link DIR NAME OBJ...  links DIR/NAME from OBJ... DIR/NAME.o and LIBS,
#                           output to OUT/build.log; false when DIR/NAME.o is
#                           missing or the link fails
#   gpu_run_bin [--log-timeout] RES TO HEAD CMD...  one harness run: "== HEAD:
#                           CMD" and its stdout/stderr to RUNS, under timeout TO,
#                           stderr also in B/stderr.txt, RES (its RESULT.json,
#                           removed first with its progress files) appended to
#                           JL; sets gpu_rc, gpu_dt (seconds, 3 decimals),
#                           gpu_res=RES; --log-timeout: a TIMEOUT line in RUNS
#   gpu_why [ERR]           sets why: ERR, else the run's last 2 stderr lines;
#                           a timeout names the rank's last progress stage
#   gpu_verdict TAG WANT    WANT "any": a note; else ok when gpu_rc is WANT,
#                           not ok with why otherwise
#   gpu_anchor NAME TO JSON CMD...  an outside anchor (torch): CMD's stdout to
#                           JSON ('{}' when it fails), a TAP check NAME
#
# The single-binary benches (attn_step.sh, gemm_tile.sh):
#   gpu_cuda_tools          reads NVCC, CUDA_HOME; sets NVCC, CUDA_HOME and SAN
#                           (compute-sanitizer)
#   gpu_summary_init SUM    empties SUM, status=0, the GPU and its clocks to SUM
#   gpu_step NAME RC        "NAME: exit RC" to stdout and SUM; RC != 0 sets status=1
#   gpu_spill_warn LOG      a WARNING line (stdout, SUM) when ptxas spilled
#   gpu_sanitizer_step TOOL LIMIT RC T0  a compute-sanitizer run's step; its
#                           timeout (RC 124 after LIMIT s) is said, not failed
#   gpu_summary_end         prints SUM and exits with status

gpu_out() {
  OUT=${OUT:-$1}
  mkdir -p "$OUT"
}
gpu_script_dirs() {
  cd "$ROOT" || exit 2
  OUT=${OUT:-$ROOT/out}
  RANKS=${RANKS:-1}
  mkdir -p "$OUT"
}
gpu_nvls_off() {
  export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
}
gpu_nccl_dir() {
  python3 -c 'import nvidia.nccl;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null
}
gpu_cuco_nccl_home() {
  if [ -z "${CUCO_NCCL_HOME:-}" ]; then
    CUCO_NCCL_HOME=$(gpu_nccl_dir)
    export CUCO_NCCL_HOME
  fi
}
gpu_gpulibs() {
  if [ -d "$1/.gpulibs" ]; then
    export LD_LIBRARY_PATH="$1/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
}
gpu_cuco_env() {
  gpu_nvls_off
  gpu_gpulibs "$1"
  gpu_cuco_nccl_home
  export CUCO_CACHE_DIR=${CUCO_CACHE_DIR:-$2}
}
gpu_variant() {  # SRC DST "key=value ...": SRC with those directive / CUCO-PARAM values
  local src=$1 dst=$2 kv k v
  cp "$src" "$dst"
  for kv in $3; do  # cuco reads them from the first EVOLVE block's comment lines
    k=${kv%%=*} v=${kv#*=}
    sed -i -E -e "/^\/\/ CUCO-DIRECTIVES /s/ $k=[^ ]*/ $k=$v/" \
      -e "s/^\/\/ CUCO-PARAM $k=.*/\/\/ CUCO-PARAM $k=$v/" "$dst"
  done
}
gpu_size_params() {  # INI NAME: the KEY=VALUE params of size NAME in a workload.ini
  sed -n "s/^$2 *= *//p" "$1" | head -1
}
gpu_eval_env() {  # ROOT: the scripts that judge only through ./cuco eval
  gpu_script_dirs
  gpu_cuco_env "$1" "/tmp/cuco-cache"
  export CUDA_DEVICE_MAX_CONNECTIONS=32  # independent streams really run concurrently
}
gpu_capped_init() {
  LIMIT=${LIMIT:-540} T0=$(date +%s) T=$OUT/$1.txt
  : >"$T"
}
gpu_capped() {
  local name=$1 cap=$2 of=$3 s rc l
  shift 3
  l=$((LIMIT - ($(date +%s) - T0)))
  if [ "$l" -lt 20 ]; then
    echo "$name: skipped (limit)" >>"$T"
    return
  fi
  [ "$cap" -gt "$l" ] && cap=$l
  s=$(date +%s%N)
  timeout -k 5 "$cap" "$@" >"$of" 2>"$OUT/$name.log"
  rc=$?
  echo "$name: exit $rc after $((($(date +%s%N) - s) / 1000000)) ms (cap $cap s)" >>"$T"
  grep -E '^  (build|verify|bench) |cheats:|NOT' "$OUT/$name.log" | cut -c1-200 >>"$T"
}
gpu_seed_variant() {
  local wl=$1 name=$2 f=/tmp/variant-$1-$2.cu line key lines
  cp "workloads/$wl/seed.cu" "$f"
  IFS='|' read -r -a lines <<<"$3"
  for line in "${lines[@]}"; do
    case $line in
    "// CUCO-PARAM "*) key=${line%%=*}= ;;
    *) key='// CUCO-DIRECTIVES ' ;;
    esac
    python3 - "$f" "$key" "$line" <<'PY' || echo "$wl-$name: no line starts with '$key'" >>"$T"
import sys
f, key, line = sys.argv[1:]
src = open(f).read().split("\n")
hit = [i for i, l in enumerate(src) if l.startswith(key)]
if len(hit) != 1:
    sys.exit(1)
src[hit[0]] = line
open(f, "w").write("\n".join(src))
PY
  done
  gpu_capped "$wl-$name" 120 "$OUT/$wl-$name.json" ./cuco eval "workloads/$wl" --candidate "$f" --json
}
gpu_diag_env() {
  gpu_script_dirs
  gpu_cuco_env "$1" "/tmp/$2-cache"
  export CUDA_DEVICE_MAX_CONNECTIONS=32 CUCO_SANDBOX=${CUCO_SANDBOX:-none}
  W=/tmp/$2 D=$OUT/$2.txt T0=$(date +%s)
  mkdir -p "$W"
  : >"$D"
}
gpu_nccl_home() {
  NCCL_HOME=${CUCO_NCCL_HOME:-$(gpu_nccl_dir)}
  if [ -z "$NCCL_HOME" ] || [ ! -f "$NCCL_HOME/include/nccl.h" ]; then
    echo "${2:-no NCCL 2.28.9 (python package nvidia-nccl-cu13) found}" | tee -a "$1"
    exit 2
  fi
  CUDA_LIB=/usr/local/cuda/lib64
  export LD_LIBRARY_PATH=$NCCL_HOME/lib:$CUDA_LIB:${LD_LIBRARY_PATH:-}
}
gpu_libnccl_link() {
  local so
  mkdir -p "$2"
  if [ -n "$1" ] && [ ! -e "$1/lib/libnccl.so" ]; then
    so=$(ls "$1"/lib/libnccl.so* "$1"/lib64/libnccl.so* 2>/dev/null | head -1)
    [ -n "$so" ] && ln -sf "$so" "$2/libnccl.so"
  fi
  return 0
}

# ---- the per-implementation harness scripts ---------------------------------------
gpu_nvcc_env() {
  local wl=$1
  B=$2
  shift 2
  T_START=$(date +%s)
  NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  NCCL_DIR=${NCCL_DIR:-$(gpu_nccl_dir)}
  INC=(-I"$ROOT/runtime" -I"$wl")
  LIBS=(-lcublas -lcublasLt -lnccl)
  if [ -n "$NCCL_DIR" ] && [ -d "$NCCL_DIR/include" ]; then
    INC=(-I"$NCCL_DIR/include" "${INC[@]}")
    LIBS=(-L"$NCCL_DIR/lib" -Xlinker -rpath -Xlinker "$NCCL_DIR/lib" "${LIBS[@]}")
    export LD_LIBRARY_PATH="$NCCL_DIR/lib:${LD_LIBRARY_PATH:-}"
  fi
  # sm_90a as cuco eval builds (src/toolchain.c): the seeds run the GEMM tile v2 (wgmma)
  NV=("$NVCC" "-gencode=arch=compute_90a,code=sm_90a" -std=c++17 -O3 -lineinfo "${INC[@]}" "$@")
  rm -rf "$B"
  gpu_libnccl_link "$NCCL_DIR" "$B/lib"
  CUDA_LIB=${CUDA_LIB:-$(dirname "$(dirname "$NVCC")")/lib64}
  LIBS=(-L"$B/lib" -L"$CUDA_LIB" -Xlinker -rpath -Xlinker "$CUDA_LIB" "${LIBS[@]}")
  export LD_LIBRARY_PATH="$CUDA_LIB:${LD_LIBRARY_PATH:-}"
}
gpu_harness_init() {
  local f
  TAP=$OUT/$1.tap RUNS=$OUT/runs.log JL=$OUT/results.jsonl REC=$B/records.txt
  shift
  rm -f "$TAP" "$RUNS" "$JL" "$OUT/summary.json" "$OUT/build.log"
  for f in "$@"; do rm -f "${OUT:?}/$f"; done
  : >"$TAP"; : >"$RUNS"; : >"$JL"; : >"$REC"; : >"$OUT/build.log"
  gpu_n=0 gpu_failed=0
  gpu_note "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
  gpu_note "NCCL_DIR=${NCCL_DIR:-none, using the CUDA headers}"
}
gpu_ok() { gpu_n=$((gpu_n + 1)); echo "ok $gpu_n - $1" | tee -a "$TAP"; }
gpu_not_ok() {
  gpu_n=$((gpu_n + 1)); gpu_failed=$((gpu_failed + 1))
  echo "not ok $gpu_n - $1" | tee -a "$TAP"; echo "# $2" | tee -a "$TAP"
}
gpu_note() { echo "# $*" | tee -a "$TAP"; }
gpu_tap_end() {
  gpu_note "total $(($(date +%s) - T_START)) s"
  echo "1..$gpu_n" >>"$TAP"
  [ "$gpu_failed" -eq 0 ]
}
gpu_stop_if_none_ran() {
  if [ "$(grep -c '|verify|4|' "$REC")" -ge "$2" ]; then
    gpu_note "every $1 run failed with exit 4 (setup/CUDA/NCCL error): stopping; see runs.log"
    echo "1..$gpu_n" >>"$TAP"
    exit 1
  fi
}
gpu_build_obj() {
  local src=$1 obj=$2
  shift 2
  "${NV[@]}" "$@" -c "$src" -o "$obj" >"$obj.log" 2>&1
}
gpu_throttle() { while [ "$(jobs -rp | wc -l)" -ge "$1" ]; do sleep 0.5; done; }
gpu_build_impls() {
  local -n gpu_bi_list=$1
  local dir=$2 jobs=$3 e name src flags
  shift 3
  for e in "${gpu_bi_list[@]}"; do
    IFS='|' read -r name src flags <<<"$e"
    # shellcheck disable=SC2086
    gpu_build_obj "$src" "$dir/$name.o" "$@" $flags &
    gpu_throttle "$jobs"
  done
}
gpu_link() {
  local dir=$1 name=$2
  shift 2
  [ -f "$dir/$name.o" ] && "$NVCC" -arch=sm_90 -o "$dir/$name" "$@" "$dir/$name.o" \
    "${LIBS[@]}" >>"$OUT/build.log" 2>&1
}
gpu_run_bin() {
  local logto=0 to head t0
  [ "$1" = --log-timeout ] && { logto=1; shift; }
  gpu_res=$1 to=$2 head=$3
  shift 3
  rm -f "$gpu_res" "$gpu_res".rank*.progress
  echo "== $head: $*" >>"$RUNS"
  t0=$(date +%s%N)
  timeout "$to" "$@" >>"$RUNS" 2>"$B/stderr.txt"
  gpu_rc=$?
  gpu_dt=$((($(date +%s%N) - t0) / 1000000))
  gpu_dt=$((gpu_dt / 1000)).$(printf %03d $((gpu_dt % 1000)))
  cat "$B/stderr.txt" >>"$RUNS"
  if [ "$logto" = 1 ] && [ "$gpu_rc" -eq 124 ]; then
    echo "TIMEOUT after ${to}s; progress: $(cat "$gpu_res".rank0.progress 2>/dev/null)" >>"$RUNS"
  fi
  if [ -f "$gpu_res" ]; then tr -d '\n' <"$gpu_res" >>"$JL" && echo >>"$JL"; fi
  return 0
}
gpu_why() {
  why=${1:-$(tail -2 "$B/stderr.txt" | tr '\n' ' ')}
  [ "$gpu_rc" -eq 124 ] && why="timeout (hang?) at stage $(cat "$gpu_res".rank0.progress 2>/dev/null)"
  return 0
}
gpu_verdict() {
  if [ "$2" = any ]; then gpu_note "$1: exit $gpu_rc ${why}"
  elif [ "$gpu_rc" -eq "$2" ]; then gpu_ok "$1 (exit $gpu_rc, ${gpu_dt%.*} s)"
  else gpu_not_ok "$1" "exit $gpu_rc, wanted $2: $why"; fi
}
gpu_anchor() {
  local name=$1 to=$2 json=$3
  shift 3
  if timeout "$to" "$@" >"$json" 2>>"$RUNS"; then gpu_ok "$name"
  else gpu_not_ok "$name" "$(tail -2 "$RUNS")"; echo '{}' >"$json"; fi
}

# ---- the single-binary benches ---------------------------------------------------
gpu_cuda_tools() {
  NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
  SAN=$(command -v compute-sanitizer || echo "$CUDA_HOME/bin/compute-sanitizer")
}
gpu_summary_init() {
  SUM=$1
  : >"$SUM"
  status=0
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$SUM" 2>&1
}
gpu_step() {
  echo "$1: exit $2" | tee -a "$SUM"
  [ "$2" -eq 0 ] || status=1
}
gpu_spill_warn() {
  if grep -E "[1-9][0-9]* bytes spill (stores|loads)" "$1" >/dev/null; then
    echo "WARNING: register spills (see $(basename "$1"))" | tee -a "$SUM"
  fi
}
gpu_sanitizer_step() {
  if [ "$3" -eq 124 ]; then
    echo "compute-sanitizer $1: ran out of its $2 s (inconclusive, not a failure)" | tee -a "$SUM"
  else
    gpu_step "compute-sanitizer $1, tiny shapes ($(($(date +%s) - $4)) s)" "$3"
  fi
}
gpu_summary_end() {
  echo "---- summary ($SUM)"
  cat "$SUM"
  exit "$status"
}

#!/bin/bash
# make cuda: compile (nvcc -c, no link: CI may lack libnccl) every runtime
# .cu and every workload .cu, cheats included, with the -I/-D flags that
# `cuco eval` uses, plus a few directive variants of each seed.  Objects go
# to $BUILD/cuda and are reused while newer than their sources and headers.
#   NVCC (default nvcc), CUCO_ARCH (sm_90), CUCO_NCCL_INCLUDE (extra -I),
#   JOBS (2), NVCC_LAUNCHER (words put before nvcc, e.g. "cuco cc --" for
#   the object cache; the test suite shares one).  Exit 0 when everything compiled; 1 and the errors otherwise.
cd "$(dirname "$0")/.." || exit 2
NVCC=${NVCC:-nvcc}
ARCH=${CUCO_ARCH:-sm_90}
OUT=${BUILD:-build}/cuda
JOBS=${JOBS:-2}
if ! command -v "$NVCC" >/dev/null 2>&1; then
  echo "cuda-compile: $NVCC not found" >&2
  exit 2
fi
mkdir -p "$OUT"
INC=(-Iruntime)
[ -n "${CUCO_NCCL_INCLUDE:-}" ] && INC+=(-I"$CUCO_NCCL_INCLUDE")

# One job per line: OBJ|SRC|EXTRA_INCLUDE|DEFINES
jobs_file=$OUT/jobs.txt
: >"$jobs_file"
for f in runtime/*.cu; do
  echo "$OUT/runtime_$(basename "$f" .cu).o|$f||" >>"$jobs_file"
done
SEED_VARIANTS=(
  "-DCUCO_SYNC=CUCO_SYNC_GLOBAL -DCUCO_PLACEMENT=CUCO_PLACEMENT_DEFERRED -DCUCO_ISSUER=CUCO_ISSUER_WARP"
  "-DCUCO_SYNC=CUCO_SYNC_PER_CHUNK -DCUCO_ISSUER=CUCO_ISSUER_THREAD -DCUCO_CHUNK_BYTES=65536 -DCUCO_PARAM_comm_ctas=16"
  "-DCUCO_BACKEND=CUCO_BACKEND_GIN"
)
for wl in workloads/*/; do
  wl=${wl%/}
  name=$(basename "$wl")
  for f in "$wl"/*.cu "$wl"/cheats/*.cu; do
    [ -f "$f" ] || continue
    tag=$(echo "${f#"$wl"/}" | tr '/' '_')
    echo "$OUT/${name}_${tag%.cu}.o|$f|$wl|" >>"$jobs_file"
  done
  if [ -f "$wl/seed.cu" ]; then
    i=0
    for v in "${SEED_VARIANTS[@]}"; do
      echo "$OUT/${name}_seed_v$i.o|$wl/seed.cu|$wl|$v" >>"$jobs_file"
      i=$((i + 1))
    done
  fi
done

compile_one() { # line
  local obj src extra defs
  IFS='|' read -r obj src extra defs <<<"$1"
  local deps=("$src" runtime/*.h runtime/*.cuh)
  [ -n "$extra" ] && deps+=("$extra"/*.cuh "$extra"/*.h)
  if [ -f "$obj" ]; then
    local stale=0 d
    for d in "${deps[@]}"; do
      [ -f "$d" ] && [ "$d" -nt "$obj" ] && stale=1
    done
    [ -f "$obj.defs" ] && [ "$(cat "$obj.defs")" != "$defs" ] && stale=1
    [ "$stale" -eq 0 ] && { echo "ok (cached) $src $defs"; return 0; }
  fi
  local inc=("${INC[@]}")
  [ -n "$extra" ] && inc+=(-I"$extra")
  # shellcheck disable=SC2086
  if ${NVCC_LAUNCHER:-} "$NVCC" -arch="$ARCH" -std=c++17 -O2 "${inc[@]}" $defs -diag-suppress 177 \
       -c "$src" -o "$obj" >"$obj.log" 2>&1; then
    echo "$defs" >"$obj.defs"
    echo "ok $src $defs"
  else
    rm -f "$obj"
    echo "FAIL $src $defs"
    sed 's/^/    /' "$obj.log" | head -30
    return 1
  fi
}
export -f compile_one
export NVCC ARCH NVCC_LAUNCHER
export INC_STR="${INC[*]}"

fail=0
# xargs runs JOBS compiles at once; each prints its own verdict.
results=$(tr '\n' '\0' <"$jobs_file" |
  xargs -0 -P "$JOBS" -I{} bash -c 'INC=($INC_STR); compile_one "$1"' _ {})
echo "$results"
n_ok=$(echo "$results" | grep -c '^ok')
n_fail=$(echo "$results" | grep -c '^FAIL')
echo "cuda-compile: $n_ok compiled, $n_fail failed"
[ "$n_fail" -eq 0 ] || fail=1
exit $fail

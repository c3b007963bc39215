#!/bin/bash
# After scripts/cuda-compile.sh: link every implementation object of every
# workload (baselines, seeds and their directive variants, whole-file
# cheats; the edit cheats only compile, in one unit) with the
# runtime objects and the workload's reference, as `cuco eval` links a
# binary, so a link error (a header that defines functions, a missing
# definition) cannot land (issue 23).  Links against libnccl.so.2 beside
# nvcc (or CUCO_NCCL_LIB); where there is none, links with NCCL symbols
# unresolved (-Xlinker --warn-unresolved-symbols) and fails on any other
# undefined reference, and on duplicate definitions as always.
#   NVCC (nvcc), CUCO_ARCH (sm_90), BUILD (build), JOBS (2).
# Exit 0 when everything linked; 1 and the errors otherwise.
cd "$(dirname "$0")/.." || exit 2
NVCC=${NVCC:-nvcc}
ARCH=${CUCO_ARCH:-sm_90}
OUT=${BUILD:-build}/cuda
JOBS=${JOBS:-2}
command -v "$NVCC" >/dev/null 2>&1 || { echo "cuda-link: $NVCC not found" >&2; exit 2; }
ls "$OUT"/runtime_*.o >/dev/null 2>&1 || { echo "cuda-link: run scripts/cuda-compile.sh first" >&2; exit 2; }
lib=${CUCO_NCCL_LIB:-$(dirname "$(readlink -f "$(command -v "$NVCC")")")/../lib64}
if [ -f "$lib/libnccl.so.2" ]; then
  NCCL=(-L"$lib" -Xlinker=-l:libnccl.so.2)
  echo "cuda-link: against $(readlink -f "$lib")/libnccl.so.2"
else
  NCCL=(-Xlinker=--warn-unresolved-symbols)
  echo "cuda-link: no libnccl.so.2 ($lib): NCCL symbols left unresolved, other missing and duplicate definitions checked"
fi
mkdir -p "$OUT/link"

# One job per line: BIN|IMPL_OBJ|REF_OBJ|LIBS
jobs_file=$OUT/link/jobs.txt
: >"$jobs_file"
for wl in workloads/*/; do
  wl=${wl%/}
  name=$(basename "$wl")
  [ -f "$wl/reference.cu" ] || continue
  libs=$(sed -n 's/^libs *= *//p' "$wl/workload.ini" | tr ',' ' ')
  for obj in "$OUT/${name}"_*.o; do
    # the reference is linked into each; the unit of the edit cheats and
    # seed variants renames their entry points (scripts/unity.py): it
    # only compiles
    case $obj in "$OUT/${name}_reference.o" | "$OUT/${name}_unity.o") continue ;; esac
    b=$(basename "$obj" .o)
    echo "$OUT/link/$b|$obj|$OUT/${name}_reference.o|$libs" >>"$jobs_file"
  done
done

link_one() { # line
  local bin obj ref libs l
  IFS='|' read -r bin obj ref libs <<<"$1"
  local largs=()
  for l in $libs; do largs+=(-l"$l"); done
  # shellcheck disable=SC2086
  if "$NVCC" -arch="$ARCH" "$OUT"/runtime_*.o "$ref" "$obj" -o "$bin" $NCCL_STR "${largs[@]}" \
       >"$bin.log" 2>&1 &&
     ! grep -v "undefined reference to \`nccl" "$bin.log" | grep -q "undefined reference to"; then
    echo "ok $obj"
    rm -f "$bin"  # only the link matters; binaries are large
  else
    echo "FAIL $obj"
    grep -E "multiple definition|undefined reference|error" "$bin.log" | grep -v "undefined reference to \`nccl" |
      sed 's/^/    /' | head -10
    return 1
  fi
}
export -f link_one
export NVCC ARCH OUT
export NCCL_STR="${NCCL[*]}"
results=$(tr '\n' '\0' <"$jobs_file" | xargs -0 -P "$JOBS" -I{} bash -c 'link_one "$1"' _ {})
echo "$results"
n_ok=$(echo "$results" | grep -c '^ok')
n_fail=$(echo "$results" | grep -c '^FAIL')
echo "cuda-link: $n_ok linked, $n_fail failed"
[ "$n_fail" -eq 0 ]

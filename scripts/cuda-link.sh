#!/bin/bash
# After scripts/cuda-compile.sh: link every implementation object of every
# workload (baselines, seeds, whole-file cheats, and the seed's GIN variant
# from the workload's unit) with the runtime objects and the workload's
# reference, as `cuco eval` links a binary, so a link error (a header that
# defines functions, a missing definition) cannot land (issue 23).  The
# unit (scripts/unity.py: the edit cheats and the seed's directive
# variants, each section's extern "C" entry points renamed cuco_uN_NAME) is
# linked once, with its GIN section's entry points renamed back to NAME:
# the GIN backend calls runtime functions the LSA path does not, so that
# variant's link is the one that can fail on its own (and every other
# section's references must resolve in the same link).  Links against libnccl.so.2 beside
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

# gin_object NAME: $OUT/link/NAME_seed_gin.o, a copy of the workload's unit
# object whose GIN seed section (cuda-compile.sh's SEED_SECTIONS) answers to
# the entry points' own names.  Returns 1 when the workload has no unit or
# the unit no such section, 2 when the copy could not be made.
gin_object() {
  local u=$OUT/unity/$1_unity.cu o=$OUT/$1_unity.o k s args=()
  [ -f "$o" ] || return 1
  k=$(sed -nE "s|^// ---- section ([0-9]+): workloads/$1/seed\.cu CUCO_BACKEND=CUCO_BACKEND_GIN\$|\1|p" "$u" | head -1)
  [ -n "$k" ] || return 1
  for s in $(nm -g --defined-only "$o" | awk -v p="cuco_u${k}_" 'index($3, p) == 1 { print $3 }'); do
    args+=(--redefine-sym "$s=${s#cuco_u"${k}"_}")
  done
  [ ${#args[@]} -gt 0 ] || return 2
  # A cheat that declares a runtime-internal function itself (to call it
  # and be refused by the allowlist) refers to it inside its section's
  # namespace, which nothing defines: such references of the OTHER
  # sections are made weak, so only this section's and the global ones
  # must resolve.
  for s in $(nm -u "$o" | awk -v mine="cuco_u$k" 'match($2, /^_ZN[0-9]+/) {
      ns = substr($2, RLENGTH + 1, substr($2, 4, RLENGTH - 3) + 0)
      if (ns ~ /^cuco_u[0-9]+$/ && ns != mine) print $2 }'); do
    args+=(--weaken-symbol "$s")
  done
  objcopy "${args[@]}" "$o" "$OUT/link/$1_seed_gin.o" || return 2
}

# One job per line: BIN|IMPL_OBJ|REF_OBJ|LIBS
jobs_file=$OUT/link/jobs.txt
: >"$jobs_file"
gin_fail=0
for wl in workloads/*/; do
  wl=${wl%/}
  name=$(basename "$wl")
  [ -f "$wl/reference.cu" ] || continue
  libs=$(sed -n 's/^libs *= *//p' "$wl/workload.ini" | tr ',' ' ')
  for obj in "$OUT/${name}"_*.o; do
    # the reference is linked into each; the unit of the edit cheats and
    # seed variants is linked once, as the GIN variant (gin_object)
    case $obj in "$OUT/${name}_reference.o" | "$OUT/${name}_unity.o") continue ;; esac
    b=$(basename "$obj" .o)
    echo "$OUT/link/$b|$obj|$OUT/${name}_reference.o|$libs" >>"$jobs_file"
  done
  gin_object "$name"
  case $? in
  0) echo "$OUT/link/${name}_seed_gin|$OUT/link/${name}_seed_gin.o|$OUT/${name}_reference.o|$libs" >>"$jobs_file" ;;
  2) echo "FAIL $OUT/${name}_unity.o: its GIN section's entry points could not be renamed"; gin_fail=1 ;;
  esac
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
[ "$n_fail" -eq 0 ] && [ "$gin_fail" -eq 0 ]

#!/bin/bash
# make cuda: compile (nvcc -c, no link: CI may lack libnccl) every runtime
# .cu and every workload .cu, cheats included, with the -I/-D flags that
# `cuco eval` uses, plus a few directive variants of each seed.  The cheats
# that are edits (cheats/NAME.edit) and the seed's directive variants
# compile together, one unit per workload ($BUILD/cuda/unity/WL_unity.cu,
# scripts/unity.py).  Objects go to $BUILD/cuda and are reused while newer
# than their sources and headers.
# The cheats are edits of their seed (cheats/NAME.edit): `cuco eval
# --write-cheats` writes them out as whole sources under $BUILD/cuda/cheats
# first (a file is replaced only when its text changed).
#   NVCC (default: cuco's toolchain), CUCO_ARCH (default: its arch),
#   CUCO ($BUILD/cuco), JOBS (2), NVCC_LAUNCHER (words put before nvcc;
#   default "$CUCO cc --": the object cache cuco eval uses, so a make
#   cuda leaves the runtime and reference objects the next cuco eval
#   takes; the test suite names its own cache; empty for plain nvcc).
#   Exit 0 when everything compiled; 1 and the errors otherwise.
cd "$(dirname "$0")/.." || exit 2
NVCC=${NVCC:-nvcc}
OUT=${BUILD:-build}/cuda
JOBS=${JOBS:-2}
CUCO=${CUCO:-${BUILD:-build}/cuco}
if ! command -v "$NVCC" >/dev/null 2>&1; then
  echo "cuda-compile: $NVCC not found" >&2
  exit 2
fi
if ! [ -x "$CUCO" ]; then
  echo "cuda-compile: $CUCO not found (make $CUCO first: it writes the cheats)" >&2
  exit 2
fi
mkdir -p "$OUT"
# cuco eval's own nvcc words (scripts/eval-nvcc.sh: its flags, absolute
# -I folders, the NCCL headers its toolchain found), so that through the
# object cache (NVCC_LAUNCHER="cuco cc --") these compiles are the ones
# cuco eval's builds find: a runtime unit or a reference compiled here is
# not compiled again by the first `cuco eval`.
mapfile -t BASE < <(CUCO=$CUCO NVCC=$NVCC scripts/eval-nvcc.sh)
printf '%s\n' "${BASE[@]}" | grep -qx '{workload}' ||
  { echo "cuda-compile: scripts/eval-nvcc.sh failed" >&2; exit 2; }

# One job per line: OBJ|SRC|EXTRA_INCLUDE|DEFINES[|HOST_O]: HOST_O replaces
# cuco eval's -O3 (the host compiler's level only; the device code is the
# same) for the units no cuco eval builds, which are compiled here to check
# that they compile (and, for the seed's GIN section, link)
jobs_file=$OUT/jobs.txt
: >"$jobs_file"
for f in runtime/*.cu; do
  echo "$OUT/runtime_$(basename "$f" .cu).o|$f||" >>"$jobs_file"
done
# Directive variants of each seed, as sections of the workload's unit.  The
# GIN one is also linked (its backend calls runtime functions the LSA path
# does not): scripts/cuda-link.sh links the unit's object with that
# section's entry points renamed back.  As a section it adds well under a
# second to the unit, where a compile of its own took ~7 s.
SEED_SECTIONS=(
  "CUCO_SYNC=CUCO_SYNC_GLOBAL,CUCO_PLACEMENT=CUCO_PLACEMENT_DEFERRED,CUCO_ISSUER=CUCO_ISSUER_WARP"
  "CUCO_SYNC=CUCO_SYNC_PER_CHUNK,CUCO_ISSUER=CUCO_ISSUER_THREAD,CUCO_CHUNK_BYTES=65536,CUCO_PARAM_comm_ctas=16"
  "CUCO_BACKEND=CUCO_BACKEND_GIN"
)
for wl in workloads/*/; do
  wl=${wl%/}
  name=$(basename "$wl")
  if [ -d "$wl/cheats" ]; then
    rm -rf "$OUT/cheats.new/$name"
    "$CUCO" eval "$wl" --write-cheats "$OUT/cheats.new/$name" >/dev/null || exit 1
    mkdir -p "$OUT/cheats/$name"
    for f in "$OUT/cheats/$name"/*.cu; do  # a cheat removed: its source goes
      [ -f "$f" ] && ! [ -f "$OUT/cheats.new/$name/$(basename "$f")" ] && rm -f "$f"
    done
    for f in "$OUT/cheats.new/$name"/*.cu; do
      [ -f "$f" ] || continue
      cmp -s "$f" "$OUT/cheats/$name/$(basename "$f")" || cp "$f" "$OUT/cheats/$name/"
    done
    rm -rf "$OUT/cheats.new/$name"
  fi
  # Every .cu of the workload, the whole-file cheats among them, on its own
  # (these are linked by cuda-link.sh); the cheats that are edits of the
  # seed in ONE unit (scripts/unity.py: each in a namespace of its own, the
  # headers parsed once), which checks that each compiles: ~12 s for 20
  # cheats where one by one took ~150 s.
  edits=()
  for f in "$wl"/*.cu "$wl"/cheats/*.cu "$OUT/cheats/$name"/*.cu; do
    [ -f "$f" ] || continue
    case $f in
    "$OUT"/*)
      [ -f "$wl/cheats/$(basename "$f")" ] && continue  # a whole file: above
      edits+=("$f"); continue ;;
    "$wl"/cheats/*) tag=cheats_$(basename "$f") ;;
    *) tag=$(basename "$f") ;;
    esac
    echo "$OUT/${name}_${tag%.cu}.o|$f|$wl|" >>"$jobs_file"
  done
  if [ -f "$wl/seed.cu" ]; then
    for v in "${SEED_SECTIONS[@]}"; do edits+=("$wl/seed.cu@$v"); done
  fi
  if [ ${#edits[@]} -gt 0 ]; then
    mkdir -p "$OUT/unity"
    u=$OUT/unity/${name}_unity.cu
    python3 scripts/unity.py "$u.new" "${edits[@]}" || exit 1
    cmp -s "$u.new" "$u" && rm -f "$u.new" || mv "$u.new" "$u"
    # -O0: its host code is never run, and gcc's -O3 is a third of its time
    echo "$OUT/${name}_unity.o|$u|$wl||-O0" >>"$jobs_file"
  fi
done

# objects of files no longer built (a cheat removed, or made an edit) go,
# or cuda-link.sh would link them
for o in "$OUT"/*.o; do
  [ -f "$o" ] && ! grep -q "^$o|" "$jobs_file" && rm -f "$o" "$o.defs" "$o.log"
done

compile_one() { # line
  local obj src extra defs host_o
  IFS='|' read -r obj src extra defs host_o <<<"$1"
  local deps=("$src" runtime/*.h runtime/*.cuh)
  [ -n "$extra" ] && deps+=("$extra"/*.cuh "$extra"/*.h)
  if [ -f "$obj" ]; then
    local stale=0 d
    for d in "${deps[@]}"; do
      [ -f "$d" ] && [ "$d" -nt "$obj" ] && stale=1
    done
    [ -f "$obj.defs" ] && [ "$(cat "$obj.defs")" != "$defs|$host_o" ] && stale=1
    [ "$stale" -eq 0 ] && { echo "ok (cached) $src $defs"; return 0; }
  fi
  # cuco eval's order: NVCC -arch -std -O3 -I<runtime> [-I<workload>]
  # [-I<nccl>] DEFS -c SRC (absolute) -o OBJ
  local cmd=() w
  for w in "${BASE[@]}"; do
    if [ "$w" = "{workload}" ]; then
      [ -n "$extra" ] && cmd+=(-I"$(realpath "$extra")")
    elif [ "$w" = -O3 ] && [ -n "$host_o" ]; then cmd+=("$host_o")
    else cmd+=("$w"); fi
  done
  # shellcheck disable=SC2086
  if ${NVCC_LAUNCHER:-} "${cmd[@]}" $defs -c "$(realpath "$src")" -o "$obj" >"$obj.log" 2>&1; then
    echo "$defs|$host_o" >"$obj.defs"
    echo "ok $src $defs"
  else
    rm -f "$obj"
    echo "FAIL $src $defs"
    sed 's/^/    /' "$obj.log" | head -30
    return 1
  fi
}
export -f compile_one
NVCC_LAUNCHER=${NVCC_LAUNCHER-$CUCO cc --}
export NVCC_LAUNCHER
printf '%s\n' "${BASE[@]}" >"$OUT/nvcc-base.txt" # one word per line: paths may hold blanks
export BASE_FILE=$OUT/nvcc-base.txt

fail=0
# xargs runs JOBS compiles at once; each prints its own verdict.
results=$(tr '\n' '\0' <"$jobs_file" |
  xargs -0 -P "$JOBS" -I{} bash -c 'mapfile -t BASE <"$BASE_FILE"; compile_one "$1"' _ {})
echo "$results"
n_ok=$(echo "$results" | grep -c '^ok')
n_fail=$(echo "$results" | grep -c '^FAIL')
echo "cuda-compile: $n_ok compiled, $n_fail failed"
[ "$n_fail" -eq 0 ] || fail=1
exit $fail

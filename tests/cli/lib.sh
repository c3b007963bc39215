# tests/cli/lib.sh - TAP helpers for black-box CLI tests (git t/ style).
# Each script sources this, calls check ... and ends with `done_testing`.
set -u
CUCO=${CUCO_BIN:-$PWD/build/cuco}
ROOT=${CUCO_ROOT:-$PWD}
TMP=$(mktemp -d /tmp/cuco-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
_n=0 _failed=0

# ok NAME: pass; not_ok NAME WHY: fail
ok() { _n=$((_n + 1)); echo "ok $_n - $1"; }
# not_ok NAME WHY: every line of WHY is a "# " line (the runner and CI show
# only those; a multi-line stderr must not lose its error past line 1)
not_ok() {
  _n=$((_n + 1)); _failed=$((_failed + 1)); echo "not ok $_n - $1"
  printf '%s\n' "$2" | sed 's/^/# /'
}

# expect_rc NAME RC CMD...: run CMD, compare its exit status
expect_rc() {
  local name=$1 want=$2; shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  if [ "$rc" -eq "$want" ]; then ok "$name"
  else not_ok "$name" "exit $rc, wanted $want; stderr: $(head -c 300 "$TMP/err")
... $(tail -c 700 "$TMP/err")"; fi
}
# expect_grep NAME FILE PATTERN
expect_grep() {
  if grep -qE -- "$3" "$2"; then ok "$1"
  else not_ok "$1" "'$3' not in $2: $(head -c 500 "$2")"; fi
}
expect_no_grep() {
  if grep -qE -- "$3" "$2"; then not_ok "$1" "'$3' unexpectedly in $2"
  else ok "$1"; fi
}
done_testing() { echo "1..$_n"; [ "$_failed" -eq 0 ]; }
# NVCC: $CUCO_NVCC, else nvcc on PATH, else /usr/local/cuda's.  Without one
# the test is a single skipped check (CI has nvcc; a CPU-only checkout may
# not).
need_nvcc() {
  NVCC=${CUCO_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  [ -x "$NVCC" ] && return 0
  echo "ok 1 # SKIP nvcc not found"
  echo "1..1"
  exit 0
}

# check_cheats WL FIRSTLINE_RE MIN: the cheat suite under WL/cheats is
# well-formed.  `cuco eval --write-cheats` turns every cheat into the whole
# source it stands for under $CHEATS (NAME.edit: the seed with its
# SEARCH/REPLACE blocks applied by the patch code an LLM's diff goes
# through; NAME.cu: as it is); each one's first line matches FIRSTLINE_RE
# (its CUCO-EXPECT-REJECT), it differs from the seed, and only inside
# EVOLVE blocks for an edit (what the frozen-text check compares); a whole
# .cu must edit frozen text and say so.  MIN cheats or more (NCHEATS says
# how many).
frozen_text() { # the text outside EVOLVE blocks, minus the leading // header of a cheat
  awk 'NR == FNR && FNR == 1 {first = $0} NR == FNR {next}
       !started && $0 != first && /^\/\// {next} {started = 1} {print}' "$2" "$1" |
    awk '/EVOLVE-BLOCK-START/{skip=1} !skip{print} /EVOLVE-BLOCK-END/{skip=0}'
}
check_cheats() {
  local wl=$1 re=$2 min=$3 c b n=0 m
  CHEATS=$TMP/cheats/$(basename "$wl")
  rm -rf "$CHEATS"
  if "$CUCO" eval "$wl" --write-cheats "$CHEATS" >"$TMP/wc.out" 2>&1; then ok "cuco eval --write-cheats $(basename "$wl")"
  else not_ok "cuco eval --write-cheats $(basename "$wl")" "$(cat "$TMP/wc.out")"; fi
  frozen_text "$wl/seed.cu" "$wl/seed.cu" >"$TMP/seed.frozen"
  for c in "$wl"/cheats/*.edit "$wl"/cheats/*.cu; do
    [ -f "$c" ] || continue
    b=$(basename "$c"); n=$((n + 1)); m=$CHEATS/${b%.*}.cu
    if head -1 "$m" | grep -qE -- "$re"; then ok "cheat $b has a CUCO-EXPECT-REJECT first line"
    else not_ok "cheat $b has a CUCO-EXPECT-REJECT first line" "$(head -1 "$m")"; fi
    frozen_text "$m" "$wl/seed.cu" >"$TMP/c.frozen"
    if [ "${b%.edit}" != "$b" ]; then
      if cmp -s "$TMP/seed.frozen" "$TMP/c.frozen"; then ok "cheat $b changes only the EVOLVE blocks"
      else not_ok "cheat $b changes only the EVOLVE blocks" "$(diff "$TMP/seed.frozen" "$TMP/c.frozen" | head -5)"; fi
    elif ! cmp -s "$TMP/seed.frozen" "$TMP/c.frozen" && grep -q "^// A whole file, not an edit" "$c"; then
      ok "whole-file cheat $b edits frozen text and says why it is whole"
    else not_ok "whole-file cheat $b edits frozen text and says why it is whole" "an EVOLVE-only cheat is a NAME.edit"; fi
    if cmp -s "$wl/seed.cu" <(sed 1d "$m"); then not_ok "cheat $b differs from the seed" "identical"
    else ok "cheat $b differs from the seed"; fi
  done
  NCHEATS=$n
  if [ "$n" -ge "$min" ]; then ok "$min cheats or more ($n)"; else not_ok "$min cheats or more" "$n"; fi
}

# nvcc through cuco's object cache (`cuco cc`, src/objcache.c): tests/run.sh
# gives the whole suite one fresh cache (CUCO_TEST_CACHE), so a translation
# unit that several tests compile with the same flags is compiled once per
# run and replayed (its object, warnings and all) to the others.  A test run
# alone gets a cache of its own.  CCW is the prefix of a cached command.
CC_CACHE=${CUCO_TEST_CACHE:-$TMP/cc-cache}
if [ -x "$CUCO" ]; then CCW=("$CUCO" cc --cache-dir "$CC_CACHE" --); else CCW=(); fi
NV_BASE=() # nv_wl's nvcc words, read once
# nv_wl W [DEFS...] -- SRC OBJ: compile SRC of workload folder W (relative
# to the checkout; W "" for a runtime file) with exactly the command of
# `make cuda` and of cuco eval's builds (scripts/eval-nvcc.sh), so the
# compile is shared with t0601's and with cuco eval's; runs in $ROOT.
nv_wl() {
  local w=$1 defs=(); shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do defs+=("$1"); shift; done
  shift
  # cuco eval's words (scripts/eval-nvcc.sh), as make cuda uses them
  [ "${#NV_BASE[@]}" -gt 0 ] ||
    mapfile -t NV_BASE < <(CUCO=$CUCO NVCC=${NVCC:-} "$ROOT/scripts/eval-nvcc.sh")
  local cmd=() x
  for x in "${NV_BASE[@]}"; do
    if [ "$x" != "{workload}" ]; then cmd+=("$x")
    elif [ -n "$w" ]; then cmd+=(-I"$(realpath "$ROOT/$w")"); fi
  done
  (cd "$ROOT" && "${CCW[@]}" "${cmd[@]}" "${defs[@]}" -c "$(realpath "$1")" -o "$2")
}
# unity_cc NAME [FLAGS...] -- SECTION...: one check that every SECTION
# (FILE or FILE@NAME=VALUE,...: a directive variant, scripts/unity.py)
# compiles, all of them in ONE unit with "${NV[@]}" FLAGS -c: the headers,
# ~5 s of every workload compile, are parsed once.  An error names the
# section's file and line; a variant that must FAIL (a refusal) is compiled
# on its own, since the unit skips cuco_directives.h's range checks.
unity_cc() {
  local name=$1 flags=(); shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  if ! python3 "$ROOT/scripts/unity.py" "$TMP/unity.cu" "$@" 2>"$TMP/err"; then
    not_ok "$name" "$(cat "$TMP/err")"; return
  fi
  expect_rc "$name" 0 "${NV[@]}" "${flags[@]}" -c "$TMP/unity.cu" -o "$TMP/unity.o"
}

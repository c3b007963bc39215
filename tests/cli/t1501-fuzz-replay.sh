#!/bin/bash
# t1401: every parser's fuzz corpus (tests/fuzz/corpus/NAME/, seeds and
# whatever `make fuzz` found) replayed through the gcc-built target: no
# crash, no sanitizer report (under `make asan` the targets are ASan
# builds).  With clang's libFuzzer present, a short coverage-guided run of
# each target too (FUZZ_CI_SECONDS, default 5 s; 0 skips).
. "$(dirname "$0")/lib.sh"
B=$ROOT/${BUILD:-build}/tests
for src in "$ROOT"/tests/fuzz/fuzz_*.c; do
  n=$(basename "$src" .c)
  files=("$ROOT/tests/fuzz/corpus/$n"/*)
  if [ ! -x "$B/$n" ]; then not_ok "$n replay binary built" "$B/$n missing"; continue; fi
  if [ ! -e "${files[0]}" ]; then not_ok "$n has a corpus" "tests/fuzz/corpus/$n is empty"; continue; fi
  if "$B/$n" "${files[@]}" >"$TMP/$n.out" 2>&1 && grep -q "^1\.\.${#files[@]}$" "$TMP/$n.out" &&
     ! grep -q "^not ok" "$TMP/$n.out"; then
    ok "$n replays its ${#files[@]} corpus files"
  else
    not_ok "$n replays its corpus" "$(tail -5 "$TMP/$n.out")"
  fi
done
# fuzz_objs: the library objects the fuzz targets need, as build-fuzz/obj
# paths: the members that a link of each target against the tool's own gcc
# objects, put in an archive, pulls in.  Fails (make fuzz then builds every
# object) when that link does (an ASan build's objects, say).
fuzz_objs() {
  local lib=$TMP/fuzz-lib.a o src n objs=()
  local flags=(-std=c11 -D_POSIX_C_SOURCE=200809L -I"$ROOT/src" -I"$ROOT/tests/fuzz")
  for o in "$ROOT/${BUILD:-build}"/obj/*.o; do [ "${o##*/}" = main.o ] || objs+=("$o"); done
  ar rcs "$lib" "${objs[@]}" || return 1
  gcc "${flags[@]}" -c "$ROOT/tests/fuzz/replay.c" -o "$TMP/replay.o" || return 1
  for src in "$ROOT"/tests/fuzz/fuzz_*.c; do
    n=$(basename "$src" .c)
    # shellcheck disable=SC2046
    gcc "${flags[@]}" $(pkg-config --cflags libcurl jansson sqlite3 libmicrohttpd inih libxxhash) \
      -c "$src" -o "$TMP/$n.o" &&
      gcc -o "$TMP/$n.closure" "$TMP/$n.o" "$TMP/replay.o" "$lib" -Wl,-Map,"$TMP/$n.map" \
        $(pkg-config --libs libcurl jansson sqlite3 libmicrohttpd inih libxxhash) -lm -ldl -lpthread ||
      return 1
    grep -oE 'fuzz-lib\.a\([a-z0-9_]+\.o\)' "$TMP/$n.map"
  done | sed -E 's|.*\((.*)\)|build-fuzz/obj/\1|' | sort -u | tr '\n' ' '
  [ "${PIPESTATUS[0]}" -eq 0 ]
}
secs=${FUZZ_CI_SECONDS:-5}
if [ "$secs" -gt 0 ] && command -v clang >/dev/null &&
   clang -fsanitize=fuzzer -x c -o "$TMP/probe" - <<<'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' 2>/dev/null; then
  # clang builds only the objects the targets link (fuzz_objs: about 10 of
  # the 67; the others cost ~40 s of CPU and no fuzzer runs them).  `make
  # fuzz` by hand still builds them all.
  fobj=()
  need=$(fuzz_objs) && [ -n "$need" ] && fobj=("FUZZ_OBJ=$need")
  if (cd "$ROOT" && make -s -j2 fuzz BUILD="${BUILD:-build}" FUZZ_SECONDS="$secs" "${fobj[@]}" >"$TMP/fuzz.log" 2>&1); then
    ok "make fuzz: each target ran $secs s under libFuzzer without a finding"
  else
    not_ok "make fuzz ran clean" "$(grep -E 'ERROR|SUMMARY|error' "$TMP/fuzz.log" | head -5)"
  fi
else
  ok "libFuzzer run # skip clang with -fsanitize=fuzzer not available (or FUZZ_CI_SECONDS=0)"
fi
done_testing

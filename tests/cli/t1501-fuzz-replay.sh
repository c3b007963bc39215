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
secs=${FUZZ_CI_SECONDS:-5}
if [ "$secs" -gt 0 ] && command -v clang >/dev/null &&
   clang -fsanitize=fuzzer -x c -o "$TMP/probe" - <<<'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' 2>/dev/null; then
  if (cd "$ROOT" && make -s -j2 fuzz BUILD="${BUILD:-build}" FUZZ_SECONDS="$secs" >"$TMP/fuzz.log" 2>&1); then
    ok "make fuzz: each target ran $secs s under libFuzzer without a finding"
  else
    not_ok "make fuzz ran clean" "$(grep -E 'ERROR|SUMMARY|error' "$TMP/fuzz.log" | head -5)"
  fi
else
  ok "libFuzzer run # skip clang with -fsanitize=fuzzer not available (or FUZZ_CI_SECONDS=0)"
fi
done_testing

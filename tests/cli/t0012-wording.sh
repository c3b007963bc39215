#!/bin/bash
# Wording and blame (issue 48): a wrong --sizes names the size or the
# parameter at fault, not the candidate; init's placeholder seed says to
# run `cuco transform` first; `cuco report` names no temporary file; a
# freeform program refused by the allowlist is told the workload.ini line
# that would allow it.  (The margin's wording and "the bar" in prompts:
# tests/unit/test_wording.c.)
. "$(dirname "$0")/lib.sh"
MM=$ROOT/examples/cpu_matmul
cd "$TMP" || exit 1

# --sizes: the shape, not the candidate, is wrong
expect_rc "a shape without one of the workload's parameters is a usage error" 2 \
  "$CUCO" eval "$MM" --sizes M=33,K=17
expect_grep "... naming the missing parameter and the valid ones" "$TMP/err" \
  "^cuco eval: --sizes: shape 'M=33,K=17' lacks N, which every size of cpu_matmul sets \(parameters: M, K, N\)$"
expect_no_grep "... and no candidate is blamed" "$TMP/out" "FAIL|failed"
expect_rc "a parameter the workload does not have is a usage error" 2 \
  "$CUCO" eval "$MM" --sizes M=33,K=17,N=45,Q=2
expect_grep "... naming it" "$TMP/err" \
  "--sizes: 'Q' in shape 'M=33,K=17,N=45,Q=2' is not a parameter of cpu_matmul \(parameters: M, K, N\)"
expect_rc "a misspelt size is a usage error" 2 "$CUCO" eval "$MM" --sizes small_a,smal_b
expect_grep "... with the nearest size" "$TMP/err" \
  "--sizes: 'smal_b' is not a size of cpu_matmul \(did you mean 'small_b'\? sizes: small_a, small_b, full\)"
expect_rc "a complete shape is accepted" 0 "$CUCO" eval "$MM" --sizes M=9,K=5,N=3 --static-only

# init's placeholder seed
"$CUCO" init "$TMP/wl" >/dev/null 2>&1 || not_ok "cuco init" "failed"
expect_rc "eval of the placeholder seed fails" 1 "$CUCO" eval "$TMP/wl" --static-only
expect_grep "... saying to run cuco transform first" "$TMP/err" \
  "^cuco eval: $TMP/wl/seed\.cu is the placeholder \`cuco init\` wrote \(a copy of the baseline\): run \`cuco transform $TMP/wl\` first$"
expect_rc "the baseline is still evaluated" 0 "$CUCO" eval "$TMP/wl" --impl baseline.cu --static-only
expect_rc "evolve on the placeholder seed fails" 1 "$CUCO" evolve "$TMP/wl" --llm none
expect_grep "... with the same advice" "$TMP/err" "run \`cuco transform $TMP/wl\` first"

# cuco report names no temporary file
python3 "$ROOT/tests/fixtures/make_run_db.py" "$TMP/run.db" || exit 1
sqlite3 "$TMP/run.db" "UPDATE programs SET error='build: exit 1: /tmp/cuco-eval.Ab12Cd/cand_2.c:23:14: error: expected expression' WHERE id=(SELECT min(id) FROM programs WHERE status='failed')"
expect_rc "report with a build error" 0 "$CUCO" report "$TMP/run.db" -o "$TMP/r.html"
expect_grep "... keeps the file and line" "$TMP/r.html" "build: exit 1: cand_2\.c:23:14: error: expected expression"
expect_no_grep "... but not the evaluation's temporary folder" "$TMP/r.html" "cuco-eval\."
expect_rc "report to a folder that does not exist" 1 "$CUCO" report "$TMP/run.db" -o "$TMP/no/r.html"
expect_grep "... names the file asked for" "$TMP/err" "^cuco report: $TMP/no/r\.html: cannot write: No such file or directory$"
expect_no_grep "... not its temporary" "$TMP/err" "\.tmp[0-9]"

# allowlist: the line that would allow rand and time
awk '/EVOLVE-BLOCK-START/ {print; print "#include <stdlib.h>\n#include <time.h>\nint cuco_noise(void) { return rand() + (int)time(NULL); }"; next} 1' \
  "$MM/seed.c" >"$TMP/rt.c"
expect_rc "rand and time are refused" 1 "$CUCO" eval "$MM" --candidate "$TMP/rt.c" --sizes small_a
expect_grep "... with the [allow] line to write" "$TMP/out" \
  "^rt\.c: rejected: allowlist: rt\.bin calls '(rand|time)' .*; to allow them, change the \[allow\] line in workload\.ini to \`symbols = fopen, fclose, (rand, time|time, rand)\`"
mkdir -p "$TMP/mm" && cp "$MM"/* "$TMP/mm/" && sed -i '/^\[allow\]/,$d' "$TMP/mm/workload.ini"
expect_rc "without an [allow] line" 1 "$CUCO" eval "$TMP/mm" --candidate "$TMP/rt.c" --sizes small_a
expect_grep "... it says to add one" "$TMP/out" \
  "; to allow them, add \`symbols = [a-z, ]*\` under \[allow\] in workload\.ini$"
expect_grep "... naming rand" "$TMP/out" "add \`symbols = [a-z, ]*rand"
done_testing

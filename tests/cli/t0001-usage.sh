#!/bin/bash
# The command table: usage, unknown commands and options, --help each.
. "$(dirname "$0")/lib.sh"

expect_rc "no command prints usage, exit 2" 2 "$CUCO"
expect_grep "usage names commands" "$TMP/err" "doctor"
expect_rc "unknown command exits 2" 2 "$CUCO" frobnicate
expect_grep "unknown command is named" "$TMP/err" "'frobnicate' is not a cuco command"
expect_rc "unknown global option exits 2" 2 "$CUCO" --bogus doctor
expect_rc "--help exits 0" 0 "$CUCO" --help
expect_rc "--version exits 0" 0 "$CUCO" --version
expect_grep "--version prints version" "$TMP/out" "^cuco [0-9]"
for c in $("$CUCO" --help | awk '/^  [a-z]/ {print $1}'); do
  expect_rc "$c --help exits 0" 0 "$CUCO" "$c" --help
  expect_grep "$c --help prints usage" "$TMP/out" "usage: cuco $c"
  expect_rc "$c with an unknown option exits 2" 2 "$CUCO" "$c" --no-such-option
  # one error line with the one prefix, then where the help is (not all of it)
  if [ "$(cat "$TMP/err")" = "cuco $c: unrecognized option '--no-such-option'
see 'cuco $c --help'" ]; then ok "$c: a usage error is one line and a pointer to --help"
  else not_ok "$c: a usage error is one line and a pointer to --help" "$(head -c 400 "$TMP/err")"; fi
done
WL=$ROOT/workloads/gemm_allgather
expect_rc "eval --impl seed is the seed" 0 "$CUCO" eval "$WL" --impl seed --static-only
expect_grep "eval --impl seed evaluates seed.cu" "$TMP/out" "^seed.cu: ok \(static checks\)"
expect_rc "eval --impl STEM names a baseline" 0 "$CUCO" eval "$WL" --impl baseline_overlap --static-only
expect_grep "eval --impl baseline_overlap evaluates baseline_overlap.cu" "$TMP/out" "^baseline_overlap.cu: ok"
expect_rc "eval --impl with a wrong name exits 2" 2 "$CUCO" eval "$WL" --impl nope
expect_grep "a wrong --impl lists the valid names" "$TMP/err" \
  "^cuco eval: --impl: 'nope' is not an implementation of gemm_allgather; valid: seed \(seed.cu\), baseline.cu, baseline_overlap.cu, all$"
expect_rc "eval --sizes with a wrong name exits 2" 2 "$CUCO" eval "$WL" --sizes huge
expect_grep "a wrong --sizes lists the sizes" "$TMP/err" "^cuco eval: --sizes: 'huge' is neither a size of gemm_allgather \(small_a, small_b, .*full_16k\)"
expect_no_grep "no help dump after a usage error" "$TMP/err" "^usage:"
expect_rc "analyze of a missing file exits 1" 1 "$CUCO" analyze "$TMP/nope.cu"
expect_grep "analyze errors carry the one prefix" "$TMP/err" "^cuco analyze: .*nope.cu"
expect_rc "init with a bad --from exits 1" 1 "$CUCO" init "$TMP/x" --from "$TMP/nope.cu"
expect_grep "init errors carry the one prefix" "$TMP/err" "^cuco init: .*nope.cu"
printf '[llm]\nmodel = x\nthis line is broken\n' >"$TMP/bad.ini"
expect_rc "malformed --config fails" 1 "$CUCO" --config "$TMP/bad.ini" doctor
expect_grep "malformed config names file and line" "$TMP/err" "bad.ini:3"
expect_rc "missing --config fails" 1 "$CUCO" --config "$TMP/nope.ini" doctor
expect_grep "missing config is named" "$TMP/err" "nope.ini: cannot open"
done_testing

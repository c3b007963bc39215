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
done
printf '[llm]\nmodel = x\nthis line is broken\n' >"$TMP/bad.ini"
expect_rc "malformed --config fails" 1 "$CUCO" --config "$TMP/bad.ini" doctor
expect_grep "malformed config names file and line" "$TMP/err" "bad.ini:3"
expect_rc "missing --config fails" 1 "$CUCO" --config "$TMP/nope.ini" doctor
expect_grep "missing config is named" "$TMP/err" "nope.ini: cannot open"
done_testing

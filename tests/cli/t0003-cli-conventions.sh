#!/bin/bash
# The command line behaves like git's and curl's (issue 48): `cuco help
# CMD`, global options before or after the command, time suffixes, exact
# option names (a unique prefix is taken with a note, an ambiguous one is
# an error listing the candidates), one name per concept with the old
# spelling a deprecated alias, --version listed.
. "$(dirname "$0")/lib.sh"

WL=$ROOT/workloads/gemm_allgather
COMMANDS=$("$CUCO" --help | awk '/^  [a-z]/ {print $1}')

# expect_err NAME TEXT: stderr is exactly TEXT
expect_err() {
  if [ "$(cat "$TMP/err")" = "$2" ]; then ok "$1"
  else not_ok "$1" "stderr: $(head -c 400 "$TMP/err")"; fi
}

# --- cuco help CMD ----------------------------------------------------------
for c in $COMMANDS; do
  expect_rc "help $c exits 0" 0 "$CUCO" help "$c"
  cp "$TMP/out" "$TMP/help.out"
  "$CUCO" "$c" --help >"$TMP/dash.out" 2>/dev/null
  if cmp -s "$TMP/help.out" "$TMP/dash.out"; then ok "help $c prints what $c --help prints"
  else not_ok "help $c prints what $c --help prints" "$(diff "$TMP/dash.out" "$TMP/help.out" | head -5)"; fi
done
expect_rc "help alone is cuco --help" 0 "$CUCO" help
expect_grep "help alone lists the commands" "$TMP/out" "^  evolve "
expect_rc "help of an unknown command exits 2" 2 "$CUCO" help bogus
expect_err "help of an unknown command is one line naming it" \
  "cuco help: 'bogus' is not a cuco command; see 'cuco --help'"

# --- --version listed --------------------------------------------------------
expect_rc "--help exits 0" 0 "$CUCO" --help
expect_grep "--help lists --version" "$TMP/out" "^  -V, --version "
expect_grep "--help lists the global options" "$TMP/out" "^  -c, --config FILE "
expect_grep "--help says global options may follow the command" "$TMP/out" "also after the command"

# --- global options anywhere -------------------------------------------------
printf '[llm]\nmodel = x\nthis line is broken\n' >"$TMP/bad.ini"
expect_rc "--config after the command is read" 1 "$CUCO" doctor --config "$TMP/bad.ini"
expect_grep "--config after the command names the file" "$TMP/err" "bad.ini:3"
expect_rc "-c FILE after the command is read" 1 "$CUCO" doctor -c "$TMP/bad.ini"
expect_rc "--config=FILE after the command is read" 1 "$CUCO" doctor "--config=$TMP/bad.ini"
expect_rc "-v and -q after the command" 0 "$CUCO" eval "$WL" --static-only -q -v
expect_rc "--sandbox between the command's arguments" 0 "$CUCO" eval --sandbox none "$WL" --static-only
expect_rc "-q before the command still works" 0 "$CUCO" -q eval "$WL" --static-only
expect_rc "a global option's value is still a value" 2 "$CUCO" eval "$WL" --static-only --sizes -v
expect_grep "... and the command reads it" "$TMP/err" "^cuco eval: --sizes: '-v'"
# cc: the compiler's own -v, -c are its own, after the compiler's name
expect_rc "cc: options after the compiler are the compiler's" 0 \
  "$CUCO" cc -q --cache-dir "$TMP/cc" -- sh -c 'echo "$0 $1"' -v -c
expect_grep "cc: -v and -c reached the compiler" "$TMP/out" "^-v -c$"

# --- durations: s, m, h -------------------------------------------------------
expect_rc "eval --timeout 10m" 0 "$CUCO" eval "$WL" --static-only --timeout 10m
expect_rc "eval --build-timeout=90s" 0 "$CUCO" eval "$WL" --static-only --build-timeout=90s
expect_rc "eval --timeout 2h" 0 "$CUCO" eval "$WL" --static-only --timeout 2h
expect_rc "eval --timeout 10x exits 2" 2 "$CUCO" eval "$WL" --static-only --timeout 10x
expect_err "a bad duration is one line naming the option and the value" \
  "cuco eval: --timeout: '10x' is not a duration (e.g. 90, 90s, 10m, 2h)
see 'cuco eval --help'"
expect_rc "a duration past eval's 24 h is refused by eval" 2 \
  "$CUCO" eval "$WL" --static-only --timeout 25h
expect_grep "... in seconds" "$TMP/err" "^cuco eval: --timeout: '90000' is not a number of seconds"
expect_rc "evolve --time-limit 1m" 0 "$CUCO" evolve --time-limit 1m --help
expect_rc "evolve --time-limit 1w exits 2" 2 "$CUCO" evolve "$WL" --time-limit 1w
expect_grep "evolve names the bad duration" "$TMP/err" \
  "^cuco evolve: --time-limit: '1w' is not a duration \(e.g. 90, 90s, 10m, 2h\)$"

# --- exact names; a unique prefix with a note; ambiguity is an error ---------
expect_rc "a unique prefix is taken" 0 "$CUCO" eval "$WL" --static-only --tim 5
expect_err "... and said so" "cuco eval: --tim taken as --timeout"
expect_rc "an ambiguous prefix exits 2" 2 "$CUCO" eval "$WL" --s
expect_err "an ambiguous prefix lists the candidates" \
  "cuco eval: --s is ambiguous: --sizes, --static-only, --seed, --secret, --sandbox
see 'cuco eval --help'"
expect_rc "an ambiguous global prefix exits 2" 2 "$CUCO" --ver
expect_grep "an ambiguous global prefix lists the candidates" "$TMP/err" \
  "^cuco: --ver is ambiguous: --version, --verbose$"
expect_rc "a unique global prefix is taken" 0 "$CUCO" --vers
expect_grep "... and said so" "$TMP/err" "^cuco: --vers taken as --version$"
# every option in every command's help is known to the front door: its
# name less one letter is taken as it (a table and a help text that drift
# apart fail here)
for c in $COMMANDS; do
  "$CUCO" help "$c" | grep -E '^  (-[a-zA-Z], )?--[a-z]' >"$TMP/opts"
  while read -r line; do
    name=$(printf '%s\n' "$line" | grep -oE -- '--[a-z][a-z-]*' | head -1)
    rest=${line#*"$name"}
    val=()
    case $rest in " "[!\ ]*) val=(1) ;; esac
    "$CUCO" "$c" --help "${name%?}" "${val[@]}" >/dev/null 2>"$TMP/err"
    if grep -qxF -- "cuco $c: ${name%?} taken as $name" "$TMP/err"; then ok "$c ${name%?} is taken as $name"
    else not_ok "$c ${name%?} is taken as $name" "$(head -c 300 "$TMP/err")"; fi
  done <"$TMP/opts"
done

# --- one name per concept: --budget-usd, -o/--output for a file -------------
expect_rc "transform --budget-usd" 0 "$CUCO" transform --budget-usd 2 --help
expect_rc "transform --budget (deprecated) still works" 0 "$CUCO" transform --budget 2 --help
expect_err "... with a one-line note" "cuco transform: --budget is deprecated; use --budget-usd"
expect_rc "transform --output FILE" 0 "$CUCO" transform --output "$TMP/s.cu" --help
expect_rc "transform --out FILE (deprecated) still works" 0 "$CUCO" transform --out "$TMP/s.cu" --help
expect_err "... with a one-line note" "cuco transform: --out is deprecated; use --output"
expect_grep "transform's help names the deprecated spellings" "$TMP/out" "--budget, deprecated"
expect_rc "doctor --output FILE" 0 "$CUCO" doctor --json --output "$TMP/d.json"
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/d.json" 2>/dev/null; then
  ok "doctor --output wrote the JSON"
else not_ok "doctor --output wrote the JSON" "$(head -c 200 "$TMP/d.json" 2>&1)"; fi
done_testing

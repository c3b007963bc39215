#!/bin/bash
# The noise watch covers the bar and the seed: a copy of the landscape
# fixture made noisy on purpose (every reported cost times a factor drawn
# from a hash of the clock and a stack address, log-uniform over
# e^-0.5..e^0.5, five runs per bench) with a baseline.  The baseline's and
# the seed's spreads are beyond 5%: each is measured again, the progress
# lines and the summary say so, the database keeps what the watch did, and
# the report shows it.  The steady fixture says nothing of the kind.
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$TMP/noisy
OUT=$TMP/run
cd "$TMP" || exit 1
mkdir -p "$WL"
# The factor hashes the clock's nanoseconds and a stack address (splitmix64;
# the address differs per process under ASLR, and getpid is not on the
# allowlist): draws
# stay independent when runs land in lockstep under load, which the
# microsecond digit of the clock alone did not (once, a noisy run came out
# steady).
python3 - "$ROOT/tests/data/evolve/landscape/seed.c" "$WL/seed.c" <<'PY'
import sys
src = open(sys.argv[1]).read()
jitter = r"""static double jitter(void) /* noise on purpose */
{
  struct timespec t;
  unsigned long long z;

  clock_gettime(CLOCK_MONOTONIC, &t);
  z = (unsigned long long)t.tv_nsec * 0x9E3779B97F4A7C15ull + (unsigned long long)(size_t)&t;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return exp((double)(z % 1000) / 1000.0 - 0.5);
}

"""
src = src.replace("#include <string.h>\n", "#include <string.h>\n#include <time.h>\n", 1)
src = src.replace("int main(int argc, char **argv)\n", jitter + "int main(int argc, char **argv)\n", 1)
src = src.replace('"sum\\": %.6f}\\n", cost(),', '"sum\\": %.6f}\\n", cost() * jitter(),', 1)
open(sys.argv[2], "w").write(src)
PY
cp "$WL/seed.c" "$WL/baseline.c"
sed -e 's/^seed        = seed.c$/baselines   = baseline.c\n&/' -e 's/^repeat = 1$/repeat = 5/' \
  "$ROOT/tests/data/evolve/landscape/workload.ini" >"$WL/workload.ini"
grep -q 'cost() \* jitter()' "$WL/seed.c" && grep -q '^baselines' "$WL/workload.ini" &&
  ok "the noisy fixture is made" || not_ok "the noisy fixture is made" "$(grep -n 'cost()' "$WL/seed.c")"
printf '[evolve]\nconfirm = 0\n' >"$TMP/c.ini"

expect_rc "noisy run succeeds" 0 nice "$CUCO" --config "$TMP/c.ini" evolve "$WL" \
  --llm none --generations 2 --islands 1 --seed 1 --out "$OUT"
cp "$TMP/out" "$TMP/run.out"
re='noisy: \+-[0-9.]+% > 5% of the median, measured again \(kept \+-[0-9.]+%, still beyond\)'
expect_grep "the bar's progress line says it is noisy and measured again" \
  "$TMP/run.out" "^baseline baseline\.c: $re$"
expect_grep "the seed's progress line says so" "$TMP/run.out" \
  "^\[ *1/[0-9]+\] #1 .*  $re"
expect_grep "the summary names the bar's noise" "$TMP/run.out" \
  "^noise: the bar's baseline baseline\.c: $re$"
expect_grep "the summary names the seed's noise" "$TMP/run.out" \
  "^noise: the seed #1: $re$"
q() { sqlite3 "$OUT/run.db" "$1"; }
w="json_extract(baseline_json, '\$.full.noise_watch"
got=$(q "select $w.first_rel') > 0.05, $w.second_rel') > 0 and $w.second_rel') <> $w.first_rel'),
  $w.kept_rel') = min($w.first_rel'), $w.second_rel')) from runs")
[ "$got" = "1|1|1" ] && ok "the bar was measured twice, the steadier kept (baseline_json)" ||
  not_ok "the bar was measured twice" "$got: $(q 'select baseline_json from runs')"
w="json_extract(metrics_json, '\$.noise_watch"
got=$(q "select $w.first_rel') > 0.05, $w.second_rel') > 0 and $w.second_rel') <> $w.first_rel'),
  abs(noise_ms / median_ms - min($w.first_rel'), $w.second_rel'))) < 1e-6
  from programs where id = (select seed_program_id from runs)")
[ "$got" = "1|1|1" ] && ok "the seed was measured twice, the kept one is the row's" ||
  not_ok "the seed was measured twice" "$got"
expect_rc "report written" 0 "$CUCO" report "$OUT/run.db" -o "$TMP/r.html"
expect_grep "the report shows the bar's and the seed's noise" "$TMP/r.html" \
  "noise watch</th><td>bar at full \(baseline\.c\): \+-[0-9.]+% &gt; 5%, measured again \(kept \+-[0-9.]+%, still beyond: its speedups are uncertain\); seed #1: \+-[0-9.]+% &gt; 5%, measured again"

# the steady fixture: no noise lines, no noise row
expect_rc "steady run succeeds" 0 "$CUCO" --config "$TMP/c.ini" evolve \
  "$ROOT/tests/data/evolve/landscape" --llm none --generations 1 \
  --islands 1 --seed 1 --out "$TMP/steady"
expect_no_grep "a steady run reports no noise" "$TMP/out" "noisy|^noise:"
expect_rc "steady report written" 0 "$CUCO" report "$TMP/steady/run.db" -o "$TMP/s.html"
expect_no_grep "... and its report no noise row" "$TMP/s.html" "noise watch"
done_testing

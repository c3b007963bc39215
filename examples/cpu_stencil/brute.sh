#!/bin/bash
# Brute force over every configuration of examples/cpu_stencil: build each
# with the workload's build line, then time them all in REPS interleaved
# rounds (round r runs every binary once, in a shuffled order), and print
# "ty tx unroll rows cpu_ms spread" per configuration: cpu_ms is the median
# over the rounds of each run's own median of five timed calls, spread the
# rounds' (max - min) / median.  Interleaving spreads a load spike of the
# shared machine over many configurations' single samples instead of all
# samples of one; the median drops it.  The copy it builds times with
# CLOCK_PROCESS_CPUTIME_ID instead of CLOCK_MONOTONIC: on a shared 2-core
# machine (load 10) wall times varied 100x, CPU time does not count the
# time other jobs hold the core.
# Used to record tests/data/tuner/cpu_stencil.tsv, the landscape that
# tests/unit/test_tuner.c drives the tuner against:
#   nice examples/cpu_stencil/brute.sh > tests/data/tuner/cpu_stencil.tsv
# REPS rounds (default 5; about 8 minutes of CPU for the builds and 2 per
# round).  BINS=DIR keeps the binaries there and reuses those already built
# (a second look at the same builds, or a restart).
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
reps=${REPS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bins=${BINS:-$tmp}
mkdir -p "$bins"
sed 's/CLOCK_MONOTONIC/CLOCK_PROCESS_CPUTIME_ID/' "$dir/seed.c" >"$tmp/seed.c"
start=$(date -u +%FT%TZ)
cfgs=()
for ty in 4 8 16 32 64 128 256; do
  for tx in 16 32 64 128 256 512 1024; do
    for u in 1 2 4 8; do
      for r in 1 2 3 4 6; do
        c="$ty $tx $u $r"
        b="$bins/b_${ty}_${tx}_${u}_${r}"
        if [ ! -x "$b" ]; then
          gcc -O3 -std=c11 -DCUCO_PARAM_ty=$ty -DCUCO_PARAM_tx=$tx \
            -DCUCO_PARAM_unroll=$u -DCUCO_PARAM_rows=$r -o "$b.tmp" \
            "$tmp/seed.c" -lm
          mv "$b.tmp" "$b"
        fi
        cfgs+=("$c")
      done
    done
  done
done
for ((i = 1; i <= reps; i++)); do
  printf '%s\n' "${cfgs[@]}" | shuf --random-source=<(yes $i) |
    while read -r ty tx u r; do
      t=$("$bins/b_${ty}_${tx}_${u}_${r}" --params H=516,W=1028 --mode bench \
        --seed $i | sed 's/.*"time_ms": \([0-9.]*\).*/\1/')
      echo "$ty $tx $u $r $t"
    done >>"$tmp/samples"
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "# ty tx unroll rows cpu_ms spread: examples/cpu_stencil at H=516,W=1028,"
echo "# gcc $(gcc -dumpfullversion) -O3, $(uname -m) $(grep -m1 'model name' \
  /proc/cpuinfo | sed 's/.*: //'), started $start, load at the end $load."
echo "# cpu_ms: median over $reps interleaved rounds (shuffled order, each run"
echo "# the median of 5 timed calls, CLOCK_PROCESS_CPUTIME_ID); spread:"
echo "# (max - min) / median over the rounds.  examples/cpu_stencil/brute.sh."
sort -k1,1n -k2,2n -k3,3n -k4,4n -k5,5g "$tmp/samples" |
  awk -v n="$reps" '
    { k = $1 " " $2 " " $3 " " $4
      if (k != last && last != "") flush()
      last = k; v[c++] = $5 }
    function flush() {
      printf "%s %.4f %.3f\n", last, v[int(c / 2)], (v[c - 1] - v[0]) / v[int(c / 2)]
      c = 0 }
    END { flush() }'

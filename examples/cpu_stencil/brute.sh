#!/bin/bash
# Brute force over every configuration of examples/cpu_stencil: build each
# with the workload's build line, run its bench twice, print
# "ty tx unroll rows ms" (the smaller of the two runs' medians).  The copy
# it builds times with CLOCK_PROCESS_CPUTIME_ID instead of CLOCK_MONOTONIC:
# on a shared 2-core machine (load 10) wall times varied 100x, CPU time
# does not count the time other jobs hold the core.
# Used once to record tests/data/tuner/cpu_stencil.tsv, the landscape that
# tests/unit/test_tuner.c drives the tuner against.
#   examples/cpu_stencil/brute.sh > tests/data/tuner/cpu_stencil.tsv
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/CLOCK_MONOTONIC/CLOCK_PROCESS_CPUTIME_ID/' "$dir/seed.c" >"$tmp/seed.c"
echo "# ty tx unroll rows cpu_ms (cpu_stencil, H=516,W=1028; $(uname -m), $(date -u +%F))"
for ty in 4 8 16 32 64 128 256; do
  for tx in 16 32 64 128 256 512 1024; do
    for u in 1 2 4 8; do
      for r in 1 2 3 4 6; do
        gcc -O3 -std=c11 -DCUCO_PARAM_ty=$ty -DCUCO_PARAM_tx=$tx \
          -DCUCO_PARAM_unroll=$u -DCUCO_PARAM_rows=$r -o "$tmp/b" \
          "$tmp/seed.c" -lm
        t=$(for i in 1 2; do
          "$tmp/b" --params H=516,W=1028 --mode bench --seed $i |
            sed 's/.*"time_ms": \([0-9.]*\).*/\1/'
        done | sort -g | head -1)
        echo "$ty $tx $u $r $t"
      done
    done
  done
done

#!/bin/bash
# tests/gpu/judge_cheats.sh - issue 52's cheat classes against the judge, on
# one verify size, each beside its honest control, and the two that the
# in-process runtime let through run in-process too (CUCO_JUDGE=in-process)
# to show the old design accepting them.  All candidates compile first, in
# parallel (object cache), then run one at a time.
#   OUT=dir bash tests/gpu/judge_cheats.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
WL=workloads/gemm_allgather
SIZE=${SIZE:-small_a}
C=$(mktemp -d /tmp/cuco-jc.XXXXXX)
./cuco eval "$WL" --write-cheats "$C" >/dev/null 2>&1
for f in "$C"/*.cu; do  # the cheat's header comment is not the seed's text
  sed -i '1,/^\/\/ workloads\/gemm_allgather\/seed.cu/{/^\/\/ workloads\/gemm_allgather\/seed.cu/!d}' "$f"
done
cp "$WL/seed.cu" "$C/control.cu"
LIST="control shape_shrink ctx_records escaped_tail input_mutation"
for n in $LIST; do ./cuco eval "$WL" --compile-only --candidate "$C/$n.cu" >"$C/$n.build" 2>&1 & done
wait
: >"$OUT/verdicts.txt"
run() {  # NAME MODE
  local s; s=$(date +%s)
  CUCO_JUDGE=$2 timeout 60 ./cuco eval "$WL" --candidate "$C/$1.cu" --sizes "$SIZE" --no-bench \
    >"$C/$1-$2.log" 2>&1
  echo "$1 $2 exit $? ($(($(date +%s) - s)) s): $(grep -E "^$1.cu: " "$C/$1-$2.log" | cut -c1-330)" |
    tee -a "$OUT/verdicts.txt"
}
for n in $LIST; do run "$n" separate; done
run shape_shrink in-process
run ctx_records in-process
tar czf "$OUT/logs.tgz" -C "$C" . 2>/dev/null

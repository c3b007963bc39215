#!/bin/bash
# tests/gpu/sdpa_anchor.sh - the outside anchor beside flash_attn_cp's bench:
# torch SDPA (each back end that takes the shape) at the workload's bench
# shapes at one rank (causal, B=1, Hq=32, Hkv=8, D=128; short S=1024, mid
# S=8192).  Writes $OUT/sdpa.json (tests/gpu/attn_step_sdpa.py's object).
#   OUT=dir bash tests/gpu/sdpa_anchor.sh   SIZES=1024,8192 REPS=20
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_script_dirs
timeout 240 python3 tests/gpu/attn_step_sdpa.py "${SIZES:-1024,8192}" "${REPS:-20}" >"$OUT/sdpa.json"
rc=$?
cat "$OUT/sdpa.json"
exit $rc

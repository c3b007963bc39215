#!/bin/bash
# make cuda: every runtime and workload .cu compiles with nvcc (no GPU) and
# every implementation links (scripts/cuda-link.sh); the cheat suite is
# well-formed, and its edits compile (one unit per workload, and one that
# breaks is named); a linked binary speaks the CLI contract.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1
if ! command -v nvcc >/dev/null 2>&1; then
  ok "# SKIP nvcc not installed"
  done_testing
  exit 0
fi
B=${BUILD:-build}

# through the suite's object cache: the workload tests compile many of the
# same files with the same flags (lib.sh nv_wl) and take them from there
expect_rc "cuda-compile compiles everything" 0 env BUILD="$B" NVCC_LAUNCHER="${CCW[*]}" scripts/cuda-compile.sh
n=$(grep -c '^ok' "$TMP/out")
# one unit per workload holds all its edit cheats and the seed's directive
# variants, GIN among them (scripts/unity.py)
units=$(for d in workloads/*/; do { ls "$d"cheats/*.edit || ls "$d"seed.cu; } >/dev/null 2>&1 && echo "$d"; done | wc -l)
want=$(( $(ls runtime/*.cu | wc -l) + $(ls workloads/*/*.cu workloads/*/cheats/*.cu | wc -l) + units ))
if [ "$n" -eq "$want" ]; then ok "compiled $n units (runtime, workloads, whole cheats, $units units of edit cheats and seed variants)"
else not_ok "compiled $n files" "wanted $want: $(tail -5 "$TMP/out")"; fi

# Every implementation and whole cheat links with the runtime and its
# workload's reference (issue 23: flash_attn_cp once compiled and never
# linked), and so does each workload's unit, as the seed's GIN variant (its
# GIN section's entry points renamed back: scripts/cuda-link.sh).
expect_rc "cuda-link links every implementation" 0 env BUILD="$B" scripts/cuda-link.sh
n=$(grep -c '^ok' "$TMP/out")
want=$(( $(ls workloads/*/*.cu workloads/*/cheats/*.cu | wc -l) - $(ls workloads/*/reference.cu | wc -l) + $(ls workloads/*/seed.cu | wc -l) ))
if [ "$n" -eq "$want" ]; then ok "linked $n binaries (implementations, whole cheats, the seeds' GIN variant from their unit)"
else not_ok "linked $n binaries" "wanted $want: $(grep -A3 FAIL "$TMP/out" | head -12)"; fi

# A failing compiler is reported per file and fails the script.
printf '#!/bin/sh\necho "boom: syntax error" >&2\nexit 1\n' >"$TMP/nvcc"
chmod +x "$TMP/nvcc"
expect_rc "a failing nvcc fails cuda-compile" 1 env NVCC="$TMP/nvcc" BUILD="$TMP/b" CUCO="$CUCO" scripts/cuda-compile.sh
expect_grep "the failing file and its error are shown" "$TMP/out" "FAIL runtime/rt_main.cu|boom: syntax error"

# Cheats: first line names stage + mechanism; every edit keeps the seed's
# frozen text byte-identical (only the EVOLVE block differs); the one whole
# file (frozen_edit.cu) edits frozen text and says why it is whole.
check_cheats "$ROOT/workloads/gemm_allgather" '^// CUCO-EXPECT-REJECT: (static|build|allowlist|verify|bench) [a-z0-9_-]+' 20

# Link one binary when libnccl/cuBLAS are here; without a GPU it must still
# honour the CLI contract: usage errors exit 2, a device error exits 4 and
# rank 0 writes RESULT.json with status "error" and a progress file.
objs=("$B"/cuda/runtime_*.o "$B"/cuda/gemm_allgather_reference.o "$B"/cuda/gemm_allgather_baseline.o)
if nvcc -arch=sm_90 "${objs[@]}" -o "$TMP/wl" -lnccl -lcublas -lcublasLt >"$TMP/link" 2>&1; then
  expect_rc "no arguments is a usage error" 2 "$TMP/wl"
  expect_rc "a bad --params is a usage error" 2 "$TMP/wl" --mode verify --out "$TMP/r.json" --params "M=1,,x"
  expect_grep "the usage error names the bad value" "$TMP/err" "bad --params"
  expect_rc "several ranks need an id source" 2 env -u NCCL_COMM_ID "$TMP/wl" --mode verify --out "$TMP/r.json" --params M=8,K=8,N=8 --nranks 2 --rank 1
  expect_rc "NVLS enabled is refused" 4 env NCCL_NVLS_ENABLE=1 "$TMP/wl" --mode verify --out "$TMP/r.json" --params M=8,K=8,N=8
  expect_grep "NVLS refusal names the variable" "$TMP/err" "NCCL_NVLS_ENABLE=1"
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["schema"]==1 and d["status"]=="error" and d["params"]=={"M":8,"K":8,"N":8} and d["verify"]["passed"] is False' "$TMP/r.json"; then
    ok "RESULT.json of a failed run is valid and says error"
  else
    not_ok "RESULT.json of a failed run is valid and says error" "$(cat "$TMP/r.json")"
  fi
  expect_grep "the progress file ends in error" "$TMP/r.json.rank0.progress" "^error$"
  echo '{"gpus": {"count": 0}}' >"$TMP/m.json"
  env -u NCCL_NVLS_ENABLE "$TMP/wl" --mode bench --out "$TMP/r2.json" --params M=8,K=8,N=8 --machine "$TMP/m.json" >/dev/null 2>&1
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["machine"]=={"gpus":{"count":0}} and d["mode"]=="bench"' "$TMP/r2.json"; then
    ok "the --machine JSON is embedded"
  else
    not_ok "the --machine JSON is embedded" "$(cat "$TMP/r2.json")"
  fi
else
  ok "# SKIP linking needs libnccl/cuBLAS: $(head -c 200 "$TMP/link")"
fi
done_testing

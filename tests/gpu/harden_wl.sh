#!/bin/bash
# tests/gpu/harden_wl.sh - issue 22 for every workload beside gemm_allgather
# (whose table is tests/gpu/harden.sh): each new mechanism is NECESSARY,
# shown with that workload's own cheat.
#   ON : `cuco eval WL --candidate CHEAT` (the path a user and the search
#        take; everything on) rejects it, its output naming the check.
#   OFF: the binary that same cuco eval built, run again with only that
#        mechanism switched off (--skip-check NAME, a testing switch the
#        runtime marks in RESULT.json and cuco refuses to score), passes.
# Mechanisms (the cheats are the workloads' cheats/*.edit, written out by
# `cuco eval --write-cheats`):
#   secret-steps   public_steps  bench at a sampled size: works only on the
#                  steps the old public rule would verify (OFF also switches
#                  the bound off, else the bound still rejects it)
#   speed-of-light public_steps  the same cheat with the public rule handed
#                  back (--skip-check secret-steps) in both runs
#   secret-inputs  regen_inputs  verify: makes its inputs from the old public
#                  generator instead of reading them
#
#   OUT=dir bash tests/gpu/harden_wl.sh   (repo root; carry ./cuco, .gpulibs/)
#   HWLS="kv_transfer moe_dsv3 flash_attn_cp" (default), SIZE_<wl>=NAME (the
#   bench size, one whose output is over 2^24 elements; default kv short,
#   moe prefill, flash mid).
# $OUT: harden_wl.jsonl (a row per run, as it ends), harden_wl.json (one row per run; per mechanism and workload whether
# it is necessary), harden_wl.md (the table), harden_wl.log.  Exit 0 when
# every mechanism was shown necessary.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
HWLS=${HWLS:-"kv_transfer moe_dsv3 flash_attn_cp"}
W=$(mktemp -d /tmp/cuco-hwl.XXXXXX)
# in $OUT as each run ends: a call cut short still brings back every verdict so far
LOG=$OUT/harden_wl.log REC=$OUT/harden_wl.jsonl
: >"$LOG"
: >"$REC"
T0=$(date +%s)

bench_size() {
  local v
  v=$(eval echo "\${SIZE_$1:-}")
  [ -n "$v" ] && { echo "$v"; return; }
  # the bench sizes: timed steps are verified with secret odds (1/2,
  # 1/4, 1/8: verify_odds in rt_main.cu)
  case $1 in moe_dsv3) echo prefill ;; flash_attn_cp) echo mid ;; *) echo short ;; esac
}
verify_size() { case $1 in kv_transfer) echo v_small ;; moe_dsv3) echo v_t33 ;; *) echo v_small ;; esac; }

# rec WL MECH KIND RC WANT_RC WORDS FILE : one record; KIND on|off
rec() {
  python3 - "$@" >>"$REC" <<'PY'
import json, sys
wl, mech, kind, rc, want, words, path = sys.argv[1:8]
text = open(path, errors="replace").read()
named = (not words) or (words in text)
print(json.dumps({"workload": wl, "mechanism": mech, "kind": kind, "rc": int(rc),
                  "want_rc": want, "named": named,
                  "ok": (int(rc) != 0 if want == "nonzero" else int(rc) == int(want)) and named,
                  "tail": text[-400:]}))
PY
}

# eval_on WL MECH CHEAT WORDS ARGS... : cuco eval rejects the cheat (ON)
eval_on() {
  local wl=$1 mech=$2 cheat=$3 words=$4 d=$W/$1/$3
  shift 4
  mkdir -p "$d"
  sed 1d "$W/$wl/cheats/$cheat.cu" >"$d/$cheat.cu"  # the CUCO-EXPECT-REJECT line
  echo "== [$(($(date +%s) - T0)) s] ON $wl $mech: cuco eval --candidate $cheat.cu $*" >>"$LOG"
  # --timeout: a cheat that hangs instead of cheating costs a minute, not two
  timeout 200 ./cuco eval "workloads/$wl" --candidate "$d/$cheat.cu" --out "$d/eval" --timeout 60 \
    "$@" >"$d/on.txt" 2>&1
  local rc=$?
  cat "$d/on.txt" >>"$LOG"
  rec "$wl" "$mech" on "$rc" nonzero "$words" "$d/on.txt"
}
# bin_run WL MECH CHEAT KIND WANT WORDS PARAMS ARGS... : the binary cuco eval built
bin_run() {
  local wl=$1 mech=$2 cheat=$3 kind=$4 want=$5 words=$6 params=$7 d=$W/$1/$3
  shift 7
  local bin=$d/eval/$cheat/$cheat.bin tag=${mech//[^a-z]/_}_$kind
  echo "== [$(($(date +%s) - T0)) s] $kind $wl $mech: $cheat.bin --params $params $*" >>"$LOG"
  if [ ! -x "$bin" ]; then
    echo "no binary $bin (cuco eval did not build it)" >"$d/$tag.txt"
    rec "$wl" "$mech" "$kind" 99 "$want" "$words" "$d/$tag.txt"
    return
  fi
  # The secret on stdin, as cuco eval hands it.
  head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n' |
    timeout 60 "$bin" --workload "$wl" --impl "$cheat.cu" --params "$params" --seed 1234 \
      --secret-fd 0 --out "$d/$tag.json" "$@" >"$d/$tag.txt" 2>&1
  local rc=$?
  [ -f "$d/$tag.json" ] && cat "$d/$tag.json" >>"$d/$tag.txt"
  cat "$d/$tag.txt" >>"$LOG"
  rec "$wl" "$mech" "$kind" "$rc" "$want" "$words" "$d/$tag.txt"
}

# Every cheat's objects built first, all at once (the machine has 16 cores
# and the runs below are serial on one GPU): the evals then find them in
# the object cache and spend their time on the GPU.
for wl in $HWLS; do
  ./cuco eval "workloads/$wl" --write-cheats "$W/$wl/cheats" >>"$LOG" 2>&1 || {
    echo "$wl: --write-cheats failed" | tee -a "$LOG"
    continue
  }
  for cheat in public_steps regen_inputs; do
    mkdir -p "$W/pre/$wl"
    sed 1d "$W/$wl/cheats/$cheat.cu" >"$W/pre/$wl/$cheat.cu"
    timeout 300 ./cuco eval "workloads/$wl" --candidate "$W/pre/$wl/$cheat.cu" \
      --out "$W/pre/$wl/eval-$cheat" --compile-only >"$W/pre/$wl/$cheat.txt" 2>&1 &
  done
done
wait
echo "== [$(($(date +%s) - T0)) s] cheats prebuilt" >>"$LOG"
tail -n 2 "$W"/pre/*/*.txt >>"$LOG" 2>/dev/null

for wl in $HWLS; do
  [ -d "$W/$wl/cheats" ] || continue
  bs=$(bench_size "$wl") vs=$(verify_size "$wl")
  bp=$(gpu_size_params "workloads/$wl/workload.ini" "$bs")
  vp=$(gpu_size_params "workloads/$wl/workload.ini" "$vs")
  BENCH=(--mode bench --iters 40 --min-time 0.05)
  # secret-steps: verify passes (every verify step is checked), the bench's
  # secret sample of timed steps catches the idle ones.
  eval_on "$wl" secret-steps public_steps timed-verify --sizes "$bs"
  bin_run "$wl" secret-steps public_steps off 0 "" "$bp" "${BENCH[@]}" \
    --skip-check secret-steps --skip-check speed-of-light
  bin_run "$wl" speed-of-light public_steps on 3 "speed-of-light" "$bp" "${BENCH[@]}" \
    --skip-check secret-steps
  bin_run "$wl" speed-of-light public_steps off 0 "" "$bp" "${BENCH[@]}" \
    --skip-check secret-steps --skip-check speed-of-light
  eval_on "$wl" secret-inputs regen_inputs rel-l2 --sizes "$vs" --no-bench
  bin_run "$wl" secret-inputs regen_inputs off 0 "" "$vp" --mode verify --perturb \
    --skip-check secret-inputs
done

python3 - "$REC" "$OUT" "$(($(date +%s) - T0))" <<'PY'
import json, subprocess, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out, secs = sys.argv[2], int(sys.argv[3])
mechs = {}
for r in rows:
    m = mechs.setdefault((r["workload"], r["mechanism"]), {"on": [], "off": []})
    m[r["kind"]].append(r)
table, all_ok = [], bool(mechs)
for (wl, mech), m in sorted(mechs.items()):
    nec = bool(m["on"] and m["off"]) and all(r["ok"] for r in m["on"] + m["off"])
    all_ok &= nec
    table.append({"workload": wl, "mechanism": mech, "necessary": nec,
                  "on_rc": [r["rc"] for r in m["on"]], "off_rc": [r["rc"] for r in m["off"]]})
try: gpu = subprocess.run("nvidia-smi -L", shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
except Exception as e: gpu = str(e)
json.dump({"schema": 1, "what": "issue 22: each new mechanism necessary per workload "
           "(tests/gpu/harden_wl.sh)", "gpu": gpu, "seconds": secs, "mechanisms": table,
           "runs": rows, "all_ok": all_ok}, open(out + "/harden_wl.json", "w"), indent=1)
with open(out + "/harden_wl.md", "w") as f:
    f.write("# per-workload mechanisms (%s), %s, %d s\n\n" % ("ALL OK" if all_ok else "FAILURES", gpu, secs))
    f.write("| workload | mechanism | ON exit | OFF exit | necessary |\n|---|---|---|---|---|\n")
    for t in table:
        f.write("| %s | %s | %s | %s | %s |\n" % (t["workload"], t["mechanism"], t["on_rc"],
                t["off_rc"], "yes" if t["necessary"] else "**NO**"))
print(open(out + "/harden_wl.md").read())
sys.exit(0 if all_ok else 1)
PY
rc=$?
rm -rf "$W"
exit $rc

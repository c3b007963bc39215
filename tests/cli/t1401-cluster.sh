#!/bin/bash
# Ranks through mpirun and srun, and `cuco evolve` through the Slurm
# executor, on a one-node Slurm cluster this script starts (munged,
# slurmctld, slurmd in $TMP; tests/cli/slurm.sh) and stops on exit.
# Parts that cannot run here say so with a TAP skip line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
unset SLURM_JOB_ID SLURM_JOBID SLURM_CONF
trap 'slurm_stop; [ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT
WL=$ROOT/tests/fixtures/ranks
T=timeout # every command that could wait gets a deadline
cd "$TMP" || exit 1
skip() { _n=$((_n + 1)); echo "ok $_n # skip $1"; }

# --- mpirun (no Slurm needed) ---
if command -v mpirun >/dev/null 2>&1; then
  cat >"$TMP/mpi.ini" <<'INI'
[launch]
mpirun = mpirun --oversubscribe -np {nranks} {hostfile} {asroot} --bind-to none {env} {bin} {args}
INI
  expect_rc "two ranks through mpirun" 0 $T 120 "$CUCO" --config "$TMP/mpi.ini" \
    eval "$WL" --launcher mpirun --out "$TMP/m1"
  expect_grep "rank 0 saw both ranks through Open MPI's variables" "$TMP/m1/rank_check/run.log" \
    '"ok": true, "ranks": 2, "launcher": "ompi", "bad": 0'
  expect_rc "a rank that never starts under mpirun fails" 1 $T 120 "$CUCO" --config "$TMP/mpi.ini" \
    eval "$WL" --launcher mpirun --sizes hang --timeout 4 --out "$TMP/m2"
  expect_grep "... and is named" "$TMP/out" "hang: timed out after 4 s; rank 1 did not finish \(last stage 'none': it never started\); rank 0 at 'init'"
  sleep 1
  if pgrep -f "$TMP/m2/rank_check/rank_check.bin" | xargs -r ps -o stat= -p | grep -qv Z; then
    not_ok "mpirun's ranks are gone after the deadline" "$(pgrep -af "$TMP/m2")"
  else ok "mpirun's ranks are gone after the deadline"; fi
else
  skip "mpirun is not installed (scripts/install-deps.sh installs openmpi-bin)"
fi
printf '[launch]\nmpirun = mpirun -np {nranks} {bogus} {bin} {args}\n' >"$TMP/bad.ini"
expect_rc "a template with an unknown placeholder fails the run" 1 $T 60 "$CUCO" --config "$TMP/bad.ini" \
  eval "$WL" --launcher mpirun --out "$TMP/bad"
expect_grep "... naming the placeholder" "$TMP/err" "unknown placeholder '\{bogus\}'"
expect_rc "--launcher with an unknown name is a usage error" 2 "$CUCO" eval "$WL" --launcher pbs
expect_grep "... naming the choices" "$TMP/err" "'pbs' is not local, mpirun or srun"
expect_rc "executor slurm outside an allocation is refused" 2 "$CUCO" evolve "$ROOT/examples/cpu_matmul" \
  --executor slurm --llm none --out "$TMP/noalloc"
expect_grep "... saying why" "$TMP/err" "not inside a Slurm allocation"

# --- Slurm ---
if ! slurm_start "$TMP/slurm"; then
  skip "slurm: the test cluster did not start: $SLURM_WHY"
  done_testing
  exit
fi
ok "a one-node Slurm cluster started (slurmctld, slurmd, munged)"
expect_rc "cuco doctor inside salloc" 0 $T 60 salloc -n2 "$CUCO" doctor
expect_grep "... finds the launchers with versions" "$TMP/out" "^launch: mpirun .*\(mpirun \(Open MPI\) .*srun /.*\(slurm"
expect_grep "... and says it is inside an allocation with 2 slots" "$TMP/out" \
  "^slurm:  inside allocation [0-9]+: nodes .*, tasks 2, GPUs none; executor slurm would use 2 slots"
expect_rc "cuco doctor --json outside one" 0 "$CUCO" doctor --json
expect_grep "... says there is none" "$TMP/out" '"allocation": null'
expect_rc "two ranks through srun" 0 $T 120 "$CUCO" eval "$WL" --launcher srun --out "$TMP/s1"
expect_grep "rank 0 saw both ranks through Slurm's variables" "$TMP/s1/rank_check/run.log" \
  '"ok": true, "ranks": 2, "launcher": "slurm", "bad": 0'
expect_grep "the log names the step" "$TMP/s1/rank_check/run.log" "all 2 ranks exited 0 \(srun, slurm step [0-9]+\.[0-9]+\)"

expect_rc "a rank that never starts under srun fails" 1 $T 120 "$CUCO" eval "$WL" --launcher srun \
  --sizes hang --timeout 4 --out "$TMP/s2"
expect_grep "... named, and its step cancelled" "$TMP/out" \
  "rank 1 did not finish \(last stage 'none': it never started\); rank 0 at 'init'; cancelled slurm step [0-9]+\.[0-9]+"
sleep 1
if squeue -h -s 2>/dev/null | grep -q cuco-; then not_ok "no step left running" "$(squeue -s)"
else ok "no step left running"; fi

# a step that Slurm cancels (scancel from outside) is a named failure
$T 120 "$CUCO" eval "$WL" --launcher srun --sizes sleep --timeout 100 --out "$TMP/s3" >"$TMP/s3.out" 2>&1 &
pid=$!
id=""
for _ in $(seq 1 100); do
  id=$(squeue -h -s -o '%i %j' 2>/dev/null | awk '$2 ~ /^cuco-/ {print $1; exit}')
  [ -n "$id" ] && break
  sleep 0.2
done
sleep 1
[ -n "$id" ] && scancel "$id"
wait "$pid"; rc=$?
if [ -n "$id" ] && [ "$rc" -eq 1 ] && grep -q "slurm step $id cancelled: by scancel" "$TMP/s3.out"; then
  ok "a step cancelled by scancel is named ($id)"
else not_ok "a step cancelled by scancel is named" "step '$id' rc $rc: $(tail -3 "$TMP/s3.out")"; fi

# Slurm's own time limit (enforced within about a minute here)
cat >"$TMP/tl.ini" <<'INI'
[launch]
srun = srun --ntasks={nranks} --exact --job-name={name} --time=0:01 -v {bin} {args}
INI
expect_rc "a step over its Slurm time limit fails" 1 $T 300 "$CUCO" --config "$TMP/tl.ini" eval "$WL" \
  --launcher srun --sizes sleep --timeout 250 --out "$TMP/s4"
expect_grep "... as a named failure, not a hang" "$TMP/out" "slurm step [0-9]+\.[0-9]+ cancelled: TIME LIMIT"

# cuco evolve through the Slurm executor: two slots, steps overlap
printf '[evolve]\nexecutor = slurm\n' >"$TMP/ev.ini"
expect_rc "evolve cpu_matmul inside salloc -n2 through srun steps" 0 $T 600 salloc -n2 -t 10 \
  "$CUCO" --config "$TMP/ev.ini" evolve "$ROOT/examples/cpu_matmul" --llm none \
  --generations 2 --islands 2 --out "$TMP/ev"
expect_grep "... with two evaluation slots" "$TMP/out" "2 evaluation slots"
expect_grep "... every candidate correct" "$TMP/out" "candidates: 5 \(5 correct, 0 failed"
STEPS=$TMP/ev/slurm-steps.log
if [ -s "$STEPS" ] && python3 - "$STEPS" <<'PY'
import sys, re
iv = []
for line in open(sys.argv[1]):
    f = dict(re.findall(r'(\w+)=(\S+)', line))
    iv.append((float(f['start']), float(f['end']), f['step'], f['label']))
ids = {s for _, _, s, _ in iv}
ok = len(ids) == len(iv) and all(re.fullmatch(r'\d+\.\d+', s) for s in ids)
over = [(a, b) for a in iv for b in iv
        if a[2] < b[2] and a[3].split(':')[0] != b[3].split(':')[0]
        and a[0] < b[1] and b[0] < a[1]]
print(len(iv), "steps,", len(over), "overlapping pairs of different candidates")
sys.exit(0 if ok and over else 1)
PY
then ok "two steps of different candidates overlapped ($(wc -l <"$STEPS") steps)"
else not_ok "two steps of different candidates overlapped" "$(cat "$STEPS" 2>&1 | head -20)"; fi

# the allocation ends under a run (scancel of the job): --resume in a new
# allocation finishes it, every candidate evaluated once, none left running
$T 600 salloc -n2 -t 10 "$CUCO" --config "$TMP/ev.ini" evolve "$ROOT/examples/cpu_matmul" \
  --llm none --generations 4 --islands 2 --out "$TMP/ev2" >"$TMP/ev2a.out" 2>&1 &
pid=$!
q() { sqlite3 -cmd ".timeout 5000" "$TMP/ev2/run.db" "$1" 2>/dev/null; }
for _ in $(seq 1 600); do
  [ "$(q "select count(*) from programs where status = 'ok' and edit_kind = 'tune'")" -ge 2 ] 2>/dev/null && break
  sleep 0.1
done
job=$(squeue -h -o '%i' 2>/dev/null | head -1)
[ -n "$job" ] && scancel "$job"
wait "$pid"
expect_rc "--resume in a new allocation after the first ended" 0 $T 600 salloc -n2 -t 10 \
  "$CUCO" --config "$TMP/ev.ini" evolve "$ROOT/examples/cpu_matmul" --llm none \
  --generations 4 --islands 2 --out "$TMP/ev2" --resume
left=$(q "select count(*) from programs where status in ('pending','running')")
tunes=$(q "select count(*) from programs where edit_kind = 'tune'")
bad=$(q "select count(*) from programs where status = 'failed'")
if [ -n "$job" ] && [ "$left" = 0 ] && [ "$tunes" = 8 ] && [ "$bad" = 0 ]; then
  ok "after the allocation ended (job $job), --resume finished the run: 8 candidates, none failed or left"
else not_ok "--resume after the allocation ended" "job '$job' left $left tunes $tunes failed $bad; failed: $(q "select id || ' ' || stage || ': ' || substr(error, 1, 400) from programs where status = 'failed'"); first run: $(tail -5 "$TMP/ev2a.out")"; fi
done_testing

# tests/cli/slurm.sh - a one-node Slurm cluster in a temp folder for the CLI
# tests (source it after lib.sh).  slurm_start DIR starts munged (its own
# key and socket in DIR), slurmctld and slurmd on free ports with this host
# as controller and only node; it returns non-zero and sets SLURM_WHY when
# something cannot start.  slurm_stop stops every daemon it started by the
# PIDs in their pid files (the caller's EXIT trap calls it).
# Exports SLURM_CONF so srun/sinfo/squeue/scancel find the cluster.

_slurm_dir=""
slurm_free_port() { # a TCP port nobody listens on, from the ephemeral range
  local p
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

slurm_start() {
  local d=$1 host ncpu cport dport i
  SLURM_WHY=""
  for b in munged slurmctld slurmd srun sinfo squeue scancel; do
    command -v "$b" >/dev/null 2>&1 || { SLURM_WHY="$b is not installed (scripts/install-deps.sh installs slurm-wlm and munge)"; return 1; }
  done
  [ "$(id -u)" -eq 0 ] || { SLURM_WHY="slurmd needs root here (SlurmUser=root, proctrack/linuxproc); running as $(id -un)"; return 1; }
  _slurm_dir=$d
  mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/log" && chmod 700 "$d/munge"
  head -c 1024 /dev/urandom >"$d/munge/munge.key" && chmod 400 "$d/munge/munge.key"
  munged --force --socket="$d/munge/sock" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/log/munged.log" \
    --seed-file="$d/munge/seed" >"$d/log/munged.out" 2>&1 ||
    { SLURM_WHY="munged did not start: $(tail -c 300 "$d/log/munged.out" "$d/log/munged.log" 2>/dev/null | tr '\n' ' ')"; return 1; }
  host=$(hostname -s)
  ncpu=$(nproc)
  cport=$(slurm_free_port) && dport=$(slurm_free_port) || { SLURM_WHY="no free TCP port"; return 1; }
  cat >"$d/slurm.conf" <<CONF
ClusterName=cucotest
SlurmctldHost=$host
SlurmctldPort=$cport
SlurmdPort=$dport
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldParameters=enable_configless
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
InactiveLimit=0
KillWait=2
MinJobAge=30
OverTimeLimit=0
NodeName=$host CPUs=$ncpu State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=60 State=UP OverSubscribe=NO
CONF
  export SLURM_CONF="$d/slurm.conf"
  slurmctld -f "$d/slurm.conf" >"$d/log/slurmctld.out" 2>&1 ||
    { SLURM_WHY="slurmctld did not start: $(tail -c 300 "$d/log/slurmctld.out" "$d/log/slurmctld.log" 2>/dev/null | tr '\n' ' ')"; return 1; }
  slurmd -f "$d/slurm.conf" >"$d/log/slurmd.out" 2>&1 ||
    { SLURM_WHY="slurmd did not start: $(tail -c 300 "$d/log/slurmd.out" "$d/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"; return 1; }
  for i in $(seq 1 40); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^idle'; then return 0; fi
    sleep 0.5
  done
  SLURM_WHY="the node did not become idle in 20 s: $(sinfo -h 2>&1 | head -c 200) $(tail -c 300 "$d/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
  return 1
}

_slurm_kill_pidfile() { # PIDFILE: TERM, then KILL after 5 s
  local f=$1 p i
  [ -f "$f" ] || return 0
  p=$(cat "$f" 2>/dev/null)
  case "$p" in '' | *[!0-9]*) return 0 ;; esac
  kill "$p" 2>/dev/null || return 0
  for i in $(seq 1 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$p" 2>/dev/null
}

slurm_stop() {
  [ -n "$_slurm_dir" ] || return 0
  if [ -n "${SLURM_CONF:-}" ]; then # jobs first: their steps end with them
    scancel --full -u "$(id -un)" >/dev/null 2>&1 || true
  fi
  _slurm_kill_pidfile "$_slurm_dir/slurmd.pid"
  _slurm_kill_pidfile "$_slurm_dir/slurmctld.pid"
  _slurm_kill_pidfile "$_slurm_dir/munge/munged.pid"
  _slurm_dir=""
}

#!/bin/bash
# Issue 47: the hostile-candidate suite.  Each candidate is the CPU
# example's seed with one attack on matmul's first call (or in its source,
# for the compile-time ones), evaluated by `cuco eval` under the sandbox.
# The calls are token-pasted and the workload's [allow] list is widened to
# them, so neither the text check nor the allowlist stops them: what is
# tested is the boundary the kernel keeps (namespaces, the minimal root,
# cuco-confine's limits and system-call filter) and what cuco does with the
# results.  Each check asserts the observable outcome: the secret is
# nowhere, the socket's server saw nobody, the sibling's file is unchanged,
# the terminal bytes are clean, the limit held.
. "$(dirname "$0")/lib.sh"
unset CUCO_CONFIG CUCO_SANDBOX
WL=$ROOT/examples/cpu_matmul
export CUCO_CACHE_DIR=$TMP/cache
export CUCO_SANDBOX=auto
"$CUCO" doctor --json >"$TMP/doctor.json" 2>"$TMP/doctor.err"
ACTIVE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandbox"]["active"])' "$TMP/doctor.json")
if [ "$ACTIVE" != bwrap ]; then
  # no bubblewrap: cuco refuses to run candidates unconfined unless told
  "$CUCO" eval "$WL" --no-bench >"$TMP/out" 2>&1; rc=$?
  [ "$rc" -ne 0 ] && ok "no sandbox here: eval refused (exit $rc)" || not_ok "no sandbox: eval refused" "$(cat "$TMP/out")"
  expect_grep "the refusal says how to run unconfined" "$TMP/out" "not run: no sandbox: .*mode = none"
  echo "ok 3 # SKIP bubblewrap cannot run here: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandbox"]["why"])' "$TMP/doctor.json")"
  echo "1..3"; exit 0
fi

WIDE=$TMP/wide
cp -r "$WL" "$WIDE"
# (indented lines continue the example's own [allow] line)
sed -i '/^symbols = /a\
  open, read, write, close, socket, connect, unlink, malloc, memset, fork,\
  pause, ptrace, unshare, getppid, process_vm_readv, getenv, _exit, fputs,\
  fprintf, stdout, stderr, fflush, readlink, __fprintf_chk, __memset_chk' "$WIDE/workload.ini"
sed -i 's/^symbols = \(.*\)$/symbols = \1,/' "$WIDE/workload.ini"
cat >"$TMP/attack.h" <<'C'
#define PASTE(a, b) a##b
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
extern int PASTE(op, en)(const char *, int, ...);
extern long PASTE(re, ad)(int, void *, unsigned long);
extern long PASTE(wr, ite)(int, const void *, unsigned long);
extern int PASTE(clo, se)(int);
extern int PASTE(fo, rk)(void);
extern int PASTE(pau, se)(void);
extern void PASTE(_ex, it)(int);
extern int PASTE(un, link)(const char *);
extern long PASTE(ptr, ace)(long, long, void *, void *);
extern int PASTE(un, share)(int);
extern int PASTE(getp, pid)(void);
/* say LABEL N on stdout (run.log) */
static void say(const char *label, long n)
{
  fprintf(stdout, "%s %ld\n", label, n);
  fflush(stdout);
}
/* bytes of PATH that could be read (-1: could not open), said and echoed */
static long slurp(const char *label, const char *path)
{
  char b[4096];
  long fd = PASTE(op, en)(path, 0), n = -1;
  if (fd >= 0) {
    n = PASTE(re, ad)((int)fd, b, sizeof(b));
    if (n > 0)
      PASTE(wr, ite)(1, b, (unsigned long)n);
    PASTE(clo, se)((int)fd);
  }
  say(label, n);
  return n;
}
static long put(const char *path, const char *text, long times)
{
  long fd = PASTE(op, en)(path, 01 | 0100 | 01000, 0644), i, w = 0;
  for (i = 0; fd >= 0 && i < times; i++)
    w += PASTE(wr, ite)((int)fd, text, strlen(text));
  if (fd >= 0)
    PASTE(clo, se)((int)fd);
  return fd < 0 ? -1 : w;
}
C
# make_cand NAME CALLS [PRE]: the seed with CALLS on matmul's first call
# (PRE: more text before matmul, inside the EVOLVE block)
make_cand() {
  python3 - "$WL/seed.c" "$TMP/attack.h" "$2" "${3:-}" >"$TMP/$1.c" <<'PY'
import sys
seed, attack, calls, pre = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3], sys.argv[4]
anchor = "static void matmul("
body = "  int i0, k0, i, j, k;\n"
assert anchor in seed and body in seed
seed = seed.replace(anchor, attack + pre + "\n" + anchor, 1)
seed = seed.replace(body, body + "  { static int once; if (!once++) { " + calls + " } }\n", 1)
sys.stdout.write(seed)
PY
}
run_eval() { # NAME ARGS...: the candidate's eval, its own --out
  local name=$1; shift
  "$CUCO" eval "$WIDE" --candidate "$TMP/$name.c" --out "$TMP/runs/$name" "$@" \
    >"$TMP/$name.out" 2>"$TMP/$name.err"
  echo $? >"$TMP/$name.rc"
}
log_of() { cat "$TMP/runs/$1"/*/run.log "$TMP/runs/$1"/run.log 2>/dev/null; }
ran() { # NAME LABEL: the attack ran (its first line is in the log)
  if log_of "$1" | grep -q "^$2"; then ok "$1: the attack ran"
  else not_ok "$1: the attack ran" "$(tail -c 600 "$TMP/$1.out" "$TMP/$1.err")"; fi
}
nowhere() { # NAME WORD NAME...: WORD in no output, log or file of the runs
  local what=$1 word=$2; shift 2
  local n hits=""
  for n in "$@"; do
    grep -rlaF "$word" "$TMP/$n.out" "$TMP/$n.err" "$TMP/runs/$n" 2>/dev/null | head -3 >>"$TMP/hits"
    hits=$(grep -rlaF "$word" "$TMP/$n.out" "$TMP/$n.err" "$TMP/runs/$n" 2>/dev/null | head -3)
    [ -n "$hits" ] && break
  done
  [ -z "$hits" ] && ok "$what" || not_ok "$what" "found in: $hits"
}
mkdir -p "$TMP/runs"

# the secrets: a service's file (/var), one beside the repository (a folder
# no command names), another run's database, and the host's /etc/shadow
SECRET=secret-$RANDOM$RANDOM$RANDOM
VDIR=$(mktemp -d /var/tmp/cuco-t1206.XXXXXX)
trap : EXIT; trap 'rm -rf "$TMP" "$VDIR" "$ROOT/build/t1206-secret.$$"' EXIT
echo "$SECRET" >"$VDIR/file"
echo "$SECRET" >"$ROOT/build/t1206-secret.$$"
mkdir -p "$TMP/otherrun" && echo "$SECRET" >"$TMP/otherrun/run.db"
make_cand reads "slurp(\"var:\", \"$VDIR/file\"); slurp(\"repo:\", \"$ROOT/build/t1206-secret.$$\"); slurp(\"otherrun:\", \"$TMP/otherrun/run.db\"); slurp(\"shadow:\", \"/etc/shadow\"); slurp(\"status:\", \"/proc/self/status\");"
run_eval reads --no-bench
ran reads var:
nowhere "reads: no secret (var, repository, another run, ...) in any output" "$SECRET" reads
log_of reads >"$TMP/reads.log"
expect_grep "reads: the service's file could not be opened" "$TMP/reads.log" "^var: -1$"
expect_grep "reads: nor the file beside the repository" "$TMP/reads.log" "^repo: -1$"
expect_grep "reads: nor another run's database" "$TMP/reads.log" "^otherrun: -1$"
expect_grep "reads: /etc/shadow reads as empty" "$TMP/reads.log" "^shadow: (0|-1)$"
expect_grep "reads: uid 65534 inside" "$TMP/reads.log" "^Uid:[[:space:]]+65534"
expect_grep "reads: no capabilities" "$TMP/reads.log" "^CapEff:[[:space:]]+0+$"
expect_grep "reads: a seccomp filter" "$TMP/reads.log" "^Seccomp:[[:space:]]+2$"
expect_grep "reads: no new privileges" "$TMP/reads.log" "^NoNewPrivs:[[:space:]]+1$"

# compile time: an assembler .incbin of the secret, the directive's name
# token-pasted so no text check sees it; the compiler runs sandboxed
make_cand incbin "" "#define S2(x) #x
#define S(a, b) S2(a##b)
__asm__(\".pushsect\" \"ion .rodata\\n\" S(.inc, bin) \" \\\"$VDIR/file\\\"\\n.popsection\");"
# (".pushsect" "ion": the static refusal of .pushsection is a text check too)
run_eval incbin --no-bench
[ "$(cat "$TMP/incbin.rc")" != 0 ] && ok "incbin: the build fails" || not_ok "incbin: the build fails" "$(cat "$TMP/incbin.out")"
nowhere "incbin: the secret is nowhere (binary, logs, run folder)" "$SECRET" incbin

# sockets: an abstract Unix socket and a TCP port on the host's loopback,
# each with a server that records anyone who connects
ABS=cuco-t1206-$$
python3 - "$ABS" "$TMP/connected" <<'PY' &
import socket, sys, threading, time
def serve(s):
    s.listen(4); s.settimeout(60)
    try:
        c, _ = s.accept(); open(sys.argv[2], "a").write("someone\n")
    except Exception: pass
u = socket.socket(socket.AF_UNIX); u.bind("\0" + sys.argv[1])
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t.bind(("127.0.0.1", 0))
open(sys.argv[2] + ".port", "w").write(str(t.getsockname()[1]))
for s in (u, t): threading.Thread(target=serve, args=(s,), daemon=True).start()
time.sleep(60)
PY
SRV=$!
for i in $(seq 50); do [ -s "$TMP/connected.port" ] && break; sleep 0.1; done
PORT=$(cat "$TMP/connected.port")
make_cand sockets "struct sockaddr_un a; struct sockaddr_in t; long s = PASTE(sock, et)(AF_UNIX, SOCK_STREAM, 0); memset(&a, 0, sizeof(a)); a.sun_family = AF_UNIX; memcpy(a.sun_path + 1, \"$ABS\", sizeof(\"$ABS\") - 1); say(\"abstract:\", PASTE(conn, ect)((int)s, &a, (unsigned)(2 + sizeof(\"$ABS\")))); s = PASTE(sock, et)(AF_INET, SOCK_STREAM, 0); memset(&t, 0, sizeof(t)); t.sin_family = AF_INET; t.sin_port = (unsigned short)((($PORT) >> 8) | ((($PORT) & 255) << 8)); t.sin_addr.s_addr = 0x0100007f; say(\"tcp:\", PASTE(conn, ect)((int)s, &t, sizeof(t))); say(\"packet:\", PASTE(sock, et)(17, SOCK_RAW, 0));" "#include <netinet/in.h>"
run_eval sockets --no-bench
ran sockets abstract:
kill $SRV 2>/dev/null; wait $SRV 2>/dev/null
[ ! -e "$TMP/connected" ] && ok "sockets: the host's abstract socket and loopback port saw nobody" || not_ok "sockets: nobody connected" "$(cat "$TMP/connected")"
log_of sockets >"$TMP/sockets.log"
expect_grep "sockets: the connects failed" "$TMP/sockets.log" "^abstract: -1$"
expect_grep "sockets: a raw packet socket is refused" "$TMP/sockets.log" "^packet: -1$"

# writes: the host's /tmp (TMPDIR) and a sibling candidate's binary in the
# same run's folder
mkdir -p "$TMP/runs/sibling" && echo "honest binary" >"$TMP/runs/sibling/seed.bin"
PWN=/tmp/cuco-t1206-pwned.$$
make_cand writes "say(\"tmp:\", put(\"$PWN\", \"pwned\", 1)); say(\"sibling:\", put(\"$TMP/runs/sibling/seed.bin\", \"poisoned\", 1)); say(\"envtmp:\", put(getenv(\"TMPDIR\") ? \"/tmp/x\" : \"/tmp/y\", \"private\", 1));"
run_eval writes --no-bench
ran writes tmp:
[ ! -e "$PWN" ] && ok "writes: nothing reached the host's /tmp" || { not_ok "writes: host /tmp" "$PWN exists"; rm -f "$PWN"; }
[ "$(cat "$TMP/runs/sibling/seed.bin")" = "honest binary" ] && ok "writes: the sibling's binary is unchanged" || not_ok "writes: sibling unchanged" "$(head -c 100 "$TMP/runs/sibling/seed.bin")"
expect_grep "writes: its own private /tmp works" "$(log_of writes >"$TMP/writes.log"; echo "$TMP/writes.log")" "^envtmp: 7$"

# the terminal: escape sequences on stdout and stderr
make_cand term "fputs(\"\\033]0;pwned\\007\\033[2J\\033[31mred\\r\\n\", stdout); fputs(\"\\033[?1049h\\233 31m\\n\", stderr); fflush(stdout);"
run_eval term --no-bench
if grep -rlaP '[\x00-\x08\x0b-\x1f\x7f]' "$TMP/term.out" "$TMP/term.err" "$TMP/runs/term" 2>/dev/null | grep -v '\.bin$\|/cache/\|\.db$' | head -1 | grep -q .; then
  not_ok "term: no control byte reaches cuco's output or the run's logs" "$(grep -rlaP '[\x00-\x08\x0b-\x1f\x7f]' "$TMP/term.out" "$TMP/term.err" "$TMP/runs/term" | head -3)"
else ok "term: no control byte reaches cuco's output or the run's logs"; fi

# the system-call filter: ptrace of the parent, a user namespace,
# process_vm_readv
make_cand calls "char b[8]; struct iovec l = {b, 8}, r = {b, 8}; say(\"ptrace:\", PASTE(ptr, ace)(16, PASTE(getp, pid)(), 0, 0)); say(\"unshare:\", PASTE(un, share)(0x10000000)); say(\"vm_readv:\", process_vm_readv(PASTE(getp, pid)(), &l, 1, &r, 1, 0));"
run_eval calls --no-bench
ran calls ptrace:
log_of calls >"$TMP/calls.log"
expect_grep "calls: ptrace refused" "$TMP/calls.log" "^ptrace: -1$"
expect_grep "calls: a new user namespace refused" "$TMP/calls.log" "^unshare: -1$"
expect_grep "calls: process_vm_readv refused" "$TMP/calls.log" "^vm_readv: -1$"

# limits ([sandbox] memory, file_size, processes in cuco.ini)
cat >"$TMP/limits.ini" <<'INI'
[sandbox]
memory = 96M
file_size = 1M
processes = 40
INI
make_cand mem "char *p = malloc(512u << 20); say(\"mem:\", p ? 1 : 0); if (p) { memset(p, 1, 512u << 20); say(\"touched:\", 512); }"
make_cand disk "say(\"disk:\", put(\"big.out\", \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\", 131072));"
make_cand procs "long n = 0, i; for (i = 0; i < 2000; i++) { long p = PASTE(fo, rk)(); if (p == 0) { PASTE(pau, se)(); PASTE(_ex, it)(0); } if (p < 0) break; n++; } say(\"forked:\", n);"
for n in mem disk procs; do CUCO_CONFIG=$TMP/limits.ini run_eval $n --no-bench; done
ran mem mem:
log_of mem >"$TMP/mem.log"; log_of procs >"$TMP/procs.log"
expect_no_grep "memory: 512 MiB could not be had under a 96M limit" "$TMP/mem.log" "^touched: 512$"
size=$(stat -c %s "$TMP/runs/disk"/*/big.out "$TMP/runs/disk/big.out" 2>/dev/null | sort -n | tail -1)
[ "${size:-0}" -le $((1 << 20)) ] && ok "disk: the file stopped at the 1M limit (${size:-0} bytes)" || not_ok "disk: file size limit" "$size bytes"
n=$(sed -n 's/^forked: //p' "$TMP/procs.log" | head -1)
if [ "$(id -u)" = 0 ]; then
  # RLIMIT_NPROC never applies to uid 0, and a root-run bubblewrap maps the
  # candidate to uid 0 outside: the deadline and the tree kill bound it
  echo "ok $((_n += 1)) - processes: the fork loop ran (forked ${n:-?}) # SKIP cuco runs as root: RLIMIT_NPROC does not apply"
else
  [ -n "$n" ] && [ "$n" -lt 2000 ] && ok "processes: the fork loop stopped at $n of 2000" || not_ok "processes: limit" "forked '${n:-}' ($(tail -c 300 "$TMP/procs.err"))"
fi
pgrep -f "$TMP/runs" >/dev/null && not_ok "processes: nothing left running" "$(pgrep -af "$TMP/runs")" || ok "processes: nothing left running"

# the binary that runs is the one that was checked: the candidate replaces
# its own program (argv[0]) on its first run; the second run must refuse
make_cand rebin "static char self[4096]; long n = readlink(\"/proc/self/exe\", self, sizeof(self) - 1); if (n > 0) { self[n] = 0; say(\"unlink:\", PASTE(un, link)(self)); say(\"rewrote:\", put(self, \"#!/bin/sh\\necho forged\\n\", 1)); }"
run_eval rebin --no-bench
ran rebin unlink:
expect_grep "rebin: the rewritten program is refused, named" "$TMP/rebin.out" "the program changed after it was checked"
[ "$(cat "$TMP/rebin.rc")" = 1 ] && ok "rebin: the candidate fails" || not_ok "rebin: fails" "rc $(cat "$TMP/rebin.rc")"

# the honest seed still passes under all of it
run_eval_seed() { "$CUCO" eval "$WL" --out "$TMP/runs/seed" >"$TMP/seed.out" 2>&1; }
run_eval_seed && ok "the honest seed passes verify and bench in the sandbox" || not_ok "seed passes" "$(tail -5 "$TMP/seed.out")"
done_testing

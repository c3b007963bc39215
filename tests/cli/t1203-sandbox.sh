#!/bin/bash
# Issue 21 on examples/cpu_matmul: a candidate that reads its ancestors'
# environments (/proc/PID/environ) while an API key is set, and one whose
# grandchild setsid()s and sleeps holding stdout open.  The key must be
# nowhere in the output, the --out folder or run.db; the eval returns in
# bounded time naming the escape; nothing is left running.  Run twice:
# [sandbox] mode=auto (bubblewrap where it can run) and mode=none (the
# subreaper alone, what the GPU machines without bwrap get).
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$ROOT/examples/cpu_matmul
export CUCO_CACHE_DIR=$TMP/cache
KEY=sk-cucotest-$$-0123456789abcdef
TOK=tok-cucotest-$$-fedcba9876543210
# The attacks call libc (open, read, write, fork, setsid, ...), inside the
# EVOLVE block, on the first call of matmul.  The allowlist stage would
# reject every one of those calls (t1205); this test is about the next
# layer, so it runs on a copy of the workload that widens its list to them
# ([allow] symbols, shown by eval): what the sandbox and the deadlines do
# when a call gets past the allowlist.
WIDE=$TMP/wide
cp -r "$WL" "$WIDE"
# (the example's own [allow] line widened further)
sed -i 's/^symbols = \(.*\)$/symbols = \1, getppid, open, read, write, close, fork, setsid, pause/' "$WIDE/workload.ini"
# The names are token-pasted, as a hostile candidate would write them, so
# the textual forbidden-call check (the early, friendly one) does not see
# them either: what stops them is the allowlist on the object (t1205).
cat >"$TMP/attack.h" <<'C'
#define PASTE(a, b) a##b
extern int PASTE(getp, pid)(void);
extern int PASTE(op, en)(const char *, int, ...);
extern long PASTE(re, ad)(int, void *, unsigned long);
extern long PASTE(wr, ite)(int, const void *, unsigned long);
extern int PASTE(clo, se)(int);
extern int PASTE(fo, rk)(void);
extern int PASTE(set, sid)(void);
extern int PASTE(pau, se)(void);
/* the Linux x86-64 numbers the attacks were first written with */
static long sc(long n, long a, long b, long c)
{
  switch (n) {
  case 110: return PASTE(getp, pid)();
  case 2: return PASTE(op, en)((const char *)a, (int)b);
  case 0: return PASTE(re, ad)((int)a, (void *)b, (unsigned long)c);
  case 3: return PASTE(clo, se)((int)a);
  case 1: return PASTE(wr, ite)((int)a, (const void *)b, (unsigned long)c);
  case 57: return PASTE(fo, rk)();
  case 112: return PASTE(set, sid)();
  case 34: return PASTE(pau, se)();
  }
  return -1;
}
static void put_pid(char *p, long v)
{
  char t[24];
  int n = 0;
  do
    t[n++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (n)
    *p++ = t[--n];
  *p = 0;
}
/* Print the environment of every ancestor (getppid, then each ppid). */
static void leak(void)
{
  static char b[65536], path[64];
  long pid = sc(110, 0, 0, 0), fd, n, i, d;
  for (d = 0; d < 12 && pid > 0; d++) {
    memcpy(path, "/proc/", 6);
    put_pid(path + 6, pid);
    strcat(path, "/environ");
    fd = sc(2, (long)path, 0, 0);
    if (fd >= 0) {
      n = sc(0, fd, (long)b, sizeof(b));
      sc(3, fd, 0, 0);
      for (i = 0; i < n; i++)
        if (!b[i])
          b[i] = '\n';
      if (n > 0) {
        sc(1, 1, (long)b, n);
        sc(1, 2, (long)b, n);
      }
    }
    put_pid(path + 6, pid);
    strcat(path, "/stat");
    fd = sc(2, (long)path, 0, 0);
    if (fd < 0)
      break;
    n = sc(0, fd, (long)b, sizeof(b) - 1);
    sc(3, fd, 0, 0);
    b[n > 0 ? n : 0] = 0;
    {
      char *q = strrchr(b, ')');
      if (!q)
        break;
      pid = strtol(q + 4, NULL, 10);
    }
  }
}
/* Copy up to 4 KiB of PATH to stdout (its run.log), or say it could not. */
static void peek(const char *path)
{
  char b[4096];
  long fd = sc(2, (long)path, 0, 0), n;
  if (fd < 0) {
    sc(1, 1, (long)"peek: cannot open\n", 18);
    return;
  }
  n = sc(0, fd, (long)b, sizeof(b));
  if (n > 0)
    sc(1, 1, (long)b, n);
  sc(3, fd, 0, 0);
}
/* A grandchild that leaves the session and sleeps holding stdout. */
static void escape(void)
{
  if (sc(57, 0, 0, 0) == 0) {
    sc(112, 0, 0, 0);
    for (;;)
      sc(34, 0, 0, 0);
  }
}
C
# make_cand NAME CALLS: the seed with CALLS on matmul's first call
make_cand() {
  python3 - "$WL/seed.c" "$TMP/attack.h" "$2" >"$TMP/$1.c" <<'PY'
import sys
seed, attack, calls = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
anchor = "static void matmul("
body = "  int i0, k0, i, j, k;\n"
assert anchor in seed and body in seed
seed = seed.replace(anchor, attack + anchor, 1)
seed = seed.replace(body, body + "  { static int once; if (!once++) { " + calls + " } }\n", 1)
sys.stdout.write(seed)
PY
}
make_cand leak "leak();"
make_cand esc "escape();"
# issue 47: a file in a folder the sandbox hides (/var: services' and other
# users' data), and the capabilities left to the candidate
SECRET_DIR=$(mktemp -d /var/tmp/cuco-t1203.XXXXXX)
SECRET_WORD=secret-$RANDOM$RANDOM
echo "$SECRET_WORD" >"$SECRET_DIR/file" && chmod 600 "$SECRET_DIR/file"
make_cand peekf "peek(\"$SECRET_DIR/file\"); peek(\"/proc/self/status\");"
make_cand esc_hang "escape(); for (;;) sc(34, 0, 0, 0);"

# run_eval NAME: cuco eval under a shell whose own initial environment
# holds the key (cuco's parent: an ancestor the candidate can reach)
run_eval() {
  local name=$1; shift
  env OPENAI_API_KEY="$KEY" MY_SERVICE_TOKEN="$TOK" \
    sh -c '"$@"; exit $?' sh "$CUCO" eval "$WIDE" --candidate "$TMP/$name.c" \
    --out "$TMP/$MODE/$name" "$@" >"$TMP/out" 2>"$TMP/err"
}
no_key_in() { # NAME PATH...
  local name=$1; shift
  if grep -rqaF -e "$KEY" -e "$TOK" "$@" 2>/dev/null; then
    not_ok "$name" "$(grep -rlaF -e "$KEY" -e "$TOK" "$@")"
  else ok "$name"; fi
}
nothing_left() { # NAME: no process runs from the candidate's folder
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pgrep -f "$TMP/$MODE" >/dev/null || break
    sleep 0.2
  done
  if pgrep -f "$TMP/$MODE" >/dev/null; then
    not_ok "$1" "$(pgrep -af "$TMP/$MODE")"; pkill -9 -f "$TMP/$MODE"
  else ok "$1"; fi
}

for MODE in auto none; do
  export CUCO_SANDBOX=$MODE
  "$CUCO" doctor --json >"$TMP/doctor.json" 2>"$TMP/doctor.err"
  ACTIVE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandbox"]["active"])' "$TMP/doctor.json")
  case "$MODE:$ACTIVE" in
  auto:bwrap | auto:refused | none:subreaper) ok "$MODE: doctor says $ACTIVE" ;;
  *) not_ok "$MODE: doctor says $ACTIVE" "$(cat "$TMP/doctor.json" "$TMP/doctor.err")" ;;
  esac
  if [ "$ACTIVE" = refused ]; then
    # issue 47: no bubblewrap here, and auto never falls back to running
    # candidates unconfined: a refusal that says how to ask for it
    run_eval leak --no-bench
    expect_grep "auto without bwrap: the eval is refused, saying how to run unconfined" "$TMP/out" "not run: no sandbox: .*mode = none"
    continue
  fi
  if [ "$MODE" = none ]; then
    expect_grep "none: running unconfined is announced" "$TMP/doctor.err" "mode is none: candidates run without"
  fi

  # the environment read: whatever it reaches, no key is stored or shown
  run_eval leak --no-bench
  cp "$TMP/out" "$TMP/$MODE-leak.out"; cp "$TMP/err" "$TMP/$MODE-leak.err"
  no_key_in "$MODE: key not in eval output" "$TMP/$MODE-leak.out" "$TMP/$MODE-leak.err"
  no_key_in "$MODE: key nowhere under --out" "$TMP/$MODE/leak"
  if [ "$ACTIVE" = subreaper ]; then
    # without namespaces the shell above cuco is readable: the key was
    # printed, and redaction (the last line of defence) replaced it
    expect_grep "$MODE: the leak was redacted in run.log" "$TMP/$MODE/leak/leak/run.log" "OPENAI_API_KEY=\[redacted\]"
  else
    expect_no_grep "$MODE: bwrap: no ancestor's environment reached" "$TMP/$MODE/leak/leak/run.log" "OPENAI_API_KEY="
  fi

  # reading a hidden folder; the capabilities inside
  run_eval peekf --no-bench
  if [ "$ACTIVE" = bwrap ]; then
    expect_no_grep "$MODE: bwrap: a file under /var is not reached" "$TMP/$MODE/peekf/peekf/run.log" "$SECRET_WORD"
    expect_grep "$MODE: bwrap: ... the open fails there" "$TMP/$MODE/peekf/peekf/run.log" "^peek: cannot open"
    expect_grep "$MODE: bwrap: no capability is left" "$TMP/$MODE/peekf/peekf/run.log" "^CapEff:[[:space:]]+0+$"
  else
    # without namespaces the file is there to read: the contrast
    expect_grep "$MODE: subreaper only: the same file is read" "$TMP/$MODE/peekf/peekf/run.log" "$SECRET_WORD"
  fi

  # the setsid escape, leader exiting 0 at once
  t0=$(date +%s)
  run_eval esc --no-bench --timeout 20; rc=$?
  dt=$(( $(date +%s) - t0 ))
  [ "$dt" -lt 15 ] && ok "$MODE: escape: eval returns ($dt s)" || not_ok "$MODE: escape: eval returns" "$dt s"
  nothing_left "$MODE: escape: nothing left running"
  if [ "$ACTIVE" = subreaper ]; then
    [ "$rc" = 1 ] && ok "$MODE: escape fails the candidate" || not_ok "$MODE: escape fails the candidate" "rc $rc: $(cat "$TMP/out")"
    expect_grep "$MODE: escape named in one line" "$TMP/out" \
      "^esc.c: failed: verify: size small_a: exit 0; a process left by the candidate \(setsid\) held its output open: killed$"
  fi

  # the escape with a hung leader: the deadline holds
  t0=$(date +%s)
  run_eval esc_hang --no-bench --timeout 2; cp "$TMP/out" "$TMP/$MODE-hang.out"
  dt=$(( $(date +%s) - t0 ))
  [ "$dt" -lt 12 ] && ok "$MODE: hang+escape: eval returns ($dt s)" || not_ok "$MODE: hang+escape: eval returns" "$dt s"
  expect_grep "$MODE: hang+escape: hang named" "$TMP/out" "esc_hang.c: failed: verify: size small_a: hang: timed out after"
  nothing_left "$MODE: hang+escape: nothing left running"
done

# cuco evolve on a workload whose seed does both: bounded, nothing left,
# no key in run.db or the run folder.
MODE=evolve
export CUCO_SANDBOX=none
mkdir -p "$TMP/$MODE/wl"
cp "$WIDE/workload.ini" "$WIDE/check.c" "$TMP/$MODE/wl/"
make_cand both "leak(); escape();"
cp "$TMP/both.c" "$TMP/$MODE/wl/seed.c"
t0=$(date +%s)
env OPENAI_API_KEY="$KEY" MY_SERVICE_TOKEN="$TOK" sh -c '"$@"; exit $?' sh \
  "$CUCO" evolve "$TMP/$MODE/wl" --llm none --generations 1 --islands 1 \
  --out "$TMP/$MODE/run" >"$TMP/out" 2>"$TMP/err"
dt=$(( $(date +%s) - t0 ))
[ "$dt" -lt 120 ] && ok "evolve returns ($dt s)" || not_ok "evolve returns" "$dt s"
nothing_left "evolve: nothing left running"
no_key_in "evolve: key not in its output" "$TMP/out" "$TMP/err"
no_key_in "evolve: key nowhere in the run folder" "$TMP/$MODE/run"
if [ -f "$TMP/$MODE/run/run.db" ]; then
  sqlite3 "$TMP/$MODE/run/run.db" .dump >"$TMP/dump.sql"
  no_key_in "evolve: key not in run.db (sqlite3 .dump)" "$TMP/dump.sql"
  expect_grep "evolve: run.db names the escape" "$TMP/dump.sql" "held its output open: killed"
else
  not_ok "evolve: run.db written" "$(cat "$TMP/err")"
fi
rm -rf "$SECRET_DIR"
done_testing

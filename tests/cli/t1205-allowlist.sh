#!/bin/bash
# The symbol allowlist (issue 21): a candidate is judged by what the
# compiler produced.  On examples/cpu_matmul, calls the textual check cannot
# see -- a token-pasted system(), a name split by a line continuation, a
# hand-declared libc call off the list, an inline-asm system call, a
# definition that replaces the frozen harness's clock_gettime -- are
# rejected at the allowlist stage with one line naming the symbol, and
# nothing ran (the files they would write do not exist).  A workload widens
# the list visibly.  On gemm_allgather at --compile-only (nvcc, no GPU): a
# candidate calling the runtime-internal rt_mix64, and one making a raw
# system call, are rejected at the allowlist; the cheat files say so; the
# driver-entry-point escape is closed and the stream calls are wrapped.
. "$(dirname "$0")/lib.sh"
WL=$ROOT/examples/cpu_matmul
export CUCO_CACHE_DIR=$TMP/cache
P=$TMP/pwned
python3 - "$WL/seed.c" "$TMP" "$P" <<'PY'
import sys
seed, tmp, p = sys.argv[1:]
s = open(seed).read()
at = '  int i0, k0, i, j, k;\n'          # the first line of matmul(), in the block
fn = 'static void matmul('
assert at in s and fn in s
def put(name, before='', body=''):
    t = s.replace(fn, before + fn, 1).replace(at, at + body, 1)
    open('%s/%s.c' % (tmp, name), 'w').write(t)
put('paste', body='  CAT(sys, tem)("touch %s-paste");\n' % p)
put('cont', body='  sys\\\ntem("touch %s-cont");\n' % p)
put('mkdir', before='extern int mkdir(const char *, unsigned);\n',
    body='  mkdir("%s-mkdir", 0755);\n' % p)
put('write', before='extern long write(int, const void *, unsigned long);\n',
    body='  write(2, "x", 1);\n')
put('clock', before='int clock_gettime(clockid_t c, struct timespec *ts)\n{\n  (void)c;\n'
    '  ts->tv_sec = 0;\n  ts->tv_nsec = 0;\n  return 0;\n}\n')
put('asm', before='static long raw(long n, long a, long b)\n{\n  long r;\n'
    '  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b) : "rcx", "r11", "memory");\n'
    '  return r;\n}\n', body='  raw(83, (long)"%s-asm", 0755);\n' % p)
PY
for f in paste cont; do
  expect_rc "$f: the static check does not see it" 0 "$CUCO" eval "$WL" --candidate "$TMP/$f.c" --static-only
  expect_rc "$f: rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/$f.c"
  expect_grep "$f: one line naming system()" "$TMP/out" "^$f.c: rejected: allowlist: $f.bin calls 'system' \(not on runtime/symbols.allow\); to allow it, change the \[allow\] line in workload.ini to \`symbols = fopen, fclose, system\` \[cpu_matmul/workload.ini \[allow\] widens it\]$"
  expect_grep "$f: the stage is named in the progress" "$TMP/out" "^  allowlist FAIL $f.bin calls 'system'"
  expect_no_grep "$f: nothing ran" "$TMP/out" "^  verify"
done
expect_rc "mkdir: a hand-declared call off the list is rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/mkdir.c"
expect_grep "mkdir: named" "$TMP/out" "mkdir.c: rejected: allowlist: mkdir.bin calls 'mkdir' \(not on runtime/symbols.allow\)"
expect_rc "write: rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/write.c" --json
expect_grep "write: the JSON verdict names stage and symbol" "$TMP/out" '"error": "allowlist: write.bin calls .write. \(not on runtime/symbols.allow\); to allow it, change the \[allow\] line in workload.ini to `symbols = fopen, fclose, write` \[cpu_matmul/workload.ini \[allow\] widens it\]"'
expect_grep "write: stage allowlist" "$TMP/out" '"stage": "allowlist"'
expect_rc "asm: an inline-asm system call is rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/asm.c"
expect_grep "asm: named" "$TMP/out" "asm.c: rejected: allowlist: asm.bin makes a raw system call \('syscall' in '[a-z_]+'\)"
expect_rc "clock: replacing the harness's clock is rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/clock.c"
expect_grep "clock: named" "$TMP/out" "clock.c: rejected: allowlist: clock.bin defines 'clock_gettime', a name on runtime/symbols.allow \(it would replace what the program links\)"
for f in paste cont mkdir asm; do
  [ -e "$P-$f" ] && not_ok "$f: nothing was written" "$P-$f exists" || ok "$f: nothing was written"
done
expect_rc "the seed passes the allowlist" 0 "$CUCO" eval "$WL" --no-bench
expect_grep "its verdict" "$TMP/out" "^  allowlist ok \(seed.bin calls only what runtime/symbols.allow allows; widened by cpu_matmul/workload.ini \[allow\]: fopen, fclose; no raw system call\)"

# A workload widens its list in workload.ini, and eval says so.
cp -r "$WL" "$TMP/wide" && sed -i 's/^symbols = \(.*\)$/symbols = \1, mkdir, rmdir/' "$TMP/wide/workload.ini"
# (under bubblewrap the candidate's /tmp is private: the proof that the
# widened call ran needs the sandbox off)
expect_rc "widened: mkdir is allowed" 0 env CUCO_SANDBOX=none "$CUCO" eval "$TMP/wide" --candidate "$TMP/mkdir.c" --no-bench
expect_grep "the widening is printed" "$TMP/out" "allowlist ok \(mkdir.bin calls only what runtime/symbols.allow allows; widened by cpu_matmul/workload.ini \[allow\]: fopen, fclose, mkdir, rmdir; no raw system call\)"
[ -d "$P-mkdir" ] && ok "widened: the call ran" || not_ok "widened: the call ran" "no $P-mkdir"
expect_rc "widened: system() still rejected" 1 "$CUCO" eval "$TMP/wide" --candidate "$TMP/paste.c"
expect_grep "the rejection mentions the widening" "$TMP/out" "calls 'system' \(not on runtime/symbols.allow\); to allow it, change the \[allow\] line in workload.ini to \`symbols = fopen, fclose, mkdir, rmdir, system\` \[cpu_matmul/workload.ini \[allow\] widens it\]"
printf '\n[allow]\nsymbols = !printf\n' >>"$TMP/wide/workload.ini"
expect_rc "a workload cannot deny" 1 "$CUCO" eval "$TMP/wide" --no-bench
expect_grep "the bad widening is named" "$TMP/err" "wide/workload.ini \[allow\] symbols: '!printf': a workload widens the list, it cannot deny"
# A freeform build that makes a script: nothing to judge, and eval says so.
mkdir -p "$TMP/sh"
printf '[workload]\nname = sh\nkind = freeform\nranks = 1\nseed = seed.sh\n[sizes]\ns = N=1\n[sets]\nverify = s\nbench = s\n[freeform]\nbuild = install -m 755 {src} {bin}\nrun = sh {bin}\n' >"$TMP/sh/workload.ini"
printf '#!/bin/sh\n# EVOLVE-BLOCK-START\n# EVOLVE-BLOCK-END\necho "{\\"time_ms\\": 1.0, \\"ok\\": true}"\n' >"$TMP/sh/seed.sh"
expect_rc "a script program evaluates" 0 "$CUCO" eval "$TMP/sh" --no-bench
expect_grep "its allowlist is skipped, visibly" "$TMP/out" "allowlist skipped \(seed.bin is not an ELF program: nothing to judge\)"
# the suite's object cache (tests/run.sh), else the default one
if [ -n "${CUCO_TEST_CACHE:-}" ]; then export CUCO_CACHE_DIR=$CUCO_TEST_CACHE; else unset CUCO_CACHE_DIR; fi

# gemm_allgather at --compile-only: the runtime's internals and raw system
# calls (the default object cache: t0103 compiled the runtime already)
G=$ROOT/workloads/gemm_allgather
if ! "$CUCO" doctor --json -o "$TMP/m.json" >/dev/null 2>&1 ||
   ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["cuda"]["nvcc"] and d["nccl"]["include_dir"]' "$TMP/m.json" 2>/dev/null; then
  ok "# SKIP no nvcc or NCCL headers: no compile-only build"
  done_testing; exit 0
fi
expect_rc "the cheats as whole sources" 0 "$CUCO" eval "$G" --write-cheats "$TMP/cheats"
for c in internal_call raw_syscall; do
  expect_grep "cheat $c expects the allowlist" "$G/cheats/$c.edit" "^// CUCO-EXPECT-REJECT: allowlist "
  sed 1d "$TMP/cheats/$c.cu" >"$TMP/$c.cu"
done
expect_rc "a runtime-internal call passes the static check" 0 "$CUCO" eval "$G" --candidate "$TMP/internal_call.cu" --static-only
expect_rc "a runtime-internal call is rejected at --compile-only" 1 "$CUCO" eval "$G" --candidate "$TMP/internal_call.cu" --compile-only --build-timeout 900
expect_grep "it linked (the symbol exists) and the allowlist named it" "$TMP/out" "^internal_call.cu: rejected: allowlist: internal_call.o calls 'rt_mix64\(unsigned long\)' \(not on runtime/symbols.allow\)$"
expect_rc "an inline-asm system call is rejected at --compile-only" 1 "$CUCO" eval "$G" --candidate "$TMP/raw_syscall.cu" --compile-only --build-timeout 900
expect_grep "raw system call named" "$TMP/out" "^raw_syscall.cu: rejected: allowlist: raw_syscall.o makes a raw system call \('syscall' in '[^']+'\)$"

# The driver's entry points hand out calls the allowlist cannot see (a
# pointer to cuStreamCreate or cuLaunchKernel): the deprecated spelling is
# denied, the versioned one goes through the runtime's screen (rt_streams.cu).
python3 - "$G/seed.cu" "$TMP" <<'PY'
import sys
seed, tmp = sys.argv[1:]
s = open(seed).read()
at = 'static int step(struct wl_ctx *ctx, struct sd *u) {\n'  # in the EVOLVE block
assert at in s
def put(name, call):
    open('%s/%s.cu' % (tmp, name), 'w').write(s.replace(at, at + '  { void *fp = 0; (void)%s; }\n' % call, 1))
put('entry', 'cudaGetDriverEntryPoint("cuStreamCreate", &fp, 0, NULL)')
put('entry_v', 'cudaGetDriverEntryPointByVersion("cuStreamCreate", &fp, 12000, 0, NULL)')
PY
expect_rc "cudaGetDriverEntryPoint is rejected at --compile-only" 1 "$CUCO" eval "$G" --candidate "$TMP/entry.cu" --compile-only --build-timeout 900
expect_grep "it is named" "$TMP/out" "^entry.cu: rejected: allowlist: entry.o calls 'cudaGetDriverEntryPoint' \(not on runtime/symbols.allow\)$"
expect_rc "cudaGetDriverEntryPointByVersion links" 0 "$CUCO" eval "$G" --candidate "$TMP/entry_v.cu" --compile-only --build-timeout 900 --out "$TMP/ev"
# What the linker produced: every stream-creating call and driver lookup
# outside the runtime's wrappers lands in them (cuco links with --wrap), so
# a perturb-hog step can start the implementation's streams late.
B=$TMP/ev/entry_v/entry_v.bin
if command -v objdump >/dev/null && [ -x "$B" ]; then
  objdump -d --no-show-raw-insn "$B" >"$TMP/dis.txt"
  awk '/^[0-9a-f]+ <.*>:$/ {fn=$2} /call .*<(__wrap_)?cuda(StreamCreate|StreamDestroy|GetDriverEntryPointByVersion)/ {print fn, $NF}' "$TMP/dis.txt" >"$TMP/calls.txt"
  if grep -q '<__wrap_cudaStreamCreateWithFlags>' "$TMP/calls.txt" && grep -q '<__wrap_cudaGetDriverEntryPointByVersion>' "$TMP/calls.txt"; then
    ok "the seed's stream creation and the lookup go through the wrappers"
  else not_ok "the seed's stream creation and the lookup go through the wrappers" "$(head -20 "$TMP/calls.txt")"; fi
  if awk '$2 !~ /__wrap_/ && $1 !~ /^<__wrap_/' "$TMP/calls.txt" | grep -q .; then
    not_ok "no direct call is left but in the wrappers" "$(awk '$2 !~ /__wrap_/ && $1 !~ /^<__wrap_/' "$TMP/calls.txt" | head)"
  else ok "no direct call is left but in the wrappers"; fi
else
  not_ok "the linked binary is there to inspect" "no objdump or no $B"
fi
done_testing

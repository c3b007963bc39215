#!/bin/bash
# cuco eval on a runtime-kind workload: nvcc builds with the object cache,
# rank processes, RESULT.json, hangs naming the rank, the cheat suite.
# The fixture's harness is host code (nvcc builds it; no GPU needed).
. "$(dirname "$0")/lib.sh"
WL=$ROOT/tests/fixtures/rt/workloads/tiny
export CUCO_CACHE_DIR=$TMP/cache

if ! "$CUCO" doctor --json -o "$TMP/m.json" >/dev/null 2>&1 ||
   ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["cuda"]["nvcc"] and d["nccl"]["include_dir"]' "$TMP/m.json" 2>/dev/null; then
  ok "# SKIP no nvcc or NCCL headers here"
  done_testing; exit 0
fi

expect_rc "compile-only: baselines and seed" 0 "$CUCO" eval "$WL" --compile-only --impl all
lib=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nccl"]["library_dir"] or "")' "$TMP/m.json")
if [ -n "$lib" ]; then how="linked against .*libnccl.so.2"; else how="no libnccl.so.2 found: linked with NCCL symbols unresolved"; fi
expect_grep "first build compiles runtime, reference, impl and links" "$TMP/out" "build +ok \(.*3 compiled, 0 cached; $how\)"
expect_grep "seed build reuses cached runtime objects" "$TMP/out" "build +ok \(.*1 compiled, 2 cached; $how\)"
expect_grep "the allowlist judges the seed's object" "$TMP/out" "allowlist +ok \(seed.o calls only what runtime/symbols.allow allows; no raw system call\)"
expect_grep "seed directives become -D flags" "$TMP/out" "CUCO_CHUNK_BYTES=65536 CUCO_PARAM_unroll=2"
expect_rc "compile-only: cheats" 0 "$CUCO" eval "$WL" --compile-only --cheats
expect_grep "frozen-text cheat rejected at static" "$TMP/out" "frozen_edit.cu: rejected at static as expected \(static: frozen text differs from the seed at line 26"
expect_grep "host collective cheat rejected at static" "$TMP/out" "host_collective.cu: rejected at static .*'ncclAllGather'"
expect_grep "verify cheats need a GPU run" "$TMP/out" "skip_tail.cu: compiled, linked and passed the allowlist; its rejection at verify .* needs a GPU run \(not judged\)"
expect_grep "summary counts only what ran" "$TMP/out" "^cheats: 2 rejected at static as expected, 2 need a GPU \(not judged\)$"
sed 's|issuer=cta|issuer=block|' "$WL/seed.cu" >"$TMP/baddir.cu"
expect_rc "bad directive rejected" 1 "$CUCO" eval "$WL" --compile-only --candidate "$TMP/baddir.cu"
expect_grep "bad directive quoted" "$TMP/out" "'issuer=block' is not allowed by tiny"
sed 's|  long i = 0, n = p->n;|  long i = 0, n = p->n; undeclared_fn();|' "$WL/seed.cu" >"$TMP/nobuild.cu"
expect_rc "nvcc error fails at build" 1 "$CUCO" eval "$WL" --compile-only --candidate "$TMP/nobuild.cu"
expect_grep "nvcc error named" "$TMP/out" "failed: build: nobuild.cu: exit [0-9]+: .*undeclared_fn"

# --compile-only links (issue 23): a definition missing at the link, a
# header that defines functions (the reference and the seed both include
# it), and the allowlist on the object (issue 21)
sed 's|^static void body|void tiny_missing(void);\nstatic void body|; s|  long i = 0, n = p->n;|  long i = 0, n = p->n; tiny_missing();|' "$WL/seed.cu" >"$TMP/nodef.cu"
expect_rc "missing definition fails at the link" 1 "$CUCO" eval "$WL" --compile-only --candidate "$TMP/nodef.cu"
expect_grep "missing definition named" "$TMP/out" "nodef.cu: failed: build: link: exit 1: undefined reference to .tiny_missing\(\)'"
DUP=$ROOT/tests/fixtures/rt/workloads/dupdef
expect_rc "duplicate definition fails --compile-only" 1 "$CUCO" eval "$DUP" --compile-only --impl all
expect_grep "the baseline (no dup.cuh) links" "$TMP/out" "^baseline.cu: ok \(compiled\)"
expect_grep "duplicate definition named" "$TMP/out" "seed.cu: failed: build: link: exit 1: multiple definition of .dup_kernel\(float\*\)'"
sed 's|^static void body|extern "C" int printf(const char *, ...);\nstatic void body|; s|  long i = 0, n = p->n;|  long i = 0, n = p->n; printf("%ld\\n", n);|' "$WL/seed.cu" >"$TMP/prt.cu"
expect_rc "a call off the fixture's list is rejected" 1 "$CUCO" eval "$WL" --compile-only --candidate "$TMP/prt.cu"
expect_grep "rejected at the allowlist naming it" "$TMP/out" "prt.cu: rejected: allowlist: prt.o calls 'printf' \(not on runtime/symbols.allow\)"
# Where no libnccl.so.2 exists: a toolchain whose CUDA folder has no lib64
# and a configured NCCL home with headers only.  The link still runs with
# NCCL symbols unresolved and catches duplicate and other missing definitions.
mkdir -p "$TMP/fakecuda/bin" "$TMP/fakenccl"
nvcc_real=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cuda"]["nvcc"])' "$TMP/m.json")
inc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nccl"]["include_dir"])' "$TMP/m.json")
# (it notes what of the environment it got, in the object cache: the one
# folder besides the output's that a sandboxed build may write)
printf '#!/bin/sh\necho "tun=${GLIBC_TUNABLES:-} other=${T0102_OTHER:-}" >>%s/nvcc.env\nexec %s "$@"\n' \
  "$CUCO_CACHE_DIR" "$nvcc_real" >"$TMP/fakecuda/bin/nvcc" && chmod +x "$TMP/fakecuda/bin/nvcc"
ln -s "$inc" "$TMP/fakenccl/include"
export CUCO_NVCC=$TMP/fakecuda/bin/nvcc CUCO_NCCL_HOME=$TMP/fakenccl
expect_rc "no NCCL library: the seed still links" 0 env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 T0102_OTHER=x \
  "$CUCO" eval "$WL" --compile-only
expect_grep "the verdict says how it linked" "$TMP/out" "build +ok \(.*; no libnccl.so.2 found: linked with NCCL symbols unresolved, other missing and duplicate definitions checked\)"
# the user's GLIBC_TUNABLES reaches the compiler (tests/run.sh: malloc on
# huge pages), nothing else outside the build's list does
expect_grep "the compiler saw GLIBC_TUNABLES" "$CUCO_CACHE_DIR/nvcc.env" "^tun=glibc.malloc.hugetlb=1 other=$"
expect_no_grep "... and no other variable" "$CUCO_CACHE_DIR/nvcc.env" "other=x"
sed 's|^static void body|extern "C" int ncclGetVersion(int *);\nstatic void body|; s|  long i = 0, n = p->n;|  long i = 0, n = p->n; ncclGetVersion(0);|' "$WL/seed.cu" >"$TMP/ncclref.cu"
expect_rc "no NCCL library: an NCCL symbol is left to the loader" 1 "$CUCO" eval "$WL" --compile-only --candidate "$TMP/ncclref.cu"
expect_grep "it linked (judged at the allowlist)" "$TMP/out" "ncclref.cu: rejected: allowlist: ncclref.o calls 'ncclGetVersion'"
expect_rc "no NCCL library: a missing definition still fails" 1 "$CUCO" eval "$WL" --compile-only --candidate "$TMP/nodef.cu"
expect_grep "no NCCL library: missing definition named" "$TMP/out" "nodef.cu: failed: build: link: undefined reference to 'tiny_missing\(\)'"
expect_rc "no NCCL library: duplicate definition fails" 1 "$CUCO" eval "$DUP" --compile-only
expect_grep "no NCCL library: duplicate named" "$TMP/out" "seed.cu: failed: build: link: exit 1: multiple definition of .dup_kernel"
unset CUCO_NVCC CUCO_NCCL_HOME

if ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["nccl"]["library_dir"]' "$TMP/m.json" 2>/dev/null; then
  ok "# SKIP no NCCL library to link against"
  done_testing; exit 0
fi
expect_rc "seed runs on 2 ranks" 0 "$CUCO" eval "$WL" --ranks 2 --json --process-per-size --out "$TMP/run"
cp "$TMP/out" "$TMP/seed.json"
if python3 - "$TMP/seed.json" "$TMP/run/seed/RESULT.json" "$TMP/run/seed/MACHINE.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); res = json.load(open(sys.argv[2]))
m = json.load(open(sys.argv[3]))
assert r["status"] == "ok" and r["stage"] == "done", r
assert r["median_ms"] > 0 and r["score"] > 0
assert r["directives"]["chunk_bytes"] == 65536
assert set(r["metrics"]["verify"]) == {"small", "odd"}
assert r["metrics"]["bench"]["full"]["timing"]["steps"] == 20
# issue 26: each run's launch-to-exit time and the rank's phases
for mode, size in (("verify", "small"), ("verify", "odd"), ("bench", "full")):
    x = r["metrics"][mode][size]
    assert x["wall_ms"] > 0, (mode, size, x)
    assert set(x["phases_ms"]) >= {"init", "setup"}, (mode, size, x)
assert "timed" in r["metrics"]["bench"]["full"]["phases_ms"]
assert res["phases_ms"]["timed"] >= 0 and "wall_ms" not in res
assert res["nranks"] == 2 and res["mode"] == "bench" and res["impl"] == "seed.cu"
assert "gpus" in m
PY
then ok "result json: stages, metrics per size (wall_ms, phases_ms), machine written"
else not_ok "result json: stages, metrics per size (wall_ms, phases_ms), machine written" "$(head -c 600 "$TMP/seed.json")"; fi
# issue 52: the ranks cuco started were judges (the baseline's binary); each
# started the seed as its worker from WORKER.argv, under bubblewrap when the
# sandbox is active, and wrote the record after the worker was gone
if python3 - "$TMP/run/seed/RESULT.json" "$TMP/run/seed/WORKER.argv" "$TMP/m.json" <<'PY'
import json, os, sys
res = json.load(open(sys.argv[1]))
words = open(sys.argv[2], "rb").read().split(b"\0")[:-1]
sb = json.load(open(sys.argv[3]))["sandbox"]
assert res["judge"] == "separate", res.get("judge")
assert words[-1].endswith(b"/seed.bin"), words
if sb["active"] == "bwrap":
    assert os.path.basename(words[0]) == b"bwrap", words[:3]
else:
    assert len(words) == 1, words
PY
then ok "judged from outside: the worker's command, sandboxed where bwrap runs"
else not_ok "judged from outside: the worker's command, sandboxed where bwrap runs" "$(head -c 300 "$TMP/run/seed/RESULT.json")"; fi
expect_rc "in-process on request" 0 env CUCO_JUDGE=in-process "$CUCO" eval "$WL" --no-bench --out "$TMP/inproc"
expect_grep "... said as a warning" "$TMP/err" "CUCO_JUDGE=in-process: seed.cu runs in the judge's own process"
expect_grep "... and recorded" "$TMP/inproc/seed/RESULT.json.0" '"judge": "in-process"'
expect_rc "explicit shape runs" 0 "$CUCO" eval "$WL" --sizes N=77 --no-bench
expect_rc "cheat suite on the real cascade" 0 "$CUCO" eval "$WL" --cheats --ranks 2 --timeout 3
expect_grep "hang names rank 1" "$TMP/out" "hang_rank1.cu: rejected at verify as expected \(verify: size small: hang: timed out after 3 s; rank 1 did not finish"
expect_grep "poisoned tail caught" "$TMP/out" "skip_tail.cu: rejected at verify as expected .*nan [1-9]"
expect_grep "suite summary" "$TMP/out" "cheats: 4 of 4 caught as expected"
cp "$WL/cheats/hang_rank1.cu" "$TMP/hang.cu"
sed -i '/CUCO-EXPECT-REJECT/d' "$TMP/hang.cu"
expect_rc "hang via --candidate" 1 "$CUCO" eval "$WL" --candidate "$TMP/hang.cu" --ranks 2 --timeout 2 --json
expect_grep "json hang_rank" "$TMP/out" "\"hang_rank\": 1"
# --one-process (issue 26): every size of a stage in one process of the
# binary (its --plan), each size judged from its own RESULT.json
expect_rc "one process: the seed on 2 ranks" 0 "$CUCO" eval "$WL" --ranks 2 --one-process --json --out "$TMP/one"
cp "$TMP/out" "$TMP/one.json"
if python3 - "$TMP/one.json" "$TMP/one/seed/PLAN.verify" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); plan = open(sys.argv[2]).read().split("\n")
assert r["status"] == "ok" and r["stage"] == "done", r
v = r["metrics"]["verify"]
assert set(v) == {"small", "odd"}, v
assert v["small"]["process_sizes"] == 2 and v["odd"]["process_sizes"] == 2, v
assert v["small"]["process_wall_ms"] == v["odd"]["process_wall_ms"] > 0
assert v["small"]["params"] == {"N": 1000} and v["odd"]["params"] == {"N": 1023}, v
assert plan[0].startswith("small N=1000 ") and plan[1].startswith("odd N=1023 "), plan
b = r["metrics"]["bench"]["full"]  # one size: a process of its own, as before
assert "process_sizes" not in b and b["wall_ms"] > 0 and b["timing"]["steps"] == 20
PY
then ok "one process: both verify sizes from one run, each with its own result"
else not_ok "one process: both verify sizes from one run, each with its own result" "$(head -c 600 "$TMP/one.json")"; fi
expect_rc "write the cheats" 0 "$CUCO" eval "$WL" --write-cheats "$TMP/ch"
h=$(grep -n '^<<<<<<<' "$WL/cheats/skip_tail.edit" | head -1 | cut -d: -f1)
sed -i "1,$((h - 1))d" "$TMP/ch/skip_tail.cu"  # its header comment: not frozen text
expect_rc "one process: a size that fails ends the run" 1 "$CUCO" eval "$WL" --candidate "$TMP/ch/skip_tail.cu" --one-process --json
cp "$TMP/out" "$TMP/tail.json"
if python3 - "$TMP/tail.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["stage"] == "verify" and r["status"] == "failed", r
assert "size odd: verification failed" in r["error"], r["error"]
assert r["metrics"]["verify"]["small"]["status"] == "ok", r["metrics"]
assert r["metrics"]["verify"]["odd"]["status"] == "verify_failed"
PY
then ok "one process: the failing size is named, the one before it kept"
else not_ok "one process: the failing size is named, the one before it kept" "$(head -c 800 "$TMP/tail.json")"; fi
expect_rc "one process: a hang" 1 "$CUCO" eval "$WL" --candidate "$TMP/hang.cu" --ranks 2 --timeout 2 --one-process
# the fixture's ranks do not communicate: rank 0 finishes both sizes while
# rank 1 spins in the first, which its progress file names; the limit is
# the size's (2 s), not the process's (2 sizes x 2 s)
expect_grep "one process: the hang names the hung rank's size, after one size's limit" "$TMP/out" "verify +FAIL size small: hang: timed out after 2 s; rank 1 did not finish"
# cuco evolve evaluates the same way ([evolve] process_per_size = 0, the
# default): every stored verify metric says it shared its process
for pps in 0 1; do
  printf '[evolve]\nconfirm = 0\nprocess_per_size = %s\n' "$pps" >"$TMP/pps$pps.ini"
  expect_rc "evolve, process_per_size = $pps" 0 "$CUCO" --config "$TMP/pps$pps.ini" evolve "$WL" \
    --llm none --generations 1 --islands 1 --ranks 2 --out "$TMP/ev$pps"
  sqlite3 "$TMP/ev$pps/run.db" "select count(*), sum(metrics_json like '%\"process_sizes\":2%')
    from programs where status = 'ok'" >"$TMP/pps$pps.n"
done
IFS='|' read -r n0 s0 <"$TMP/pps0.n"
IFS='|' read -r n1 s1 <"$TMP/pps1.n"
[ "${n0:-0}" -ge 1 ] && [ "$s0" = "$n0" ] && [ "${n1:-0}" -ge 1 ] && [ "${s1:-1}" = 0 ] &&
  ok "evolve: a stage's sizes in one process by default, one each with process_per_size = 1" ||
  not_ok "evolve: a stage's sizes in one process by default, one each with process_per_size = 1" \
    "default $n0 ok, $s0 shared; process_per_size=1 $n1 ok, $s1 shared"
done_testing

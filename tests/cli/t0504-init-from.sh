#!/bin/bash
# cuco init --from on three ordinary CUDA+NCCL programs (examples/: a GEMM
# and an all-gather, a MoE dispatch, a ring attention), written as their
# authors would: a freeform workload around each that builds without a GPU,
# sizes read from its command line, the TODO list on the terminal, and
# analyze's count of collectives equal to init's.
. "$(dirname "$0")/lib.sh"
need_nvcc
NCCL_H=$("$CUCO" doctor --json 2>/dev/null | python3 -c '
import json, sys
print(json.load(sys.stdin)["nccl"].get("include_dir") or "")' 2>/dev/null)
if [ -z "$NCCL_H" ] || [ ! -f "$NCCL_H/nccl.h" ]; then
  echo "ok 1 # SKIP NCCL headers not found (cuco doctor)"
  echo "1..1"
  exit 0
fi

# workload.ini with its continuation lines (indented) joined to their key's
joined() {
  awk '/^  / { sub(/^ +/, " "); printf "%s", $0; next }
       NR > 1 { print "" } { printf "%s", $0 } END { print "" }' "$1"
}
EX="tp_gemm_allgather moe_dispatch ring_attention"
declare -A SIZES=(
  [tp_gemm_allgather]="m=4096,n=4096,k=4096,iters=20,warmup=5,check=1"
  [moe_dispatch]="tokens=4096,hidden=2048,experts=64,topk=8,iters=20,check=1"
  [ring_attention]="seq=2048,heads=8,d=64,iters=10")
for ex in $EX; do
  w=$TMP/$ex
  expect_rc "$ex: init --from" 0 "$CUCO" init --from "$ROOT/examples/$ex/$ex.cu" "$w"
  cp "$TMP/out" "$TMP/$ex.init"
  joined "$w/workload.ini" >"$w/ini.joined"
  expect_grep "$ex: a freeform workload" "$w/workload.ini" "^kind += freeform$"
  expect_grep "$ex: [freeform] builds the program with nvcc" "$w/ini.joined" \
    "^build  = [^ ]*nvcc .*-o \{bin\} \{src\}"
  expect_grep "$ex: ... against NCCL" "$w/ini.joined" "^build  = .*(-lnccl|libnccl\.so\.2)"
  expect_grep "$ex: run passes the sizes through cuco_run.sh" "$w/workload.ini" \
    "^run    = sh \{dir\}/cuco_run.sh \{bin\} \{params\}$"
  expect_grep "$ex: sizes are the program's command-line defaults" "$w/workload.ini" \
    "^default = ${SIZES[$ex]}$"
  expect_grep "$ex: its PASSED line is its check" "$w/cuco_run.sh" "^PASS_WORD='PASSED'$"
  expect_grep "$ex: the time it prints" "$w/cuco_run.sh" "^TIME_SUFFIX=' ms/iter'$"
  expect_grep "$ex: kernels in EVOLVE blocks" "$w/seed.cu" "^// EVOLVE-BLOCK-START$"
  if cmp -s "$ROOT/examples/$ex/$ex.cu" "$w/baseline.cu"; then ok "$ex: baseline.cu is the program"
  else not_ok "$ex: baseline.cu is the program" "differs"; fi
  for f in seed.cu cuco_run.sh check.c README.md; do
    [ -s "$w/$f" ] || not_ok "$ex: init wrote $f" "missing"
  done
  # what init could not infer, on the terminal and in the files
  expect_grep "$ex: the TODO list is printed" "$TMP/$ex.init" "^TODO: init could not infer these"
  expect_grep "$ex: ... with what to fill in" "$TMP/$ex.init" "^  - describe the problem in workload.ini"
  expect_grep "$ex: ... and in README.md" "$w/README.md" "^## TODO: what init could not infer"
  expect_grep "$ex: ... and in workload.ini" "$w/workload.ini" "^; TODO \(init could not infer"
  # one count of the communication for analyze and init
  expect_rc "$ex: analyze" 0 "$CUCO" analyze "$ROOT/examples/$ex/$ex.cu"
  a=$(grep -oE '^summary: [0-9]+ collectives, [0-9]+ send/recv' "$TMP/out" | cut -d' ' -f2-)
  i=$(grep -oE '\(free-form: [0-9]+ collectives, [0-9]+ send/recv\)' "$TMP/$ex.init" |
      sed 's/^(free-form: //; s/)$//')
  if [ -n "$a" ] && [ "$a" = "$i" ]; then ok "$ex: analyze and init count alike ($a)"
  else not_ok "$ex: analyze and init count alike" "analyze: '$a', init: '$i'"; fi
done
expect_grep "gemm: one all-gather" "$TMP/tp_gemm_allgather.init" "free-form: 1 collectives, 0 send/recv"
expect_grep "moe: the all-to-all and the grouped send/recv" "$TMP/moe_dispatch.init" "free-form: 1 collectives, 4 send/recv"
expect_grep "ring: send and recv" "$TMP/ring_attention.init" "free-form: 0 collectives, 2 send/recv"
expect_grep "gemm: cuBLAS linked" "$TMP/tp_gemm_allgather/ini.joined" "^build  = .* -lcublas( |$)"
expect_grep "getopt's libc calls widen the list" "$TMP/tp_gemm_allgather/ini.joined" "^symbols = .*getopt"

# cuco_run.sh: a size becomes the program's own command line, its output
# one JSON line (a stand-in program prints what the real one would)
cat >"$TMP/fake" <<'EOF'
#!/bin/sh
echo "args:$*"
echo "fake: 2 gpus  1.250 ms/iter  3.0 TFLOP/s"
echo "check: 0 errors: PASSED"
EOF
chmod +x "$TMP/fake"
sh "$TMP/tp_gemm_allgather/cuco_run.sh" "$TMP/fake" "m=64,k=32,iters=2" >"$TMP/run.out" 2>&1
expect_grep "getopt sizes become -m 64 -k 32 -i 2" "$TMP/run.out" "^\| args:-m 64 -k 32 -i 2$"
expect_grep "one JSON line with the time and the verdict" "$TMP/run.out" \
  '^\{"time_ms": 1.25, "ok": true, "error": ""\}$'
sh "$TMP/moe_dispatch/cuco_run.sh" "$TMP/fake" "tokens=128,topk=2" >"$TMP/run.out" 2>&1
expect_grep "flags become --tokens 128 --topk 2" "$TMP/run.out" "^\| args:--tokens 128 --topk 2$"
sh "$TMP/ring_attention/cuco_run.sh" "$TMP/fake" "seq=128,iters=3" >"$TMP/run.out" 2>&1
expect_grep "positional sizes keep the defaults before them" "$TMP/run.out" "^\| args:128 8 64 3$"
sed 's/PASSED/FAILED/' "$TMP/fake" >"$TMP/fake2" && chmod +x "$TMP/fake2"
sh "$TMP/ring_attention/cuco_run.sh" "$TMP/fake2" "seq=128" >"$TMP/run.out" 2>&1
expect_grep "a FAILED run is not ok" "$TMP/run.out" '"ok": false, "error": "the program printed FAILED"'
sh "$TMP/ring_attention/cuco_run.sh" "$TMP/fake" "bogus=1" >"$TMP/run.out" 2>&1
expect_grep "an unknown size is named" "$TMP/run.out" "size 'bogus' is not an argument of the program"

# a program that checks nothing: cuco's check is a scaffold that fails
# with a TODO until written
cp "$ROOT/tests/data/analyze/tricky.cu" "$TMP/tricky.cu"
expect_rc "init --from a program with no check" 0 "$CUCO" init --from "$TMP/tricky.cu" "$TMP/nocheck"
expect_grep "the check scaffold is listed" "$TMP/out" "^  - check: the program prints no PASS/FAIL verdict"
expect_grep "... and enabled" "$TMP/nocheck/workload.ini" "^check_build = gcc .*check.c$"
if cc -O2 -std=c11 -o "$TMP/chk" "$TMP/nocheck/check.c" 2>"$TMP/err" && "$TMP/chk" >"$TMP/chk.out"; then
  expect_grep "check.c fails with a TODO" "$TMP/chk.out" '^\{"ok": false, "error": "TODO: check.c is a scaffold'
else
  not_ok "check.c builds" "$(cat "$TMP/err")"
fi

# It builds without a GPU.  runtime/symbols.allow refuses a program its own
# NCCL setup and host collectives unless the list has a [freeform] section
# (allow.h): with the shipped list the build must pass or stop only there.
"$CUCO" eval "$TMP/tp_gemm_allgather" --compile-only >"$TMP/eval.out" 2>&1
if grep -q "^seed.cu: ok (compiled)" "$TMP/eval.out"; then
  ok "tp_gemm_allgather: eval --compile-only with runtime/symbols.allow"
elif grep -q "^  build   ok" "$TMP/eval.out" &&
     grep -qE "^  allowlist FAIL seed.bin calls '(nccl|cuda)[A-Za-z]*'" "$TMP/eval.out" &&
     ! grep -q "to allow" "$TMP/eval.out" && ! grep -q '^\[freeform\]' "$ROOT/runtime/symbols.allow"; then
  ok "tp_gemm_allgather: eval --compile-only # SKIP runtime/symbols.allow has no [freeform] section yet: $(grep -m1 'allowlist FAIL' "$TMP/eval.out" | cut -c1-120)"
else
  not_ok "tp_gemm_allgather: eval --compile-only with runtime/symbols.allow" "$(cat "$TMP/eval.out")"
fi
# ... and with the list's [freeform] section, every one passes
mkdir -p "$TMP/rt"
cp "$ROOT/runtime/runtime.h" "$ROOT/runtime/symbols.allow" "$TMP/rt/"
grep -q '^\[freeform\]' "$TMP/rt/symbols.allow" || cat >>"$TMP/rt/symbols.allow" <<'EOF'

[freeform]
cudaSetDevice
ncclGetUniqueId
ncclCommInit*
ncclCommDestroy
ncclCommFinalize
ncclAllGather
ncclAllReduce
ncclAlltoAll
ncclSend
ncclRecv
ncclGroupStart
ncclGroupEnd
EOF
for ex in $EX; do
  CUCO_RUNTIME_DIR=$TMP/rt "$CUCO" eval "$TMP/$ex" --compile-only >"$TMP/eval.out" 2>&1
  if grep -q "^seed.cu: ok (compiled)" "$TMP/eval.out"; then
    ok "$ex: eval --compile-only passes (symbols.allow with [freeform])"
  else
    not_ok "$ex: eval --compile-only passes (symbols.allow with [freeform])" "$(cat "$TMP/eval.out")"
  fi
done
done_testing

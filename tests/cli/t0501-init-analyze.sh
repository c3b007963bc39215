#!/bin/bash
# cuco init (template and --from) then cuco analyze on the result.
. "$(dirname "$0")/lib.sh"

expect_rc "init from the template" 0 "$CUCO" init "$TMP/demo"
for f in workload.ini baseline.cu reference.cu README.md; do
  if [ -s "$TMP/demo/$f" ]; then ok "init wrote $f"; else not_ok "init wrote $f" "missing"; fi
done
expect_grep "ini names the workload" "$TMP/demo/workload.ini" "^name +=  *demo$"
expect_grep "ini has the directive space" "$TMP/demo/workload.ini" "^placement = deferred, per_tile, split"
expect_rc "analyze the scaffold" 0 "$CUCO" analyze "$TMP/demo/baseline.cu"
expect_grep "finds the all-gather" "$TMP/out" "collective ncclAllGather reads=st->y writes=st->out comm=rt_comm\(ctx\) stream=s via RT_NCCL"
expect_grep "finds the launch" "$TMP/out" "launch +scale_kernel <<<blocks, 256, 0>>>"
expect_grep "dataflow kernel -> collective" "$TMP/out" "st->y: scale_kernel \(line [0-9]+\) -> ncclAllGather"
expect_rc "analyze --json" 0 "$CUCO" analyze --json "$TMP/demo/baseline.cu"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["summary"]; assert s["collectives"]==1 and s["launches"]==1, s; f=[x for x in d["functions"] if x["name"]=="wl_step"][0]; assert f["order"]==["compute","comm"], f' "$TMP/out"; then
  ok "json summary and order"
else
  not_ok "json summary and order" "$(head -c 400 "$TMP/out")"
fi
expect_rc "init refuses to overwrite" 1 "$CUCO" init "$TMP/demo"
expect_grep "says why" "$TMP/err" "already exists .*--force"
expect_rc "init --force replaces" 0 "$CUCO" init --force "$TMP/demo"
expect_rc "bad name is a usage error" 2 "$CUCO" init "$TMP/bad name"

if command -v nvcc >/dev/null && [ -d "$ROOT/runtime" ]; then
  if nvcc -arch=sm_90 -std=c++17 -I"$ROOT/runtime" -c "$TMP/demo/baseline.cu" -o "$TMP/b.o" 2>"$TMP/nvcc.err" &&
     nvcc -arch=sm_90 -std=c++17 -I"$ROOT/runtime" -c "$TMP/demo/reference.cu" -o "$TMP/r.o" 2>>"$TMP/nvcc.err"; then
    ok "template compiles with nvcc against runtime/"
  else
    not_ok "template compiles with nvcc against runtime/" "$(head -c 600 "$TMP/nvcc.err")"
  fi
fi

cp "$ROOT/tests/data/analyze/tricky.cu" "$TMP/prog.cu"
expect_rc "init --from a user program" 0 "$CUCO" init "$TMP/imp" --from "$TMP/prog.cu" --name imported
expect_grep "free-form kind" "$TMP/imp/workload.ini" "^kind +=  *freeform"
expect_grep "cublas linked by the freeform build" "$TMP/imp/workload.ini" "^(build  = |  ).* -lcublas( |$)"
expect_grep "readme has the analysis" "$TMP/imp/README.md" "ncclAllReduce reads=y writes=y comm=world"
if cmp -s "$TMP/prog.cu" "$TMP/imp/baseline.cu"; then ok "baseline is the copy"; else not_ok "baseline is the copy" "differs"; fi
printf 'void f() { g(\n' >"$TMP/broken.cu"
expect_rc "unparsable source is refused" 1 "$CUCO" init "$TMP/x" --from "$TMP/broken.cu"
expect_grep "error names file and position" "$TMP/err" "broken.cu: 1:13: '\(' is never closed"
expect_rc "analyze a missing file" 1 "$CUCO" analyze "$TMP/nope.cu"
expect_rc "analyze without a file" 2 "$CUCO" analyze
done_testing

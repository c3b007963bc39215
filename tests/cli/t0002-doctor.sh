#!/bin/bash
# cuco doctor: text and JSON, no secrets.
. "$(dirname "$0")/lib.sh"

export MY_SECRET_KEY="sk-test-do-not-print-1234"
export CUCO_LLM_API_KEY_ENV=MY_SECRET_KEY CUCO_LLM_PROVIDER=openai CUCO_LLM_MODEL=m1
expect_rc "doctor runs" 0 "$CUCO" doctor
expect_grep "doctor reports GPUs or their absence" "$TMP/out" "^gpus: "
expect_grep "doctor reports nccl" "$TMP/out" "^nccl: "
expect_no_grep "doctor never prints the key" "$TMP/out" "sk-test-do-not"
expect_rc "doctor --json runs" 0 "$CUCO" doctor --json -o "$TMP/m.json"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "gpus" in d and "count" in d["gpus"]; assert d["llm"]["api_key_set"] is True; assert d["llm"]["api_key_env"]=="MY_SECRET_KEY"' "$TMP/m.json"; then
  ok "doctor json has gpus and llm key presence"
else
  not_ok "doctor json has gpus and llm key presence" "$(cat "$TMP/m.json")"
fi
expect_no_grep "json never holds the key" "$TMP/m.json" "sk-test-do-not"
expect_rc "doctor rejects stray arguments" 2 "$CUCO" doctor extra
printf '#!/bin/sh\nexit 3\n' >"$TMP/nvcc"; chmod +x "$TMP/nvcc"
CUCO_NVCC="$TMP/nvcc" expect_rc "a broken nvcc is an error" 1 "$CUCO" doctor
expect_grep "broken nvcc is named" "$TMP/err" "toolchain is broken"

# NCCL headers that are not next to nvcc are found where nvcc itself finds
# them (nvcc -M): CI machines keep them in nvcc's target include directory,
# CPATH or /usr/include.  A fake nvcc, reached through a symlink, reports a
# header in a folder of ours.
mkdir -p "$TMP/cuda/bin" "$TMP/other dir/include"
printf '#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n' >"$TMP/other dir/include/nccl.h"
# nvcc -M writes make's syntax: a space in a path is "\ "
{
  echo 'probe.o : /tmp/probe.cu \'
  echo '  /usr/include/stdc-predef.h \'
  echo "  ${TMP// /\\ }/other\\ dir/include/../include/nccl.h"
} >"$TMP/deps.txt"
{
  echo '#!/bin/sh'
  echo 'case "$1" in'
  echo '--version) echo "Cuda compilation tools, release 13.0, V13.0.88" ;;'
  echo "-M) cat '$TMP/deps.txt' ;;"
  echo '*) exit 1 ;;'
  echo 'esac'
} >"$TMP/cuda/bin/nvcc"
chmod +x "$TMP/cuda/bin/nvcc"
ln -s "$TMP/cuda/bin/nvcc" "$TMP/nvcc-link"
unset NCCL_HOME
CUCO_NVCC="$TMP/nvcc-link" expect_rc "doctor with NCCL away from nvcc" 0 "$CUCO" doctor --json -o "$TMP/m2.json"
if python3 - "$TMP/m2.json" "$TMP" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
want = os.path.realpath(os.path.join(sys.argv[2], "other dir/include"))
assert d["nccl"]["include_dir"] == want, (d["nccl"], want)
assert d["nccl"]["header_version"] == "2.28.9", d["nccl"]
PY
then ok "nccl.h found where nvcc finds it (canonical path)"
else not_ok "nccl.h found where nvcc finds it (canonical path)" "$(head -c 400 "$TMP/m2.json")"; fi
done_testing

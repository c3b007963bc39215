# tests/cli/fakellm.sh - run the fake LLM server (build/tests/fakellm) from
# a CLI test.  Source it after lib.sh:
#
#   . "$(dirname "$0")/fakellm.sh"
#   fakellm_start "$ROOT/tests/data/llm/openai/ok"   # sets FAKELLM_URL, FAKELLM_LOG
#   ... base_url = $FAKELLM_URL/v1 ...
#   fakellm_stop                                     # also done at exit
#   fakellm_requests                                 # how many requests it saw
#
# FAKELLM_LOG holds one JSON object per request (see tests/data/llm/README.md).
FAKELLM_BIN=${FAKELLM_BIN:-$ROOT/${BUILD:-build}/tests/fakellm}
# libcurl honours proxy variables; the fake server is on loopback.
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY
FAKELLM_PID=
_fakellm_n=0

fakellm_stop() {
  if [ -n "$FAKELLM_PID" ]; then
    kill "$FAKELLM_PID" 2>/dev/null
    wait "$FAKELLM_PID" 2>/dev/null
    FAKELLM_PID=
  fi
}

# fakellm_start SCENARIO_DIR: stop any earlier one, start a new one.
fakellm_start() {
  local i port=
  fakellm_stop
  _fakellm_n=$((_fakellm_n + 1))
  FAKELLM_LOG=$TMP/fakellm-$_fakellm_n.jsonl
  "$FAKELLM_BIN" --scenario "$1" --log "$FAKELLM_LOG" \
    >"$TMP/fakellm-$_fakellm_n.port" 2>"$TMP/fakellm-$_fakellm_n.err" &
  FAKELLM_PID=$!
  trap 'fakellm_stop; rm -rf "$TMP"' EXIT
  for i in $(seq 1 100); do
    port=$(sed -n 's/^port //p' "$TMP/fakellm-$_fakellm_n.port")
    [ -n "$port" ] && break
    sleep 0.05
  done
  if [ -z "$port" ]; then
    echo "# fakellm did not start: $(cat "$TMP/fakellm-$_fakellm_n.err")"
    return 1
  fi
  FAKELLM_URL=http://127.0.0.1:$port
}

# fakellm_requests: the number of requests recorded so far.
fakellm_requests() {
  if [ -f "$FAKELLM_LOG" ]; then wc -l <"$FAKELLM_LOG" | tr -d ' '; else echo 0; fi
}

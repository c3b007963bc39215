#!/bin/bash
# cuco serve: JSON API shapes, read-only database, hostile requests.
. "$(dirname "$0")/lib.sh"

python3 "$ROOT/tests/fixtures/make_run_db.py" "$TMP/run.db" || exit 1

"$CUCO" serve "$TMP/run.db" --port 0 >"$TMP/serve.out" 2>"$TMP/serve.err" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do
  grep -q 'http://' "$TMP/serve.out" && break
  sleep 0.1
done
URL=$(grep -o 'http://[^ ]*' "$TMP/serve.out")
case "$URL" in
http://127.0.0.1:*) ok "serve listens on 127.0.0.1 by default ($URL)" ;;
*) not_ok "serve listens on 127.0.0.1 by default" "$(cat "$TMP/serve.out" "$TMP/serve.err")"; done_testing; exit 1 ;;
esac

# get NAME PATH WANT_STATUS: fetch into $TMP/body, compare the status.
get() {
  local code
  code=$(curl -s --path-as-is -o "$TMP/body" -w '%{http_code}' "${@:4}" "$URL${2#/}")
  if [ "$code" = "$3" ]; then ok "$1"; else not_ok "$1" "HTTP $code, wanted $3: $(head -c 300 "$TMP/body")"; fi
}
# pyjson NAME EXPR: assert a Python expression over d = the last body.
pyjson() {
  if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert ($2), d" "$TMP/body" 2>"$TMP/pyerr"; then ok "$1"
  else not_ok "$1" "$(tail -c 400 "$TMP/pyerr")"; fi
}

get "the page is served" / 200
expect_grep "... it is the UI" "$TMP/body" '<script src="app.js"'
get "app.js is served" /app.js 200
get "/api/run" /api/run 200
ncand=$(sqlite3 "$TMP/run.db" "SELECT count(*) FROM programs WHERE edit_kind <> 'migrate'")
ncopy=$(sqlite3 "$TMP/run.db" "SELECT count(*) FROM programs WHERE edit_kind = 'migrate'")
pyjson "run has workload, counts (migrate copies apart), islands, LLM totals" \
  "d['workload']=='gemm_allgather' and d['counts']['total']==$ncand and d['counts']['migrated']==$ncopy and $ncopy>0 and $ncand+$ncopy==40 and d['islands']==[0,1,2,3] and d['llm_totals']['calls']>0 and isinstance(d['machine'],dict) and 'full_8k' in d['baseline']"
# the headline: no confirmation in this database, so the best's search
# figure, labelled unconfirmed, against the bar (the fixture has one)
bid=$(sqlite3 "$TMP/run.db" "SELECT best_program_id FROM runs")
bsp=$(sqlite3 "$TMP/run.db" "SELECT speedup FROM programs WHERE id=$bid")
pyjson "run has the headline: the best's figure, unconfirmed, against the bar" \
  "d['headline']['program_id']==$bid and d['headline']['confirmed'] is False and abs(d['headline']['speedup']-$bsp)<1e-9 and d['headline']['versus']=='bar' and d['headline']['lo'] is None and d['headline']['text'].endswith('x the bar, unconfirmed (the search\'s single measurement)')"
get "/api/programs" /api/programs 200
pyjson "programs list every program without code" \
  "len(d['programs'])==40 and all('code' not in p and 'status' in p and 'island' in p for p in d['programs'])"
pyjson "crossovers carry parent2_id" "any(p['parent2_id'] for p in d['programs'])"
get "/api/programs filtered" "/api/programs?island=2&status=ok&edit_kind=tune" 200
pyjson "the filter applies all three" \
  "all(p['island']==2 and p['status']=='ok' and p['edit_kind']=='tune' for p in d['programs'])"
n=$(sqlite3 "$TMP/run.db" "SELECT count(*) FROM programs WHERE island=2 AND status='ok' AND edit_kind='tune'")
pyjson "... and finds what SQL finds ($n)" "len(d['programs'])==$n"
child=$(sqlite3 "$TMP/run.db" "SELECT id FROM programs WHERE parent_id IS NOT NULL AND llm_call_id IS NOT NULL AND status='ok' LIMIT 1")
get "/api/program/$child" "/api/program/$child" 200
pyjson "program has code, diff, directives, stage, metrics, logs, LLM" \
  "d['code'].startswith('//') and d['diff_to_parent'].startswith('--- program ') and d['directives']['backend']=='lsa' and d['stage']=='done' and 'full_8k' in d['metrics'] and 'nvcc' in d['build_log'] and d['verify_log'] and '<script>' in d['llm']['response'] and d['llm']['prompt']"
failed=$(sqlite3 "$TMP/run.db" "SELECT id FROM programs WHERE status='failed' LIMIT 1")
get "a failed program" "/api/program/$failed" 200
pyjson "... has its error and stage" "d['status']=='failed' and d['error'] and d['stage'] in ('build','verify','bench')"
get "/api/plot" /api/plot 200
pyjson "plot has points, by_directive, cost" \
  "len(d['points'])==39 and set(d['by_directive'])=={'backend','placement','sync','issuer','chunk_bytes','params.comm_ctas'} and len(d['by_directive']['params.comm_ctas'])>1 and d['cost'][-1]['cum_usd']>0"
get "/api/updates since the newest" "/api/updates?since=40" 200
pyjson "... lists nothing new" "d['programs']==[] and d['run']['counts']['total']==$ncand"
new=$(python3 "$ROOT/tests/fixtures/make_run_db.py" "$TMP/run.db" --add-candidate)
get "/api/updates after a write" "/api/updates?since=40" 200
pyjson "... shows the candidate written meanwhile" "[p['id'] for p in d['programs']]==[$new]"

get "unknown program is 404" /api/program/99999 404
# what is not an id is a bad request, said so; a number no row has is 404
get "program id must be a number (400)" /api/program/1x 400
get "a word is no program id (400)" /api/program/abc 400
pyjson "... and the error names the path and the value" \
  "d['error'].startswith(\"/api/program/ID: 'abc' is not a program id\")"
get "unknown API is 404" /api/nope 404
get "unknown file is 404" /etc/passwd 404
get "a '..' segment is refused" /../../etc/passwd 400
get "an encoded '..' is refused" /%2e%2e/%2e%2e/etc/passwd 400
get "an encoded slash and '..' are refused" /..%2fapp.js 400
get "a backslash is refused" '/..\app.js' 400
get "a double slash is refused" //app.js 400
get "a bad island is refused" "/api/programs?island=-1" 400
get "a bad status is refused" "/api/programs?status=ok'%20OR%201=1" 400
get "an unknown status is refused, not an empty list" "/api/programs?status=bogus" 400
pyjson "... naming the valid statuses" \
  "d['error']=='status=bogus: not one of pending, running, ok, failed, rejected, interrupted'"
get "an unknown edit kind is refused" "/api/programs?edit_kind=bogus" 400
get "the status interrupted is a filter" "/api/programs?status=interrupted" 200
get "an unknown argument is refused" "/api/programs?sql=1" 400
get "an oversized URL is refused" "/api/programs?island=1&x=$(head -c 3000 /dev/zero | tr '\0' a)" 414
get "an oversized header is refused" /api/run 431 -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' a)"
get "POST is refused" /api/run 405 -X POST -d x=1
get "a GET with a body is refused" /api/run 413 -X GET --data-binary @"$TMP/run.db"
get "a foreign Host is refused on loopback (DNS rebinding)" /api/run 421 -H "Host: evil.example:8077"
get "localhost is a fine Host" /api/run 200 -H "Host: localhost:8077"
get "the server still answers" /api/run 200

# A confirmation of the best appears (the server reads the file live): the
# headline becomes its figure and interval, not the search's.
sqlite3 "$TMP/run.db" "CREATE TABLE IF NOT EXISTS confirmations (id INTEGER PRIMARY KEY, run_id INTEGER, program_id INTEGER, versus_id INTEGER, versus TEXT, rounds INTEGER, ratio REAL, lo REAL, hi REAL, verdict TEXT, samples_json TEXT, created_at REAL); INSERT INTO confirmations (run_id, program_id, versus_id, versus, rounds, ratio, lo, hi, verdict) VALUES (1, $bid, 0, 'bar', 3, 14.6, 13.9, 15.3, 'best')"
get "/api/run after a confirmation" /api/run 200
pyjson "the headline is the confirmed figure with its interval" \
  "d['headline']['confirmed'] is True and d['headline']['speedup']==14.6 and d['headline']['lo']==13.9 and d['headline']['hi']==15.3 and d['headline']['rounds']==3 and d['headline']['text']=='14.6x the bar, 95% CI [13.9, 15.3], confirmed over 3 rounds' and len(d['confirmations'])==1"
get "the page" / 200
expect_grep "the page has a place for the headline" "$TMP/body" 'id="headline"'
get "app.js" /app.js 200
expect_grep "the page shows the headline from /api/run" "$TMP/body" "run.headline"
expect_grep "the tree shows each node's id" "$TMP/body" "class: 'nid'"

# The database file is open read-only: its descriptor's access mode is
# O_RDONLY (flags & 3 == 0 in /proc/PID/fdinfo).
mode=none
for fd in /proc/$pid/fd/*; do
  if [ "$(readlink "$fd")" = "$TMP/run.db" ]; then
    flags=$(awk '/^flags:/ {print $2}' "/proc/$pid/fdinfo/${fd##*/}")
    mode=$(( 8#$flags & 3 ))
  fi
done
[ "$mode" = 0 ] && ok "the database is open read-only" || not_ok "the database is open read-only" "access mode $mode"
kill $pid; wait $pid 2>/dev/null
rc=$?
[ "$rc" = 0 ] && ok "SIGTERM stops serve cleanly" || not_ok "SIGTERM stops serve cleanly" "exit $rc"

"$CUCO" serve "$TMP/run.db" --port 0 --bind 0.0.0.0 >"$TMP/any.out" 2>"$TMP/any.err" &
apid=$!
for _ in $(seq 50); do grep -q 'http://' "$TMP/any.out" && break; sleep 0.1; done
kill $apid; wait $apid 2>/dev/null
expect_grep "binding beyond loopback warns that anyone can read the run" "$TMP/any.err" "anyone who can reach this address"
expect_rc "a missing database is an error" 1 "$CUCO" serve "$TMP/none.db" --port 0
expect_rc "a bad --bind is a usage error" 2 "$CUCO" serve "$TMP/run.db" --bind example.com
expect_rc "a bad --port is a usage error" 2 "$CUCO" serve "$TMP/run.db" --port 70000
done_testing

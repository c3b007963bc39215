#!/bin/bash
# cuco report: HTML and Markdown from a run database, escaping, errors.
. "$(dirname "$0")/lib.sh"

python3 "$ROOT/tests/fixtures/make_run_db.py" "$TMP/run.db" || exit 1
# Markup in an error of the database must come out escaped.
sqlite3 "$TMP/run.db" "UPDATE programs SET error='<script>alert(1)</script> & \"q\"' WHERE id=(SELECT min(id) FROM programs WHERE status='failed')"
sum_before=$(sha256sum <"$TMP/run.db")

expect_rc "report writes HTML" 0 "$CUCO" report "$TMP/run.db" -o "$TMP/r.html"
expect_grep "the page is HTML" "$TMP/r.html" "^<!DOCTYPE html>"
expect_grep "the page forbids every fetch (CSP)" "$TMP/r.html" "default-src 'none'"
expect_no_grep "no script element at all" "$TMP/r.html" "<script"
expect_grep "database markup is escaped" "$TMP/r.html" "&lt;script&gt;alert\(1\)&lt;/script&gt; &amp; &quot;q&quot;"
expect_grep "summary names the workload" "$TMP/r.html" "<td>gemm_allgather</td>"
# the machine in a few rows, none of them the flattened JSON's
expect_grep "the machine's GPU row" "$TMP/r.html" "<tr><th>GPU</th><td>"
expect_grep "the machine's NCCL row" "$TMP/r.html" "<tr><th>NCCL</th><td>2.28.9"
expect_no_grep "no flattened machine.* rows" "$TMP/r.html" "<th>machine\."
# the lineage tree says what its marks are and labels every node; the
# directive bars have a legend
expect_grep "lineage legend" "$TMP/r.html" 'class="legend">a node per candidate'
expect_grep "lineage rows labelled by generation" "$TMP/r.html" 'class="label">gen 0<'
n_nodes=$(grep -o 'class="node ' "$TMP/r.html" | wc -l); n_ids=$(grep -o 'class="nid"' "$TMP/r.html" | wc -l)
[ "$n_nodes" -gt 0 ] && [ "$n_nodes" = "$n_ids" ] && ok "every lineage node has its id ($n_ids)" ||
  not_ok "every lineage node has its id" "$n_nodes nodes, $n_ids ids"
expect_grep "directive bars legend" "$TMP/r.html" 'class="legend">best score with this value<'
for s in summary scores lineage directives cost best-diff failures; do
  expect_grep "section $s is there" "$TMP/r.html" "<section id=\"$s\">"
done
nodes=$(grep -o 'class="node ' "$TMP/r.html" | wc -l)
total=$(sqlite3 "$TMP/run.db" "SELECT count(*) FROM programs")
if [ "$nodes" -eq "$total" ]; then ok "lineage has one node per program ($total)"
else not_ok "lineage has one node per program" "$nodes nodes, $total programs"; fi
pts=$(grep -o 'class="pt ' "$TMP/r.html" | wc -l)
ev=$(sqlite3 "$TMP/run.db" "SELECT count(*) FROM programs WHERE status IN ('ok','failed','rejected')")
if [ "$pts" -eq "$ev" ]; then ok "score plot has one mark per evaluated candidate ($ev)"
else not_ok "score plot has one mark per evaluated candidate" "$pts marks, $ev evaluated"; fi
# The best's speedup in the table is computed from the database's numbers.
best=$(sqlite3 "$TMP/run.db" "SELECT best_program_id FROM runs")
want=$(sqlite3 "$TMP/run.db" "SELECT printf('%.2fx', 8.95 / json_extract(metrics_json, '\$.full_8k.median_ms')) FROM programs WHERE id=$best")
expect_grep "best speedup per size from the metrics" "$TMP/r.html" "\($want\)</td></tr>"
expect_grep "best diff names seed and best" "$TMP/r.html" "\+\+\+ program $best"

expect_rc "report --format md" 0 "$CUCO" report "$TMP/run.db" --format md
expect_grep "md has the summary table" "$TMP/out" "^\| workload \| gemm_allgather \|"
expect_grep "md has the per-size table" "$TMP/out" "^\| full_8k \| 8.95 \|"
expect_grep "a database from before the bar: the first baseline is the bar" "$TMP/out" \
  "^\| full_8k \| 8.95 \| the first baseline \| "
expect_grep "md has the diff" "$TMP/out" '^```diff'

# SQLite may create empty -wal/-shm files beside a WAL database even for a
# read-only reader; the database itself and its log must stay unchanged.
sum_after=$(sha256sum <"$TMP/run.db")
if [ "$sum_before" = "$sum_after" ] && [ ! -s "$TMP/run.db-wal" ]; then
  ok "the database is not changed"
else not_ok "the database is not changed" "checksum or WAL differ"; fi

expect_rc "a missing database is an error" 1 "$CUCO" report "$TMP/none.db" -o "$TMP/x.html"
expect_grep "... naming the file" "$TMP/err" "none.db: no such database file"
echo "not a database" >"$TMP/junk.db"
expect_rc "a file that is not SQLite is an error" 1 "$CUCO" report "$TMP/junk.db"
sqlite3 "$TMP/other.db" "CREATE TABLE t(x)"
expect_rc "a SQLite file without the schema is an error" 1 "$CUCO" report "$TMP/other.db"
expect_grep "... saying so" "$TMP/err" "not a cuco run database"
expect_rc "a bad --format is a usage error" 2 "$CUCO" report "$TMP/run.db" --format pdf
expect_rc "no database is a usage error" 2 "$CUCO" report
[ -e "$TMP/x.html" ] && not_ok "no output after an error" "x.html exists" || ok "no output after an error"
expect_rc "an unwritable output is an error" 1 "$CUCO" report "$TMP/run.db" -o "$TMP/no/such/dir/r.html"
# Hostile numbers and shapes: a report still comes out, with a note.
cp "$TMP/run.db" "$TMP/odd.db"
sqlite3 "$TMP/odd.db" "UPDATE programs SET score=1e308 WHERE id=2; UPDATE programs SET metrics_json='[1,2]', directives_json='{\"params\":[1]}' WHERE id=3; UPDATE runs SET baseline_json='\"x\"', machine_json='not json'"
expect_rc "odd values still make a report" 0 "$CUCO" report "$TMP/odd.db" -o "$TMP/odd.html"
expect_grep "... with a note for the figure it cannot draw" "$TMP/odd.html" "Figure not drawn: svg: a coordinate is not a finite number"
expect_grep "... and the rest of the page" "$TMP/odd.html" "<section id=\"failures\">"
done_testing

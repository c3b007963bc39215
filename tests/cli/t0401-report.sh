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

# The headline: the best's search figure labelled unconfirmed (no
# confirmation in the fixture), on the page, in its summary and in md.
bsp=$(sqlite3 "$TMP/run.db" "SELECT printf('%.3g', speedup) FROM programs WHERE id=$best")
expect_grep "headline: unconfirmed, against the bar" "$TMP/r.html" \
  "<p id=\"headline\"><strong>Speedup:</strong> best #$best: ${bsp}x the bar, unconfirmed \(the search&#39;s single measurement\)</p>"
expect_grep "headline: first row of the summary" "$TMP/r.html" \
  "<tr><th>speedup</th><td>best #$best: ${bsp}x the bar, unconfirmed"
expect_rc "report --format md" 0 "$CUCO" report "$TMP/run.db" --format md
expect_grep "md headline: unconfirmed" "$TMP/out" "^\*\*Speedup:\*\* best #$best: ${bsp}x the bar, unconfirmed"
# A confirmation of the best (schema 2): the headline is its figure and
# interval, the legend says confirmed, and the search figure is no
# headline any more.
cp "$TMP/run.db" "$TMP/conf.db"
sqlite3 "$TMP/conf.db" "UPDATE meta SET value='2' WHERE key='schema_version'; CREATE TABLE confirmations (id INTEGER PRIMARY KEY, run_id INTEGER, program_id INTEGER, versus_id INTEGER, versus TEXT, rounds INTEGER, ratio REAL, lo REAL, hi REAL, verdict TEXT, samples_json TEXT, created_at REAL); INSERT INTO confirmations (run_id, program_id, versus_id, versus, rounds, ratio, lo, hi, verdict) VALUES (1, $best, 0, 'bar', 3, 14.6, 13.9, 15.3, 'best'), (1, $best, 1, 'seed', 3, 9.1, 8.8, 9.4, 'best')"
expect_rc "report of a confirmed run" 0 "$CUCO" report "$TMP/conf.db" -o "$TMP/conf.html"
want="best #$best: 14.6x the bar, 95% CI \[13.9, 15.3\], confirmed over 3 rounds"
expect_grep "headline: the confirmed figure with its interval" "$TMP/conf.html" \
  "<p id=\"headline\"><strong>Speedup:</strong> $want</p>"
expect_grep "... the summary's speedup row too" "$TMP/conf.html" "<tr><th>speedup</th><td>$want</td></tr>"
expect_grep "... and the plot's legend" "$TMP/conf.html" ">best #$best: 14.6x the bar, confirmed \[13.9, 15.3\], score "
expect_no_grep "... no unconfirmed figure is a headline" "$TMP/conf.html" "unconfirmed \(the search"
expect_rc "md of a confirmed run" 0 "$CUCO" report "$TMP/conf.db" --format md
expect_grep "md headline: confirmed" "$TMP/out" "^\*\*Speedup:\*\* $want$"

# Without a bar (a workload without baselines) the report speaks of the
# seed, never of a bar: no bar columns, no "bar" in the text.
cp "$TMP/run.db" "$TMP/nobar.db"
sqlite3 "$TMP/nobar.db" "UPDATE runs SET baseline_json=NULL"
expect_rc "report without a bar" 0 "$CUCO" report "$TMP/nobar.db" -o "$TMP/nobar.html"
expect_grep "no bar: the headline is against the seed" "$TMP/nobar.html" \
  "<p id=\"headline\"><strong>Speedup:</strong> best #$best: [0-9.]+x the seed, unconfirmed"
sed -e 's/<style>.*<\/style>//' -e 's/<[^>]*>/ /g' "$TMP/nobar.html" >"$TMP/nobar.txt"
expect_no_grep "no bar: the page's text never says bar" "$TMP/nobar.txt" "(^|[^a-z_])bar([^a-z_]|$)"
expect_rc "md without a bar" 0 "$CUCO" report "$TMP/nobar.db" --format md
expect_no_grep "no bar: md never says bar" "$TMP/out" "(^|[^a-z_])bar([^a-z_]|$)"

# No failure: no "Failures" section at all (not an empty one).
cp "$TMP/run.db" "$TMP/nofail.db"
sqlite3 "$TMP/nofail.db" "DELETE FROM programs WHERE status IN ('failed', 'rejected')"
expect_rc "report without failures" 0 "$CUCO" report "$TMP/nofail.db" -o "$TMP/nofail.html"
expect_no_grep "no Failures header when none failed" "$TMP/nofail.html" "Failures|id=\"failures\""

# The figures' legends fit their figures: every legend text (and island
# swatch label) ends inside its <svg> at 0.55 em a character, with ten
# islands too (the legend wraps rather than runs past the edge).
cp "$TMP/run.db" "$TMP/isl.db"
sqlite3 "$TMP/isl.db" "UPDATE programs SET island = id % 10"
expect_rc "report with ten islands" 0 "$CUCO" report "$TMP/isl.db" -o "$TMP/isl.html"
for f in r conf isl; do
  if python3 - "$TMP/$f.html" <<'PY' 2>"$TMP/pyerr"
import html, re, sys
page = open(sys.argv[1]).read()
size = {"legend": 11, "tick": 10}
cut = []
for w, body in re.findall(r'<svg [^>]*width="([0-9.]+)"[^>]*>(.*?)</svg>', page, re.S):
    for x, a, cls, t in re.findall(r'<text x="([-0-9.]+)" y="[-0-9.]+" text-anchor="(\w+)" class="(\w+)">([^<]*)</text>', body):
        t = html.unescape(t)
        if a != "start" or not (cls == "legend" or (cls == "tick" and re.match(r"island \d+$", t))):
            continue
        right = float(x) + 0.55 * size[cls] * len(t)
        if right > float(w):
            cut.append("%r ends at %.0f of %s" % (t, right, w))
assert not cut, cut
PY
  then ok "$f.html: no legend runs past its figure"
  else not_ok "$f.html: no legend runs past its figure" "$(tail -c 600 "$TMP/pyerr")"; fi
done

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

#!/usr/bin/env python3
"""Record one GPU result in bench/: wrap a result file from a device run
with what it is, the exact command, the machine description and the date.

  scripts/bench-record.py NAME --what TEXT --command CMD --machine M.json \
      --date YYYY-MM-DD [--summary S.json] [--notes N.json] RAW.json|RAW.jsonl|RAW.md ...

Rows for bench/README.md come from --summary (a JSON list of
{"size","impl","median_ms","vs":"...","ratio"}), which the caller derives
from the raw files; raw files are embedded unchanged."""
import argparse, json, os, sys

ap = argparse.ArgumentParser()
ap.add_argument("name"); ap.add_argument("raw", nargs="+")
ap.add_argument("--what", required=True); ap.add_argument("--command", required=True)
ap.add_argument("--machine", required=True); ap.add_argument("--date", required=True)
ap.add_argument("--summary")
ap.add_argument("--notes", help="a JSON list of one-line notes")
a = ap.parse_args()

def load(p):
    txt = open(p).read()
    if p.endswith(".json"):
        return json.loads(txt)
    if p.endswith(".jsonl"):
        return [json.loads(l) for l in txt.splitlines() if l.strip()]
    return txt

rec = {"what": a.what, "date": a.date, "command": a.command,
       "machine": json.load(open(a.machine)),
       "summary": json.load(open(a.summary)) if a.summary else [],
       "notes": json.load(open(a.notes)) if a.notes else [],
       "raw": {os.path.basename(p): load(p) for p in a.raw}}
out = os.path.join(os.path.dirname(__file__), "..", "bench", a.name + ".json")
json.dump(rec, open(out, "w"), indent=1)
print("wrote", os.path.normpath(out))

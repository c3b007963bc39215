#!/usr/bin/env python3
"""Summary rows of a tests/gpu/seedwin.sh result folder, for
scripts/bench-record.py --summary: each workload's bar per bench size is the
seed's "vs_bar" in WL.json (cuco eval --impl all --json: the fastest bar
baseline of the same call); every implementation of WL.json and every
variant WL-NAME.json is set against it.

  scripts/seedwin-summary.py DIR > summary.json     (a table on stderr)"""
import glob, json, os, sys

d = sys.argv[1]
rows = []
for f in sorted(glob.glob(os.path.join(d, "*.json"))):
    base = os.path.basename(f)[:-5]
    if "-" in base or base.endswith(".anchor"):
        continue
    runs = json.load(open(f))
    bar = next((r["vs_bar"] for r in runs if r.get("vs_bar")), None)
    if not bar:
        print(f"{base}: no vs_bar (the seed or every bar baseline failed)", file=sys.stderr)
        continue
    impls = [(r.get("impl"), r) for r in runs]
    for v in sorted(glob.glob(os.path.join(d, base + "-*.json"))):
        try:
            r = json.load(open(v))
        except ValueError:
            r = {}
        r = r[0] if isinstance(r, list) and r else r
        impls.append((os.path.basename(v)[len(base) + 1:-5] + " (variant)", r))
    for name, r in impls:
        bench = ((r or {}).get("metrics") or {}).get("bench") or {}
        for size, b in bar.items():
            ms = ((bench.get(size) or {}).get("timing") or {}).get("median_ms")
            row = {"workload": base, "size": size, "impl": name, "status": (r or {}).get("status")}
            if ms:
                row.update(median_ms=ms, vs=f"{b['bar']} {b['bar_ms']:.4g} ms (the bar, same call)",
                           ratio=round(b["bar_ms"] / ms, 4))
            rows.append(row)
            print(f"{base:12} {size:8} {name:34} {ms or float('nan'):9.4f} ms "
                  f"{row.get('ratio', float('nan')):.3f}x", file=sys.stderr)
json.dump(rows, sys.stdout, indent=1)

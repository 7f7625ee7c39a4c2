# Nsight Compute's raw CSV (ncu --csv --page raw --metrics gpu__time_duration.sum ...) as a
# table: each kernel in launch order with its time, then the time per kernel name, largest first.
#   python3 bench/ncu_kernels.py LOG [LOG2]   (two logs: their per-name totals side by side)
import csv
import sys
from collections import defaultdict


def read(path):
    rows = []
    with open(path) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for r in csv.DictReader(lines):
        v = r.get("gpu__time_duration.sum", "")
        try:
            us = float(v.replace(",", "")) / 1e3  # ns
        except ValueError:
            continue  # the units row
        rows.append((r["Kernel Name"], us))
    return rows


def totals(rows):
    t = defaultdict(float)
    n = defaultdict(int)
    for name, us in rows:
        t[name[:90]] += us
        n[name[:90]] += 1
    return t, n


logs = [read(p) for p in sys.argv[1:]]
for path, rows in zip(sys.argv[1:], logs):
    print(f"== {path}: {len(rows)} kernels, {sum(us for _, us in rows):.1f} us")
    for name, us in rows:
        print(f"{us:9.2f}  {name[:110]}")
    t, n = totals(rows)
    print(f"-- by name")
    for name, us in sorted(t.items(), key=lambda kv: -kv[1]):
        print(f"{us:9.2f} {n[name]:4d}x  {name}")

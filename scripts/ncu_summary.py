#!/usr/bin/env python3
"""Per-kernel summary of one training step from Nsight Compute's CSV.

  ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
      trainer bench step ... --warmup W --steps S > ncu.csv
  python3 scripts/ncu_summary.py ncu.csv --iterations W+S [--top 30]

The kernels of the last iteration are the last 1/iterations of those profiled (the
first iterations also hold cuDNN's algorithm search and first-use work, so they are
longer; the last one is a steady step). Prints the step's GPU time, the launch count,
and the kernels grouped by name, largest first, with their share of the step.
"""
import argparse
import csv
import io
import re
import sys


def read_kernels(text):
    """(name, nanoseconds) per profiled kernel, in launch order."""
    # ncu prints its own log lines (==PROF== ...) and the program's output around the CSV.
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    kernels = {}
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}.get(unit, 1.0)
        kernels[int(row["ID"])] = (row["Kernel Name"], value * scale)
    return [kernels[i] for i in sorted(kernels)]


def short_name(name):
    # Template arguments make every instance distinct; the base name groups them.
    return re.sub(r"\(.*$", "", name)[:110]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv")
    p.add_argument("--iterations", type=int, required=True, help="warm-up + timed iterations that were profiled")
    p.add_argument("--top", type=int, default=30)
    args = p.parse_args()
    kernels = read_kernels(open(args.csv, errors="replace").read())
    if not kernels:
        print("no kernel rows in the CSV (did ncu profile anything?)")
        return 1
    per_step = max(1, len(kernels) // max(1, args.iterations))
    step = kernels[-per_step:]
    total = sum(t for _, t in step)
    groups = {}
    for name, t in step:
        key = short_name(name)
        count, time = groups.get(key, (0, 0.0))
        groups[key] = (count + 1, time + t)
    print(f"{len(kernels)} kernels profiled; one step = last {per_step} kernels")
    print(f"step GPU time {total / 1e6:.3f} ms over {per_step} launches")
    for key, (count, t) in sorted(groups.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"{100 * t / total:5.1f}%  {t / 1e6:8.3f} ms  x{count:<5d} {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

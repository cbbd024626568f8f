#!/usr/bin/env python3
"""Per-kernel summary of one training step from Nsight Compute's CSV.

  ncu --clock-control none --csv \\
      --metrics gpu__time_duration.sum[,dram__bytes_read.sum,dram__bytes_write.sum] \\
      trainer bench step ... --warmup W --steps S > ncu.csv
  python3 scripts/ncu_summary.py ncu.csv --iterations W+S [--top 30] [--calls REGEX]

The kernels of the last iteration are the last 1/iterations of those profiled (the
first iterations also hold cuDNN's algorithm search and first-use work, so they are
longer; the last one is a steady step). Prints the step's GPU time, the launch count,
and the kernels grouped by name, largest first, with their share of the step. With
the DRAM byte counts, each group also shows the bandwidth it reached: how far a
memory-bound kernel is from the GPU's (about 4.8 TB/s on an H200). ncu flushes the
caches before each kernel by default, so these are cold-cache times and bytes.
--calls lists every call of the kernels whose name matches REGEX (ignoring case),
slowest first, with its grid and block: which layer's call is slow, not only which
kernel. A value that does not parse, or a byte count in a unit this script does not
know, leaves that kernel's bytes out (and with them the GB/s column) rather than
stopping the summary.
"""
import argparse
import csv
import io
import re
import sys


TIME_UNITS = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
BYTE_UNITS = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
DRAM_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")


class Kernel:
    def __init__(self, name, grid, block):
        self.name, self.grid, self.block = name, grid, block
        self.ns = 0.0
        self.bytes = None  # DRAM bytes read + written, where the CSV has them
        self.unreadable_bytes = False


def read_kernels(text):
    """Kernel per profiled launch, in launch order."""
    # ncu prints its own log lines (==PROF== ...) and the program's output around the CSV.
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    kernels = {}
    for row in rows:
        metric = row.get("Metric Name")
        if metric != "gpu__time_duration.sum" and metric not in DRAM_METRICS:
            continue
        key = int(row["ID"])
        k = kernels.setdefault(key, Kernel(row["Kernel Name"], row.get("Grid Size", "?"), row.get("Block Size", "?")))
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            value = None
        if metric == "gpu__time_duration.sum":
            k.ns = (value or 0.0) * TIME_UNITS.get(row.get("Metric Unit", "nsecond"), 1.0)
            continue
        unit = BYTE_UNITS.get(row.get("Metric Unit", "byte"))
        if value is None or unit is None:
            k.unreadable_bytes = True
        else:
            k.bytes = (k.bytes or 0.0) + value * unit
    for k in kernels.values():
        if k.unreadable_bytes:
            k.bytes = None
    return [kernels[i] for i in sorted(kernels)]


def bandwidth(nbytes, ns):
    """' NNNN GB/s' (bytes per nanosecond), or '' without byte counts."""
    if nbytes is None or ns <= 0:
        return ""
    return f"  {nbytes / ns:6.0f} GB/s"


def short_name(name):
    # Template arguments make every instance distinct; the base name groups them.
    return re.sub(r"\(.*$", "", name)[:110]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv")
    p.add_argument("--iterations", type=int, required=True, help="warm-up + timed iterations that were profiled")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--calls", metavar="REGEX", help="also list each call of the kernels whose name matches")
    p.add_argument("--calls-top", type=int, default=40, help="at most this many calls (default 40)")
    args = p.parse_args()
    kernels = read_kernels(open(args.csv, errors="replace").read())
    if not kernels:
        print("no kernel rows in the CSV (did ncu profile anything?)")
        return 1
    per_step = max(1, len(kernels) // max(1, args.iterations))
    step = kernels[-per_step:]
    total = sum(k.ns for k in step)
    with_bytes = all(k.bytes is not None for k in step)
    groups = {}
    for k in step:
        key = short_name(k.name)
        count, time, nbytes = groups.get(key, (0, 0.0, 0.0))
        groups[key] = (count + 1, time + k.ns, nbytes + (k.bytes or 0.0))
    print(f"{len(kernels)} kernels profiled; one step = last {per_step} kernels")
    line = f"step GPU time {total / 1e6:.3f} ms over {per_step} launches"
    if with_bytes:
        line += f", {sum(k.bytes for k in step) / 1e9:.2f} GB of DRAM traffic"
    print(line)
    for key, (count, t, nbytes) in sorted(groups.items(), key=lambda kv: -kv[1][1])[: args.top]:
        rate = bandwidth(nbytes if with_bytes else None, t)
        print(f"{100 * t / total:5.1f}%  {t / 1e6:8.3f} ms  x{count:<5d}{rate} {key}")
    if args.calls:
        pattern = re.compile(args.calls, re.IGNORECASE)
        calls = sorted((k for k in step if pattern.search(short_name(k.name))), key=lambda k: -k.ns)
        print(f"calls of /{args.calls}/: {len(calls)}, slowest first")
        for k in calls[: args.calls_top]:
            print(f"  {k.ns / 1e3:9.1f} us{bandwidth(k.bytes, k.ns)}  grid {k.grid} block {k.block}  {short_name(k.name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

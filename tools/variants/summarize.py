#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Tables from a measuring run of tools/variants/measure.sh.

    summarize.py raw.txt            (or the archive measure.sh wrote)

One table per metric: a row per implementation (every spindle variant, every peer, every
anchor), a column per shape, the median over rounds and [min, max]; then each spindle
variant's ratio to the best bounded MPMC peer of the same shape (higher is better for spindle
in both tables: for the ping-pong's times the ratio is inverted). Only the standard library.
"""
import io
import json
import re
import statistics
import sys
import tarfile
from collections import defaultdict

# Rows that are not bounded MPMC queues: no "best peer" for the ratios.
NOT_BOUNDED_MPMC = ("moodycamel", "bare", "spindle", "std::mutex", "go-chan-unbounded")


def read_lines(path):
    if path.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path) as t:
            for m in t.getmembers():
                if m.name.endswith("raw.txt"):
                    return io.TextIOWrapper(t.extractfile(m), encoding="utf-8").read().splitlines()
        raise SystemExit("no raw.txt in " + path)
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def parse(lines):
    """(shape, implementation) -> list of values; and shape -> unit."""
    values = defaultdict(list)
    units = {}
    head = re.compile(r"round=(\d+) shape=(\S+) prog=(\S+) \| (.*)")
    for line in lines:
        m = head.match(line)
        if not m:
            continue
        _, shape, prog, payload = m.groups()
        kind, _, name = prog.partition(":")
        if payload.startswith("{"):
            try:
                table = json.loads(payload)
            except json.JSONDecodeError:
                continue
            if "CPU" in table.get("unit", ""):
                continue
            if shape == "executor":
                shape = "exec:" + table.get("scenario", "?").split(",")[0]
            for row in table["rows"]:
                label = row["name"]
                if kind == "spindle":
                    variant = name.removeprefix("spindle-bench-")
                    label = f"{label} [{variant}]"
                values[(shape, label)].append(row["median"])
                units[shape] = table["unit"]
        elif "=" in payload:
            fields = dict(kv.split("=", 1) for kv in payload.split() if "=" in kv)
            if fields.get("verified") == "0":
                continue
            label = fields.get("name", name)
            if shape == "executor":
                shape = "exec:" + " ".join(f"{k}={v}" for k, v in fields.items()
                                           if k in ("workload", "n", "threads", "msgs", "tasks"))
            for key, unit in (("mops", "M msg/s"), ("ns_per_rtt", "ns/round trip"),
                              ("secs", "s")):
                if key in fields:
                    values[(shape, label)].append(float(fields[key]))
                    units.setdefault(shape, unit)
                    break
    return values, units


def lower_is_better(unit):
    return unit.startswith("ns") or unit == "s"


def main():
    values, units = parse(read_lines(sys.argv[1]))
    shapes = sorted({s for s, _ in values}, key=lambda s: (s.startswith("pp"), s.startswith("exec"),
                                                           [int(x) for x in re.findall(r"\d+", s)]))
    labels = sorted({l for _, l in values}, key=lambda l: (not l.startswith("spindle"), l))
    med = {k: statistics.median(v) for k, v in values.items()}

    def shape_title(s):
        if s.startswith("pp:"):
            return "ping-pong ns"
        if s.startswith("exec:"):
            return s[5:]
        p, c, _ = s.split(":")
        return f"{p}P/{c}C"

    print("| implementation | " + " | ".join(shape_title(s) for s in shapes) + " |")
    print("|---|" + "---:|" * len(shapes))
    for label in labels:
        cells = []
        for s in shapes:
            v = values.get((s, label))
            cells.append(f"{med[(s, label)]:.3g} [{min(v):.3g}, {max(v):.3g}]" if v else "")
        print(f"| {label} | " + " | ".join(cells) + " |")

    print()
    print("Ratio of each spindle row to the best bounded MPMC peer of the shape (>1: spindle ahead):")
    print()
    best = {}
    for s in shapes:
        peers = [(med[(s, l)], l) for l in labels
                 if (s, l) in med and not l.startswith(NOT_BOUNDED_MPMC)]
        if peers:
            best[s] = (min if lower_is_better(units[s]) else max)(peers)
    print("| spindle row | " + " | ".join(shape_title(s) for s in shapes) + " |")
    print("|---|" + "---:|" * len(shapes))
    print("| best peer | " + " | ".join(best[s][1] if s in best else "" for s in shapes) + " |")
    for label in labels:
        if not label.startswith("spindle"):
            continue
        cells = []
        for s in shapes:
            if (s, label) not in med or s not in best:
                cells.append("")
                continue
            r = med[(s, label)] / best[s][0]
            cells.append(f"{1 / r if lower_is_better(units[s]) else r:.2f}x")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

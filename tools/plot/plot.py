#!/usr/bin/env python3
"""Draws spindle-bench's JSON results (tools/plot/README.md describes them) as PNG and SVG.

    plot.py [--out DIR] [--formats png,svg] INPUT...

INPUT: JSON files, or folders whose *.json files are read. Each file becomes figures named
after it, in DIR (default: beside the file):
  a sweep (spindle-bench sweep --out)       NAME.png/.svg: the figure against the thread
                                            count, one line per implementation (the median),
                                            min to max as a shaded band;
                                            NAME-ratio.png/.svg: spindle's advantage over the
                                            best peer at each thread count, as bars;
  a latency file (spindle-bench latency)    NAME.png/.svg: the latency distribution of each
                                            implementation as a CDF, with the tail beside it.
Files of another format are skipped with a message. Needs matplotlib (Debian:
python3-matplotlib); exits with status 1 when an input cannot be read or drawn.
"""

import argparse
import json
import pathlib
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
except ImportError:
    sys.exit(
        "plot.py: matplotlib is missing: apt-get install python3-matplotlib "
        "(or pip install matplotlib)"
    )

SWEEP_FORMAT = "spindle-bench-sweep"
LATENCY_FORMAT = "spindle-bench-latency"


def normalise(doc):
    """The series of a document with `impl` and `family` filled in: a latency file may name
    its list `rows` and an implementation `name`; a missing family is "spindle" for names
    starting with "spindle", "peer" otherwise."""
    series = doc.get("series", doc.get("rows"))
    if not isinstance(series, list):
        raise ValueError("no series")
    for s in series:
        if "impl" not in s:
            s["impl"] = s["name"]
        if "family" not in s:
            s["family"] = "spindle" if s["impl"].startswith("spindle") else "peer"
    doc["series"] = series
    return doc


def kind_of(doc):
    """"sweep", "latency" or None."""
    if not isinstance(doc, dict):
        return None
    if doc.get("format") == SWEEP_FORMAT:
        return "sweep"
    if doc.get("format") == LATENCY_FORMAT:
        return "latency"
    rows = doc.get("series", doc.get("rows"))
    if "format" not in doc and isinstance(rows, list) and rows:
        if all(isinstance(r, dict) and "percentiles" in r for r in rows):
            return "latency"
    return None


def machine_line(doc):
    """One line naming where the figures were measured."""
    m = doc.get("machine", {})
    return "{}, {} CPUs, {}, commit {}, {}".format(
        m.get("cpu_model", "unknown CPU"),
        m.get("cpus", "?"),
        m.get("compiler", "unknown compiler"),
        m.get("commit", "unknown"),
        m.get("date", "undated"),
    )


def styles(series):
    """A colour and line style per implementation: spindle's rows solid and thick, the peers'
    thinner, baselines dashed grey. The colours follow the order of the file, so the same
    implementation gets the same colour in every figure of one sweep."""
    # tab10 without its grey, which the baselines use.
    palette = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i != 7]
    out = {}
    colour = 0
    for s in series:
        family = s.get("family", "peer")
        if family == "baseline":
            out[s["impl"]] = dict(color="0.45", linestyle="--", linewidth=1.4, marker="")
            continue
        out[s["impl"]] = dict(
            color=palette[colour % len(palette)],
            linestyle="-",
            linewidth=2.6 if family == "spindle" else 1.5,
            marker="o" if family == "spindle" else ".",
        )
        colour += 1
    return out


def save(fig, out_dir, stem, formats):
    written = []
    for ext in formats:
        path = out_dir / "{}.{}".format(stem, ext)
        fig.savefig(path, dpi=120)
        written.append(path)
    plt.close(fig)
    for path in written:
        print("wrote {}".format(path))
    return written


def thread_axis(ax, doc, threads):
    """A log-2 thread axis with a tick at each measured count, and the oversubscribed side
    (more threads than CPUs) shaded."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(threads))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(t) for t in threads])
    lo, hi = min(threads), max(threads)
    pad = 1.25 if lo != hi else 2
    ax.set_xlim(lo / pad, hi * pad)
    cpus = doc.get("machine", {}).get("cpus")
    if isinstance(cpus, int) and cpus > 0 and cpus < hi:
        ax.axvspan(cpus, hi * pad, color="0.92", zorder=0)
        ax.axvline(cpus, color="0.55", linewidth=1, linestyle=":", zorder=1)
        ax.text(
            cpus * 1.04,
            0.99,
            "more threads than\nCPUs ({})".format(cpus),
            transform=ax.get_xaxis_transform(),
            va="top",
            ha="left",
            fontsize=8,
            color="0.35",
        )


def plot_sweep(doc, out_dir, stem, formats):
    series = doc["series"]
    unit = doc.get("unit", "")
    better = "higher" if doc.get("higher_is_better", True) else "lower"
    threads = sorted({p["threads"] for s in series for p in s["points"]})
    style = styles(series)
    written = []

    fig, ax = plt.subplots(figsize=(11, 5.6), layout="constrained")
    thread_axis(ax, doc, threads)
    for s in series:
        pts = sorted(s["points"], key=lambda p: p["threads"])
        xs = [p["threads"] for p in pts]
        st = style[s["impl"]]
        ax.fill_between(
            xs,
            [p["min"] for p in pts],
            [p["max"] for p in pts],
            color=st["color"],
            alpha=0.12,
            linewidth=0,
        )
        ax.plot(xs, [p["median"] for p in pts], label=s["impl"], **st)
    ax.set_xlabel(doc.get("x_label", "threads"))
    # Medians more than 30x apart would flatten the lower lines against zero: a log axis then.
    medians = [p["median"] for s in series for p in s["points"] if p["median"] > 0]
    if medians and max(medians) > 30 * min(medians):
        ax.set_yscale("log")
        ax.set_ylabel("{} ({} is better; log scale)".format(unit, better))
    else:
        ax.set_ylim(bottom=0)
        ax.set_ylabel("{} ({} is better)".format(unit, better))
    ax.grid(True, which="major", alpha=0.3)
    runs = sorted({len(p.get("samples", [])) for s in series for p in s["points"]})
    runs_text = "{}".format(runs[0]) if len(runs) == 1 else "{}-{}".format(runs[0], runs[-1])
    ax.set_title(
        "{}\nmedian of {} interleaved runs, band: min to max\n{}".format(
            doc.get("title", doc.get("scenario", stem)), runs_text, machine_line(doc)
        ),
        fontsize=10,
    )
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    written += save(fig, out_dir, stem, formats)

    ratio = advantage(doc, threads)
    if ratio:
        written += plot_ratio(doc, ratio, out_dir, stem + "-ratio", formats)
    return written


def advantage(doc, threads):
    """Per thread count: (spindle's advantage over the best peer, that peer, spindle's row),
    where the advantage is how many times better spindle's first row's median is (> 1:
    spindle wins)."""
    higher = doc.get("higher_is_better", True)
    series = doc["series"]
    ref = next((s for s in series if s.get("family") == "spindle"), None)
    peers = [s for s in series if s.get("family", "peer") == "peer"]
    if ref is None or not peers:
        return []
    out = []
    for t in threads:
        r = next((p["median"] for p in ref["points"] if p["threads"] == t), None)
        best = None
        for s in peers:
            m = next((p["median"] for p in s["points"] if p["threads"] == t), None)
            if m is None or m <= 0:
                continue
            if best is None or (m > best[0] if higher else m < best[0]):
                best = (m, s["impl"])
        if r is None or r <= 0 or best is None:
            continue
        out.append((t, r / best[0] if higher else best[0] / r, best[1], ref["impl"]))
    return out


def plot_ratio(doc, ratio, out_dir, stem, formats):
    fig, ax = plt.subplots(figsize=(9, 5.0), layout="constrained")
    labels = [str(t) for t, _, _, _ in ratio]
    values = [v for _, v, _, _ in ratio]
    colours = ["tab:green" if v >= 1 else "tab:red" for v in values]
    bars = ax.bar(labels, values, color=colours, alpha=0.75, width=0.6)
    ax.axhline(1.0, color="0.2", linewidth=1)
    top = max(values + [1.0])
    for bar, (_, v, peer, _) in zip(bars, ratio):
        ax.text(
            bar.get_x() + bar.get_width() / 2,
            bar.get_height() + top * 0.015,
            "{:.2f}x\nvs {}".format(v, peer),
            ha="center",
            va="bottom",
            fontsize=7.5,
        )
    ax.set_ylim(0, top * 1.25)
    ax.set_xlabel(doc.get("x_label", "threads"))
    ax.set_ylabel("advantage over the best peer (> 1: spindle wins)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(
        "{}\n{} against the best peer at each point (medians)\n{}".format(
            doc.get("title", doc.get("scenario", stem)), ratio[0][3], machine_line(doc)
        ),
        fontsize=10,
    )
    return save(fig, out_dir, stem, formats)


def percentile_points(s):
    """The (percentile, value) pairs of a latency series, by percentile."""
    pts = []
    for key, value in s["percentiles"].items():
        p = float(key)
        if not 0 <= p <= 100:
            raise ValueError("{}: percentile {} is outside [0, 100]".format(s["impl"], key))
        pts.append((p, float(value)))
    pts.sort()
    if not pts:
        raise ValueError("{}: no percentiles".format(s["impl"]))
    return pts


def tail_tick(y, _pos):
    """A tick of the tail axis: the fraction slower and the percentile it marks (0.01: p99)."""
    if y <= 0 or y > 1:
        return ""
    p = 100 * (1 - y)
    return "{:g} (p{:g})".format(y, round(p, 6))


def plot_latency(doc, out_dir, stem, formats):
    series = doc["series"]
    unit = doc.get("unit", "ns")
    style = styles(series)
    fig, (cdf, tail) = plt.subplots(1, 2, figsize=(11, 5.4), layout="constrained")
    for s in series:
        st = dict(style[s["impl"]])
        label = s["impl"] if "label" not in s else "{} ({})".format(s["impl"], s["label"])
        # A full CDF ([value, fraction] pairs) when the file has one, else the percentiles.
        if s.get("cdf"):
            pts = sorted((100 * float(f), float(v)) for v, f in s["cdf"])
            st["marker"] = ""
        else:
            pts = percentile_points(s)
        cdf.plot([v for _, v in pts], [p / 100 for p, _ in pts], label=label, **st)
        # The tail: the fraction of operations slower than x, on a log axis; the maximum (p =
        # 100) sits at one operation in `samples` when the file says how many there were.
        samples = s.get("samples")
        tail_pts = []
        tail_src = pts
        if s.get("cdf") and s.get("percentiles"):
            # A sampled CDF stops short of the far tail: the percentiles beyond it extend it.
            below_one = [(p, v) for p, v in pts if p < 100]
            last_p, last_v = below_one[-1] if below_one else (0.0, 0.0)
            tail_src = below_one + [
                (p, v) for p, v in percentile_points(s) if p > last_p and v >= last_v
            ]
        for p, v in tail_src:
            beyond = 1 - p / 100
            if beyond <= 0:
                if not samples:
                    continue
                beyond = 1 / samples
            tail_pts.append((v, beyond))
        tail.plot([v for v, _ in tail_pts], [b for _, b in tail_pts], label=label, **st)
    cdf.set_xscale("log")
    cdf.set_ylim(0, 1.02)
    cdf.set_xlabel("latency ({}, log scale)".format(unit))
    cdf.set_ylabel("fraction of operations at most this latency")
    cdf.set_title("CDF", fontsize=10)
    cdf.grid(True, which="both", alpha=0.3)
    tail.set_xscale("log")
    tail.set_yscale("log")
    tail.yaxis.set_major_formatter(FuncFormatter(tail_tick))
    tail.set_xlabel("latency ({}, log scale)".format(unit))
    tail.set_ylabel("fraction of operations slower, and its percentile (log scale)")
    tail.set_title("tail: 1 - CDF", fontsize=10)
    tail.grid(True, which="both", alpha=0.3)
    cdf.legend(fontsize=8, loc="lower right", framealpha=0.9)
    fig.suptitle(
        "{}\n{}".format(doc.get("title", doc.get("scenario", stem)), machine_line(doc)),
        fontsize=10,
    )
    return save(fig, out_dir, stem, formats)


def inputs(paths):
    for p in paths:
        path = pathlib.Path(p)
        if path.is_dir():
            yield from sorted(path.glob("*.json"))
        else:
            yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="JSON files or folders of them")
    parser.add_argument("--out", help="folder for the figures (default: beside each input)")
    parser.add_argument("--formats", default="png,svg", help="comma-separated: png,svg")
    args = parser.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    written = []
    failed = False
    for path in inputs(args.inputs):
        out_dir = pathlib.Path(args.out) if args.out else path.parent
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            doc = json.loads(path.read_text())
            kind = kind_of(doc)
            if kind == "sweep":
                written += plot_sweep(normalise(doc), out_dir, path.stem, formats)
            elif kind == "latency":
                written += plot_latency(normalise(doc), out_dir, path.stem, formats)
            else:
                print("plot.py: {}: not a spindle-bench sweep or latency file, skipped".format(path))
        except (OSError, ValueError, KeyError, TypeError) as e:
            print("plot.py: {}: {}: {}".format(path, type(e).__name__, e), file=sys.stderr)
            failed = True
    if written:
        folders = sorted({str(p.parent.resolve()) for p in written})
        print("plots ({} files) in {}".format(len(written), ", ".join(folders)))
    elif not failed:
        print("plot.py: nothing to draw", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

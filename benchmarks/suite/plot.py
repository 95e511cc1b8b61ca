#!/usr/bin/env python3
"""Plots of a benchmark suite results.json (benchmarks/run), each as PNG
and SVG, drawn with matplotlib (Debian: python3-matplotlib):

  time-breakdown   per workload, each mode's end-to-end time against the
                   all-local run, the GC pauses' share hatched (the shape of
                   Semeru's Figure 8); median and [min-max] with --repeat
  pause-cdf        per workload, the distribution of pause times per mode
                   (a CDF over a log time axis, as Semeru's Figure 13 shows
                   pauses), the pause budget dashed
  pauses-WORKLOAD  every pause over the run, per mode
  faults-WORKLOAD  on-demand faults and readahead pages over the run, on a
                   log scale (disaggregated modes)

  plot.py results.json [--out DIR]

Without matplotlib it says so once and exits 0: the plots are optional.
"""
import argparse
import json
import math
import os
import statistics
import sys

try:
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
except ImportError:
    plt = None

# One colour per mode, the same in every figure (tab10, then grey).
MODE_ORDER = ["local", "on-50", "on-25", "on-13", "off-50", "off-25", "off-13", "bfs-25",
              "noreorder-25", "tcp-25", "kswap-50", "kswap-25"]
PALETTE = ["#4c4c4c", "#1f77b4", "#ff7f0e", "#2ca02c", "#9ecae1", "#fdae6b", "#a1d99b",
           "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf"]
CLIP = 4.0  # the slowdown axis stops here; taller bars are labelled with their value


def colour(mode):
    return PALETTE[MODE_ORDER.index(mode) % len(PALETTE)] if mode in MODE_ORDER else "#7f7f7f"


def finished(r):
    return "e2e_ns" in r and r.get("ok") and not r.get("error")


def modes_of(doc):
    seen = []
    for r in doc["runs"]:
        if r["mode"] not in seen:
            seen.append(r["mode"])
    return sorted(seen, key=lambda m: MODE_ORDER.index(m) if m in MODE_ORDER else 99)


def workloads_of(doc):
    seen = []
    for r in doc["runs"]:
        if r["workload"] not in seen:
            seen.append(r["workload"])
    return seen


def runs_of(doc, w, mode):
    return [r for r in doc["runs"] if r["workload"] == w and r["mode"] == mode]


def save(fig, out, name, made):
    for ext in ("png", "svg"):
        p = os.path.join(out, "%s.%s" % (name, ext))
        fig.savefig(p, dpi=130 if ext == "png" else None)
        made.append(p)
    plt.close(fig)


def time_breakdown(doc, out, made):
    """Grouped bars: per workload, e2e of each mode / e2e of local (medians
    over repeats, whiskers min-max), the GC share of each bar hatched. Rows
    of at most about 24 bars, so that a full matrix stays readable."""
    ws = [w for w in workloads_of(doc) if any(finished(r) for r in runs_of(doc, w, "local"))]
    modes = [m for m in modes_of(doc) if m != "local"]
    if not ws or not modes:
        return
    per_row = max(1, min(len(ws), 24 // len(modes)))
    rows = [ws[i:i + per_row] for i in range(0, len(ws), per_row)]
    fig, axes = plt.subplots(len(rows), 1, figsize=(11, 0.6 + 3.0 * len(rows)), squeeze=False)
    state = {"failed": False}
    for row, ax in zip(rows, axes[:, 0]):
        bars_row(doc, row, modes, ax, state, per_row)
    for ax in axes[:, 0]:
        ax.set_ylabel("e2e / all-local")
    n = max((len(runs_of(doc, w, m)) for w in ws for m in modes), default=1)
    fig.suptitle("Slowdown against the all-local heap, per workload and mode" +
                 (" (median of %d, whiskers min-max)" % n if n > 1 else ""))
    handles = [Patch(color=colour(m), label=m) for m in modes]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="///", label="GC pauses"))
    handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.8, label="local = 1"))
    if state["failed"]:
        handles.append(Line2D([], [], color="#d62728", marker="x", linestyle="none", mew=2,
                              label="run failed"))
    fig.legend(handles=handles, fontsize=8, loc="center right", frameon=False)
    fig.tight_layout(rect=(0, 0, 0.87, 1))
    save(fig, out, "time-breakdown", made)


def bars_row(doc, ws, modes, ax, state, slots):
    width = min(0.8 / len(modes), 0.3)
    clipped = False
    for wi, w in enumerate(ws):
        local = statistics.median(r["e2e_ns"] for r in runs_of(doc, w, "local") if finished(r))
        for mi, mode in enumerate(modes):
            x = wi + (mi - (len(modes) - 1) / 2) * width
            rs = runs_of(doc, w, mode)
            good = [r for r in rs if finished(r)]
            if not good:
                if rs and not all(r.get("skipped") for r in rs):
                    # Only where a run was made and did not finish.
                    ax.plot(x, 0.08, marker="x", color="#d62728", markersize=6, mew=2)
                    state["failed"] = True
                continue
            e2e = [r["e2e_ns"] / local for r in good]
            med = statistics.median(e2e)
            gc = statistics.median(r["gc_ns"] / local for r in good)
            h = min(med, CLIP)
            ax.bar(x, h, width * 0.92, color=colour(mode), edgecolor="white", linewidth=0.5)
            ax.bar(x, min(gc, h), width * 0.92, color="none", edgecolor="black", hatch="///",
                   linewidth=0)
            if len(good) > 1 and min(e2e) < CLIP:
                ax.errorbar(x, h, yerr=[[h - min(e2e)], [max(0, min(max(e2e), CLIP) - h)]],
                            fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
            if med > CLIP:
                clipped = True
                ax.text(x, CLIP * 0.98, "%.1fx" % med, ha="center", va="top", fontsize=6.5,
                        rotation=90, color="black", fontweight="bold",
                        bbox=dict(facecolor="white", edgecolor="none", pad=1, alpha=0.8))
    ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(ws)))
    ax.set_xticklabels(ws)
    ax.set_xlim(-0.6, slots - 0.4)  # every row on the same scale
    ax.set_ylim(0, CLIP if clipped else None)
    ax.grid(axis="y", alpha=0.3)


def grid(n):
    cols = min(n, 3)
    return (n + cols - 1) // cols, cols


def pause_cdf(doc, out, made):
    """Per workload, the CDF of pause times of each mode (all repeats)."""
    ws = [w for w in workloads_of(doc)
          if any(finished(r) and r.get("pause_list") for r in doc["runs"] if r["workload"] == w)]
    if not ws:
        return
    rows, cols = grid(len(ws))
    # At least 6.5 in wide: the title must fit a figure of one workload.
    fig, axes = plt.subplots(rows, cols, figsize=(max(4.2 * cols, 6.5), 3.2 * rows),
                             squeeze=False)
    budget = None
    shown = []
    for k, w in enumerate(ws):
        ax = axes[k // cols][k % cols]
        for mode in modes_of(doc):
            ps = sorted(p[1] for r in runs_of(doc, w, mode) if finished(r)
                        for p in r.get("pause_list", []) if p[1] > 0)
            if not ps:
                continue
            ys = [(i + 1) / len(ps) for i in range(len(ps))]
            ax.step(ps, ys, where="post", color=colour(mode), linewidth=1.4)
            if mode not in shown:
                shown.append(mode)
            budget = budget or next((r["config"].get("pause_budget_ms")
                                     for r in runs_of(doc, w, mode) if finished(r)), None)
        if budget:
            ax.axvline(budget, color="#d62728", linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_title(w, fontsize=10)
        ax.grid(alpha=0.3, which="both")
        if k % cols == 0:
            ax.set_ylabel("share of pauses")
        if k + cols >= len(ws):  # nothing below it
            ax.set_xlabel("pause (ms, log scale)")
    handles = [Line2D([], [], color=colour(m), linewidth=1.4, label=m) for m in shown]
    if budget:
        handles.append(Line2D([], [], color="#d62728", linestyle="--", linewidth=0.8,
                              label="pause budget %g ms" % budget))
    for k in range(len(ws), rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("Pause time distribution (CDF), per workload and mode")
    if len(ws) < rows * cols:
        # The legend in the first empty cell.
        axes[rows - 1][len(ws) % cols].legend(handles=handles, loc="center", fontsize=9,
                                              frameon=False)
        fig.tight_layout()
    else:
        fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6),
                   fontsize=8, frameon=False)
        lines = (len(handles) + 5) // 6  # the legend's rows, about 0.22 in each
        fig.tight_layout(rect=(0, (0.1 + 0.22 * lines) / fig.get_figheight(), 1, 1))
    save(fig, out, "pause-cdf", made)


def finish_over_time(fig, ax, handles, ylabel, title, out, name, made):
    """A figure over the run's time: log y axis, legend outside, saved."""
    ax.set_yscale("log")
    ax.set_xlabel("time since the start (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5),
              frameon=False)
    fig.tight_layout()
    save(fig, out, name, made)


def pause_timeline(doc, w, out, made):
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    handles, budget, any_full = [], None, False
    for mode in modes_of(doc):
        rs = [r for r in runs_of(doc, w, mode) if finished(r) and r.get("pause_list")]
        if not rs:
            continue
        r = rs[0]  # one run's timeline; repeats would overlap
        part = [(p[0] / 1e3, p[1]) for p in r["pause_list"] if not p[2]]
        full = [(p[0] / 1e3, p[1]) for p in r["pause_list"] if p[2]]
        if part:
            ax.scatter(*zip(*part), s=8, color=colour(mode), alpha=0.7, linewidths=0)
        if full:
            any_full = True
            ax.scatter(*zip(*full), s=36, color=colour(mode), marker="D", edgecolors="black",
                       linewidths=0.5)
        handles.append(Line2D([], [], color=colour(mode), marker="o", linestyle="none",
                              label=mode))
        budget = budget or r["config"].get("pause_budget_ms")
    if not handles:
        plt.close(fig)
        return
    if budget:
        ax.axhline(budget, color="#d62728", linestyle="--", linewidth=0.8)
        handles.append(Line2D([], [], color="#d62728", linestyle="--", linewidth=0.8,
                              label="pause budget %g ms" % budget))
    if any_full:
        handles.append(Line2D([], [], color="grey", marker="D", markeredgecolor="black",
                              linestyle="none", label="full collection"))
    finish_over_time(fig, ax, handles, "pause (ms, log scale)",
                     "%s: every GC pause over the run" % w, out, "pauses-%s" % w, made)


def faults_over_time(doc, w, out, made):
    handles, none = [], []
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    top = 0
    for mode in modes_of(doc):
        rs = [r for r in runs_of(doc, w, mode) if finished(r) and r["config"]["n_servers"]]
        if not rs:
            continue
        s = rs[0]["samples"]
        if not any(s["faults"]) and not any(s["readahead_pages"]):
            none.append(mode)  # nothing to draw: named in the legend's text, not as a line
            continue
        t = [x / 1e3 for x in s["t_ms"]]
        # Log scale: a count of 0 is not drawn (masked), the curve starts
        # at the first fault.
        f = [v if v > 0 else math.nan for v in s["faults"]]
        ra = [v if v > 0 else math.nan for v in s["readahead_pages"]]
        top = max(top, max(s["faults"] + s["readahead_pages"] + [0]))
        ax.plot(t, f, color=colour(mode), linewidth=1.6)
        ax.plot(t, ra, color=colour(mode), linewidth=1.0, linestyle=":")
        handles.append(Line2D([], [], color=colour(mode), linewidth=1.6, label=mode))
    if not handles or top == 0:
        plt.close(fig)
        return
    handles.append(Line2D([], [], color="black", linewidth=1.6, label="on-demand faults"))
    handles.append(Line2D([], [], color="black", linewidth=1.0, linestyle=":",
                          label="readahead pages"))
    if none:
        handles.append(Line2D([], [], linestyle="none", label="no faults: " + ", ".join(none)))
    finish_over_time(fig, ax, handles, "cumulative count (log scale)",
                     "%s: page faults over the run" % w, out, "faults-%s" % w, made)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--out", default="plots")
    args = ap.parse_args()
    if plt is None:
        print("plot.py: matplotlib is not installed for %s (Debian: python3-matplotlib, in "
              "scripts/setup.sh): no plots" % sys.executable)
        return 0
    with open(args.results) as f:
        doc = json.load(f)
    os.makedirs(args.out, exist_ok=True)
    made = []
    time_breakdown(doc, args.out, made)
    pause_cdf(doc, args.out, made)
    for w in workloads_of(doc):
        pause_timeline(doc, w, args.out, made)
        faults_over_time(doc, w, args.out, made)
    print("plots: %d files in %s" % (len(made), os.path.relpath(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

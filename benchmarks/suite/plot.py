#!/usr/bin/env python3
"""SVG plots from a benchmark suite results.json (benchmarks/run):

  time-breakdown.svg   per workload, each mode's mutator and GC time stacked,
                       normalised to the all-local run (after Semeru's Fig. 8)
  pauses-WORKLOAD.svg  every pause over the run, per mode
  faults-WORKLOAD.svg  on-demand faults and readahead pages over the run

  plot.py results.json [--out DIR]

Plain SVG written by hand: no plotting library.
"""
import argparse
import json
import os
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]
MUT, GC = "#4c78a8", "#e45756"


class Svg:
    def __init__(self, w, h):
        self.w, self.h, self.parts = w, h, []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, size=11, anchor="start", rotate=None, weight="normal"):
        tr = ' transform="rotate(%d %.1f %.1f)"' % (rotate, x, y) if rotate else ""
        self.add('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" font-weight="%s"%s>%s</text>'
                 % (x, y, size, anchor, weight, tr, escape(str(s))))

    def rect(self, x, y, w, h, fill, title=None):
        t = "<title>%s</title>" % escape(title) if title else ""
        self.add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">%s</rect>'
                 % (x, y, max(w, 0), max(h, 0), fill, t))

    def line(self, x1, y1, x2, y2, stroke="#000", width=1, dash=None):
        d = ' stroke-dasharray="%s"' % dash if dash else ""
        self.add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>'
                 % (x1, y1, x2, y2, stroke, width, d))

    def polyline(self, pts, stroke, width=1.5):
        self.add('<polyline fill="none" stroke="%s" stroke-width="%g" points="%s"/>'
                 % (stroke, width, " ".join("%.1f,%.1f" % p for p in pts)))

    def circle(self, x, y, r, fill, title=None):
        t = "<title>%s</title>" % escape(title) if title else ""
        self.add('<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" fill-opacity="0.7">%s</circle>'
                 % (x, y, r, fill, t))

    def save(self, path):
        with open(path, "w") as f:
            f.write('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
                    'viewBox="0 0 %d %d" font-family="sans-serif">\n' % (self.w, self.h, self.w, self.h))
            f.write('<rect width="100%" height="100%" fill="white"/>\n')
            f.write("\n".join(self.parts))
            f.write("\n</svg>\n")


def nice_max(v):
    """A round axis maximum at or above v."""
    if v <= 0:
        return 1.0
    p = 10 ** len(str(int(v))) / 10 if v >= 1 else 1.0
    while p > v:
        p /= 10
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * p >= v:
            return m * p
    return 10 * p


def axes(svg, x0, y0, w, h, ymax, ylabel, xlabel=None, xmax=None, ticks=5):
    svg.line(x0, y0, x0, y0 - h)
    svg.line(x0, y0, x0 + w, y0)
    for i in range(ticks + 1):
        v = ymax * i / ticks
        y = y0 - h * i / ticks
        svg.line(x0 - 4, y, x0, y)
        svg.line(x0, y, x0 + w, y, stroke="#ddd")
        svg.text(x0 - 6, y + 4, ("%.3g" % v), 10, "end")
    svg.text(x0 - 42, y0 - h / 2, ylabel, 11, "middle", rotate=-90)
    if xmax is not None:
        for i in range(ticks + 1):
            v = xmax * i / ticks
            x = x0 + w * i / ticks
            svg.line(x, y0, x, y0 + 4)
            svg.text(x, y0 + 16, "%.3g" % v, 10, "middle")
    if xlabel:
        svg.text(x0 + w / 2, y0 + 32, xlabel, 11, "middle")


def by_workload(doc):
    out = {}
    for r in doc["runs"]:
        if "e2e_ns" in r:
            out.setdefault(r["workload"], []).append(r)
    return out


def time_breakdown(doc, path):
    groups = by_workload(doc)
    modes = []
    for r in doc["runs"]:
        if r["mode"] not in modes:
            modes.append(r["mode"])
    failed = {(r["workload"], r["mode"]) for r in doc["runs"] if "e2e_ns" not in r}
    norm = {}
    for w, rs in groups.items():
        local = [r for r in rs if r["mode"] == "local"]
        norm[w] = local[0]["e2e_ns"] if local else max(r["e2e_ns"] for r in rs)
    # A mode that thrashes can be 100x local: clip there and print its ratio.
    ymax = min(nice_max(max(r["e2e_ns"] / norm[w] for w, rs in groups.items() for r in rs)), 4.0)
    bw, gap = 14, 26
    gw = len(modes) * bw + gap
    W = max(80 + len(groups) * gw + 20, 500)
    H = 380
    svg = Svg(W, H)
    x0, y0, h = 70, H - 110, H - 180
    svg.text(W / 2, 20, "Time breakdown: mutator and GC, normalised to all-local end-to-end",
             13, "middle", weight="bold")
    axes(svg, x0, y0, len(groups) * gw, h, ymax, "time / local end-to-end")
    svg.line(x0, y0 - h / ymax, x0 + len(groups) * gw, y0 - h / ymax, stroke="#888", dash="4,3")
    for gi, (w, rs) in enumerate(groups.items()):
        gx = x0 + gap / 2 + gi * gw
        for mi, mode in enumerate(modes):
            r = [r for r in rs if r["mode"] == mode]
            x = gx + mi * bw
            svg.text(x + bw / 2, y0 + 8, mode, 9, "end", rotate=-60)
            if (w, mode) in failed:
                svg.text(x + bw / 2, y0 - 4, "\u00d7", 12, "middle")  # failed or timed out
            if not r:
                continue
            r = r[0]
            m, g = r["mutator_ns"] / norm[w], r["gc_ns"] / norm[w]
            hm, hg = h * min(m, ymax) / ymax, h * min(g, ymax - min(m, ymax)) / ymax
            svg.rect(x, y0 - hm, bw - 2, hm, MUT, "%s %s: mutator %.2f s" % (w, mode, r["mutator_ns"] / 1e9))
            svg.rect(x, y0 - hm - hg, bw - 2, hg, GC, "%s %s: GC %.2f s" % (w, mode, r["gc_ns"] / 1e9))
            if m + g > ymax:
                # staggered: neighbouring labels would overlap
                svg.text(x + bw / 2, y0 - h - 4 - 9 * (mi % 2), "%.0fx" % (m + g), 9, "middle")
        svg.text(gx + len(modes) * bw / 2, y0 + 78, w, 11, "middle", weight="bold")
    lx = x0 + 10
    svg.rect(lx, 32, 12, 12, MUT)
    svg.text(lx + 16, 42, "mutator")
    svg.rect(lx + 90, 32, 12, 12, GC)
    svg.text(lx + 106, 42, "GC (pauses)")
    svg.text(lx + 200, 42, "\u00d7 failed or timed out")
    svg.save(path)


def legend(svg, x, y, names):
    for i, n in enumerate(names):
        svg.rect(x, y + i * 15 - 9, 10, 10, COLORS[i % len(COLORS)])
        svg.text(x + 14, y + i * 15, n, 10)


def pause_timeline(w, rs, path, budget):
    W, H = 760, 340
    svg = Svg(W, H)
    x0, y0, pw, ph = 70, H - 50, W - 200, H - 90
    xmax = nice_max(max(r["e2e_ns"] / 1e9 for r in rs))
    ymax = nice_max(max([p[1] for r in rs for p in r["pause_list"]] + [budget or 1]))
    svg.text(W / 2, 20, "%s: GC pauses over the run" % w, 13, "middle", weight="bold")
    axes(svg, x0, y0, pw, ph, ymax, "pause (ms)", "time since start (s)", xmax)
    if budget:
        y = y0 - ph * budget / ymax
        svg.line(x0, y, x0 + pw, y, stroke="#d62728", dash="5,4")
        svg.text(x0 + pw - 4, y - 4, "pause budget %g ms" % budget, 10, "end")
    for i, r in enumerate(rs):
        c = COLORS[i % len(COLORS)]
        for t, d, full, remote in r["pause_list"]:
            svg.circle(x0 + pw * (t / 1e3) / xmax, y0 - ph * min(d, ymax) / ymax, 3.5 if full else 2.2, c,
                       "%s t=%.2f s %.2f ms%s%s" % (r["mode"], t / 1e3, d, " full" if full else "",
                                                   " remote" if remote else ""))
    legend(svg, x0 + pw + 20, 50, [r["mode"] for r in rs])
    svg.text(x0 + pw + 20, 50 + len(rs) * 15 + 10, "large dots: full", 10)
    svg.save(path)


def faults_over_time(w, rs, path):
    rs = [r for r in rs if r["config"]["n_servers"]]
    if not rs:
        return False
    W, H = 760, 340
    svg = Svg(W, H)
    x0, y0, pw, ph = 80, H - 50, W - 220, H - 90
    xmax = nice_max(max(r["samples"]["t_ms"][-1] / 1e3 for r in rs))
    ymax = nice_max(max(max(r["samples"]["faults"][-1], 1) for r in rs))
    svg.text(W / 2, 20, "%s: on-demand faults (solid) and readahead pages / 10 (thin)" % w, 13,
             "middle", weight="bold")
    axes(svg, x0, y0, pw, ph, ymax, "cumulative count", "time since start (s)", xmax)
    for i, r in enumerate(rs):
        c = COLORS[i % len(COLORS)]
        s = r["samples"]
        t = [x / 1e3 for x in s["t_ms"]]
        svg.polyline([(x0 + pw * a / xmax, y0 - ph * min(b, ymax) / ymax) for a, b in zip(t, s["faults"])], c, 2)
        svg.polyline([(x0 + pw * a / xmax, y0 - ph * min(b / 10, ymax) / ymax)
                      for a, b in zip(t, s["readahead_pages"])], c, 0.8)
    legend(svg, x0 + pw + 20, 50, [r["mode"] for r in rs])
    svg.save(path)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--out", default="plots")
    args = ap.parse_args()
    with open(args.results) as f:
        doc = json.load(f)
    os.makedirs(args.out, exist_ok=True)
    made = []
    groups = by_workload(doc)
    if groups:
        p = os.path.join(args.out, "time-breakdown.svg")
        time_breakdown(doc, p)
        made.append(p)
    for w, rs in groups.items():
        budget = rs[0]["config"].get("pause_budget_ms")
        p = os.path.join(args.out, "pauses-%s.svg" % w)
        pause_timeline(w, rs, p, budget)
        made.append(p)
        p = os.path.join(args.out, "faults-%s.svg" % w)
        if faults_over_time(w, rs, p):
            made.append(p)
    print("plots: " + ", ".join(os.path.relpath(m) for m in made))


if __name__ == "__main__":
    main()

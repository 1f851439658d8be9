#!/usr/bin/env python3
"""Draws docs/propagation.svg from the JSON lines `cargo bench --bench scale -- propagation` prints.

Usage: scripts/perf_chart.py RESULTS.jsonl [OUT.svg]

One line per mode (pier SotW, pier delta, Envoy's file-based floor): new route -> first 200, p50 in
milliseconds, against the number of routes present (log scale). Standard library only, so the chart can
be redrawn anywhere the benchmark runs.
"""
import json
import math
import sys

W, H, L, R, T, B = 640, 380, 70, 150, 40, 50
COLORS = {"sotw": "#1f77b4", "delta": "#ff7f0e", "floor": "#2ca02c"}
LABELS = {"sotw": "pier, SotW", "delta": "pier, delta", "floor": "Envoy floor (.pb files)"}


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
    out = sys.argv[2] if len(sys.argv) > 2 else "docs/propagation.svg"
    series = {}
    for r in rows:
        if r.get("new_route_ms"):
            series.setdefault(r["mode"], []).append((r["routes"], r["new_route_ms"]["p50"]))
    xs = sorted({x for s in series.values() for x, _ in s})
    ymax = max(y for s in series.values() for _, y in s) * 1.15
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))

    def px(x):
        return L + (math.log10(x) - lx0) / max(lx1 - lx0, 1e-9) * (W - L - R)

    def py(y):
        return H - B - y / ymax * (H - T - B)

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="22" font-size="14">New route → first 200 through Envoy, p50 (ms)</text>',
           f'<line x1="{L}" y1="{H-B}" x2="{W-R}" y2="{H-B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H-B}" stroke="black"/>']
    for x in xs:
        svg.append(f'<text x="{px(x):.1f}" y="{H-B+18}" text-anchor="middle">{x:,}</text>')
    svg.append(f'<text x="{(L+W-R)/2:.1f}" y="{H-12}" text-anchor="middle">routes present</text>')
    step = 10 ** math.floor(math.log10(ymax / 4)) if ymax > 0 else 1
    y = 0.0
    while y <= ymax:
        svg.append(f'<text x="{L-8}" y="{py(y)+4:.1f}" text-anchor="end">{y:g}</text>')
        svg.append(f'<line x1="{L}" y1="{py(y):.1f}" x2="{W-R}" y2="{py(y):.1f}" stroke="#ddd"/>')
        y += step * (2 if ymax / step > 10 else 1)
    for i, (mode, pts) in enumerate(sorted(series.items())):
        pts.sort()
        c = COLORS.get(mode, "black")
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        svg.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for x, y in pts:
            svg.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{c}"/>')
            svg.append(f'<text x="{px(x)+5:.1f}" y="{py(y)-6:.1f}" fill="{c}" font-size="10">{y:g}</text>')
        svg.append(f'<rect x="{W-R+12}" y="{T+i*20}" width="12" height="12" fill="{c}"/>')
        svg.append(f'<text x="{W-R+30}" y="{T+i*20+10}">{LABELS.get(mode, mode)}</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

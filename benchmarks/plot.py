#!/usr/bin/python3
"""Draws nwbench / companion.py results as one PNG.

    /usr/bin/python3 benchmarks/plot.py RESULTS.json CHART.png [--title "machine ..."]

Four panels: 1-D Nadaraya-Watson (kernel evaluations/s against n), scaled dot-product
attention (GFLOP/s against n, with the sgemm ceiling), speed-ups over the naive loop for one
size of every pooling workload, and the batched products (GFLOP/s). Solid lines: one thread,
dashed: two (or the largest count in the file).
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"naive": "#888888", "reference": "#bbbbbb", "ceiling": "#000000", "blas": "#1f77b4",
          "fused": "#d62728", "numpy": "#2ca02c", "torch": "#ff7f0e", "sgemv-pass": "#000000",
          "sgemm-loop": "#9467bd", "openmp": "#8c564b", "nwattn": "#d62728",
          "fused-blas-T": "#e377c2", "statsmodels": "#17becf", "fastmath": "#7f7f00"}


def rows(results, **match):
    return [r for r in results if all(r.get(k) == v for k, v in match.items())]


def line_panel(ax, results, workload, impls, threads, extra=None, ylabel=""):
    for t, style in zip(threads, ("-", "--")):
        for impl in impls:
            pts = sorted((r["n"], r["rate"]) for r in rows(results, workload=workload,
                                                            impl=impl, threads=t, **(extra or {}))
                         if impl != "naive" or t == threads[0])
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", ms=3,
                    color=COLORS.get(impl), label=f"{impl} T={t}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("m = n")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)


def speedup_panel(ax, results, threads):
    cases = [("nw1d", {"n": 16384}, "1-D NW 16k"), ("nwd", {"d": 8}, "NW d=8 4k"),
             ("nwd", {"d": 64}, "NW d=64 4k"), ("sdpa", {"n": 4096, "causal": False}, "SDPA 4k"),
             ("sdpa", {"n": 4096, "causal": True}, "SDPA 4k causal"), ("mha", {}, "MHA")]
    impls = ["blas", "fused", "numpy", "torch"]
    width = 0.8 / (len(impls) * len(threads))
    labels = []
    for ci, (workload, match, label) in enumerate(cases):
        naive = rows(results, workload=workload, impl="naive", **match)
        if not naive:
            continue
        labels.append((ci, label))
        for ti, t in enumerate(threads):
            for ii, impl in enumerate(impls):
                r = rows(results, workload=workload, impl=impl, threads=t, **match)
                if not r:
                    continue
                x = ci - 0.4 + width * (ti * len(impls) + ii + 0.5)
                ax.bar(x, naive[0]["median_s"] / r[0]["median_s"], width,
                       color=COLORS[impl], alpha=1.0 if ti == 0 else 0.55,
                       label=f"{impl} T={t}" if ci == 0 or not ax.get_legend_handles_labels()[1]
                       or f"{impl} T={t}" not in ax.get_legend_handles_labels()[1] else None)
    ax.set_xticks([c for c, _ in labels], [lab for _, lab in labels], fontsize=7, rotation=20)
    ax.set_yscale("log")
    ax.set_ylabel("speed-up over the naive loop (1 thread)")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)


def bmm_panel(ax, results, threads):
    shapes = ["d2l", "cubes"]
    impls = ["naive", "sgemv-pass", "sgemm-loop", "openmp", "nwattn", "numpy", "torch"]
    width = 0.8 / (len(impls) * len(threads))
    for si, shape in enumerate(shapes):
        for ti, t in enumerate(threads):
            for ii, impl in enumerate(impls):
                r = rows(results, workload="bmm", shape=shape, impl=impl, threads=t)
                if not r:
                    continue
                x = si - 0.4 + width * (ti * len(impls) + ii + 0.5)
                lab = f"{impl} T={t}"
                seen = ax.get_legend_handles_labels()[1]
                ax.bar(x, r[0]["rate"], width, color=COLORS[impl],
                       alpha=1.0 if ti == 0 else 0.55, label=lab if lab not in seen else None)
    ax.set_xticks(range(len(shapes)), ["(B,1,n)x(B,n,1), B=1000", "1024 x 64^3"], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("GFLOP/s")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("chart")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    with open(args.results) as f:
        report = json.load(f)
    results = report["results"]
    threads = sorted({r["threads"] for r in results})
    threads = [threads[0], threads[-1]] if len(threads) > 1 else threads
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    line_panel(axes[0][0], results, "nw1d",
               ["naive", "fastmath", "blas", "fused", "numpy", "torch"],
               threads, ylabel="G kernel evaluations / s")
    axes[0][0].set_title("1-D Gaussian Nadaraya-Watson (d = 1)")
    line_panel(axes[0][1], results, "sdpa",
               ["naive", "ceiling", "blas", "fused", "numpy", "torch"], threads,
               extra={"causal": False}, ylabel="GFLOP/s")
    axes[0][1].set_title("Scaled dot-product attention, d = 64")
    speedup_panel(axes[1][0], results, threads)
    axes[1][0].set_title("Speed-up over the naive loop")
    bmm_panel(axes[1][1], results, threads)
    axes[1][1].set_title("Batched products")
    m = report.get("machine", {})
    title = args.title or (f"libnwattn {m.get('nwattn', '')} on {m.get('cpu', '?')}, "
                           f"{m.get('cores_online', '?')} cores, "
                           f"{m.get('vector_kernels', '?')} kernels, OpenBLAS core "
                           f"{m.get('blas_core', '?')}"[:150])
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(args.chart, dpi=110)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""fastsum_figure: time against n (log-log) of 1-D kernel regression, libnwattn beside statsmodels.

    NWATTN_LIBRARY=build/src/libnwattn.so.0 PYTHONPATH=python /usr/bin/python3 \\
        benchmarks/fastsum_figure.py [--max-n 1e7] [--budget 30] [--threads 2] \\
        [--json benchmarks/results/fastsum_scaling.json] [--png docs/images/fastsum_scaling.png]

Data: the noisy sine y = sin(2 pi x) + noise, x uniform on [0, 1), h = the normal-reference rule.
Three tasks at n = 10^3, 10^4, ..., --max-n: "fit" (the fitted values: local constant
predictions at the n training points), "cv" (one leave-one-out CV score with its gradient) and
"select" (the bandwidth selection: nwattn's grid and refinement; statsmodels' cv_ls).
Methods: libnwattn's REFERENCE backend (all pairs, double), its direct windowed rows
(NWATTN_NW_METHOD_DIRECT) and its fast sums (NWATTN_NW_METHOD_FASTSUM), all with the Laplace
kernel (the fast sums' exact family), the fast sums with the Gaussian (bound 1e-7), and
statsmodels' KernelReg (Gaussian, its only smooth continuous kernel). A method stops at the
first n whose predicted time (the last one times the growth of its last two; at least 100
for the all-pairs ones, 10 for the others; a selection at least 10 CV scores at that n) is
above --budget seconds. Single runs on a shared machine: the times are noisy; nothing here is
asserted.
"""
import argparse
import json
import os
import platform
import time

import numpy as np


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-n", type=float, default=1e7)
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default="benchmarks/results/fastsum_scaling.json")
    ap.add_argument("--png", default="docs/images/fastsum_scaling.png")
    args = ap.parse_args()

    import nwattn

    ctxs = {
        "reference": nwattn.Context("reference", threads=args.threads),
        "direct": nwattn.Context(threads=args.threads),
        "fastsum": nwattn.Context(threads=args.threads),
    }
    ctxs["direct"].nw_method = "direct"
    ctxs["fastsum"].nw_method = "fastsum"
    try:
        from statsmodels.nonparametric.kernel_regression import KernelReg
    except ImportError:  # the figure then has no statsmodels lines
        KernelReg = None

    methods = [("reference", "laplace"), ("direct", "laplace"), ("fastsum", "laplace"),
               ("fastsum", "gaussian"), ("statsmodels", "gaussian")]
    tasks = ["fit", "cv", "select"]
    times = {f"{m} {k}": {t: {} for t in tasks} for m, k in methods}
    stopped = {(m, k, t): False for m, k in methods for t in tasks}
    rng = np.random.default_rng(42)
    n = 1000
    while n <= args.max_n:
        x = rng.random(n).astype(np.float32)
        y = (np.sin(2 * np.pi * x) + 0.3 * rng.standard_normal(n)).astype(np.float32)
        h = float(1.06 * np.std(x) * n ** -0.2)
        for m, k in methods:
            name = f"{m} {k}"
            for t in tasks:
                series = times[name][t]
                if stopped[(m, k, t)]:
                    continue
                done = sorted(series)
                if done:
                    # all pairs grow like n^2 until measured otherwise; the rest like n
                    growth = 100.0 if m in ("reference", "statsmodels") else 10.0
                    if len(done) >= 2:
                        growth = max(growth, series[done[-1]] / series[done[-2]])
                    predicted = series[done[-1]] * growth
                    cv_now = times[name]["cv"].get(n)
                    if t == "select" and cv_now is not None:  # >= 10 CV evaluations
                        predicted = max(predicted, 10.0 * cv_now)
                    if predicted > args.budget:
                        stopped[(m, k, t)] = True
                        continue
                if m == "statsmodels":
                    if KernelReg is None:
                        continue
                    xd, yd = x.astype(np.float64), y.astype(np.float64)
                    if t == "fit":
                        fn = lambda: KernelReg(yd, xd, "c", reg_type="lc", bw=[h]).fit(xd)
                    elif t == "cv":
                        continue  # statsmodels has no public one-CV-score call
                    else:
                        fn = lambda: KernelReg(yd, xd, "c", reg_type="lc", bw="cv_ls")
                else:
                    ctx = ctxs[m]
                    if t == "fit":
                        fn = lambda: nwattn.nw_predict(x, x, y, h, kernel=k, ctx=ctx)
                    elif t == "cv":
                        fn = lambda: nwattn.nw_cv(x, y, h, kernel=k, gradient=True, ctx=ctx)
                    else:
                        fn = lambda: nwattn.select_bandwidth(x, y, kernel=k, ctx=ctx)
                series[n] = timed(fn)
                print(f"{n:>9} {name:<20} {t:<7} {series[n]:10.4g} s", flush=True)
        n *= 10

    meta = {
        "cpu": cpu_name(),
        "threads": args.threads,
        "note": "single runs; fit = predictions at the n training "
                "points, local constant; cv = one LOO score with gradient",
        "times_s": {name: {t: {str(k): v for k, v in s.items()} for t, s in d.items()}
                    for name, d in times.items()},
    }
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(meta, f, indent=1)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style = {"reference laplace": ("tab:gray", "s"), "direct laplace": ("tab:orange", "^"),
             "fastsum laplace": ("tab:blue", "o"), "fastsum gaussian": ("tab:green", "D"),
             "statsmodels gaussian": ("tab:red", "x")}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), sharey=True)
    for ax, t in zip(axes, tasks):
        for name, d in times.items():
            s = d[t]
            if not s:
                continue
            ns = sorted(s)
            color, marker = style[name]
            ax.loglog(ns, [s[v] for v in ns], marker=marker, color=color, label=name)
        ax.set_title({"fit": "fit (fitted values at n points)", "cv": "one CV score + gradient",
                      "select": "bandwidth selection"}[t])
        ax.set_xlabel("n")
        ax.grid(True, which="both", alpha=0.3)
        ax.axhline(1.0, color="k", lw=0.5, ls=":")
    axes[0].set_ylabel("seconds")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"1-D kernel regression, {cpu_name()}, {args.threads} threads "
                 "(single runs)", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.json} and {args.png}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Prints the performance tables of docs/performance.md (markdown) from a results JSON.

    /usr/bin/python3 benchmarks/report.py benchmarks/results/results.json

Two tables: the issue's targets with the ratio measured for each, and the main results
(median times of every implementation, one row per problem and thread count).
"""
import argparse
import json


def find(results, **match):
    for r in results:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def ms(r):
    if r is None:
        return "–"
    v = 1e3 * r["median_s"]
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.3g}"


def both(x_med, x_min, digits):
    """'median-based (min-based)': on a shared machine noise only ever adds time, so the
    ratio of the fastest runs is shown next to the ratio of the medians."""
    return f"{x_med:.{digits}f} ({x_min:.{digits}f})"


def targets(results):
    rows = []

    def ratio(a, b):
        return b["median_s"] / a["median_s"] if a and b else None

    def ratio_min(a, b):
        return b["min_s"] / a["min_s"] if a and b else None

    naive = find(results, workload="nw1d", n=16384, impl="naive")
    for t, goal in ((1, 10), (2, 18)):
        fused = find(results, workload="nw1d", n=16384, impl="fused", threads=t)
        r = ratio(fused, naive)
        per_core = fused["rate"] / t if fused else None
        rows.append((f"1-D NW, m = n = 16384, {t} thread{'s' * (t > 1)}: × naive loop (1 thread)",
                     f">= {goal}", both(r, ratio_min(fused, naive), 1) if r else "–",
                     f"{per_core:.2f} G evals/s per core" if per_core else ""))
    for t in (1, 2):
        ceiling = find(results, workload="sdpa", n=4096, causal=False, impl="ceiling", threads=t)
        best = min((r for r in results if r.get("workload") == "sdpa" and r.get("n") == 4096
                    and r.get("causal") is False and r.get("threads") == t
                    and r["impl"] in ("fused", "blas")), key=lambda r: r["median_s"],
                   default=None)
        rows.append((f"SDPA d = 64, m = n = 4096, {t} thread{'s' * (t > 1)}: rate / sgemm ceiling",
                     ">= 0.90",
                     both(ratio(best, ceiling), ratio_min(best, ceiling), 2)
                     if best and ceiling else "–",
                     f"{best['impl']} {best['rate']:.0f} GFLOP/s, ceiling "
                     f"{ceiling['rate']:.0f}" if best and ceiling else ""))
    mem = find(results, workload="memory")
    if mem:
        rows.append((f"fused, m = n = {mem['n']}, d = 64: peak RSS beyond inputs and outputs",
                     "<= 64 MiB", f"{mem['beyond_io_mib']:.1f} MiB",
                     f"peak {mem['peak_rss_mib']:.1f} MiB, {mem['threads']} threads, "
                     f"{mem['median_s']:.1f} s"))
    for t in (1, 2):
        ours = find(results, workload="bmm", shape="d2l", impl="nwattn", threads=t)
        sgemv = find(results, workload="bmm", shape="d2l", impl="sgemv-pass", threads=t)
        loop = find(results, workload="bmm", shape="d2l", impl="sgemm-loop", threads=t)
        r = ratio(ours, sgemv)
        rows.append((f"d2l bmm (1000,1,999)x(1000,999,1), {t} thread{'s' * (t > 1)}: "
                     "sgemv pass time / ours", ">= 1",
                     both(r, ratio_min(ours, sgemv), 2) if r else "–",
                     f"a loop of sgemm calls takes {loop['median_s'] / sgemv['median_s']:.1f}× "
                     "the sgemv pass" if loop and sgemv else ""))
    for t in (1, 2):
        ours = find(results, workload="bmm", shape="cubes", impl="nwattn", threads=t)
        omp = find(results, workload="bmm", shape="cubes", impl="openmp", threads=t)
        r = ratio(ours, omp)
        rows.append((f"1024 × 64³, {t} thread{'s' * (t > 1)}: OpenMP loop time / ours", ">= 1",
                     both(r, ratio_min(ours, omp), 2) if r else "–",
                     f"{ours['rate']:.0f} vs {omp['rate']:.0f} GFLOP/s" if ours and omp else ""))
    sm = find(results, workload="bandwidth", impl="statsmodels", n=1000)
    for t in (2, 1):  # statsmodels runs on one core whatever T is: timed once
        ours = find(results, workload="bandwidth", impl="nwattn", n=1000, threads=t)
        rows.append((f"bandwidth selection, n = 1000, {t} thread{'s' * (t > 1)}: "
                     "statsmodels time / ours", ">= 200",
                     both(ratio(ours, sm), ratio_min(ours, sm), 0) if ours and sm else "–",
                     f"statsmodels {sm['median_s']:.2f} s, ours {1e3 * ours['median_s']:.1f} ms"
                     if ours and sm else ""))
    if ours and sm:
        rel = abs(ours["bandwidth"] - sm["bandwidth"]) / sm["bandwidth"]
        rows.append(("bandwidth selection, n = 1000: the same bandwidth", "within 1 %",
                     f"{100 * rel:.3f} %",
                     f"h = {ours['bandwidth']:.6g} (ours), {sm['bandwidth']:.6g} (statsmodels)"))
    big = find(results, workload="bandwidth", impl="nwattn", n=10000, threads=1)
    if big:
        rows.append(("bandwidth selection, n = 10000, 1 thread: time",
                     "well under statsmodels' n = 1000",
                     f"{big['median_s']:.2f} s",
                     f"statsmodels n = 1000: {sm['median_s']:.2f} s" if sm else ""))
    print("| target | goal | measured: medians (fastest runs) | notes |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def results_table(results):
    impls = ["naive", "numpy", "torch", "statsmodels", "ceiling", "reference", "blas", "fused",
             "sgemv-pass", "sgemm-loop", "openmp", "nwattn", "fused-blas-T"]
    problems = []
    for r in results:
        if r["workload"] == "memory":
            continue
        k = (r["workload"], tuple((p, r[p]) for p in ("shape", "m", "n", "d", "causal", "batch",
                                                         "t", "d_model", "heads") if p in r),
             r["threads"])
        if k not in problems:
            problems.append(k)
    present = [i for i in impls if any(r["impl"] == i for r in results)]
    print("| workload | problem | T | " + " | ".join(present) + " | unit of best |")
    print("| --- | --- | ---: | " + " | ".join("---:" for _ in present) + " | --- |")
    for workload, params, t in problems:
        match = dict(params)
        cells, best = [], None
        for impl in present:
            r = find(results, workload=workload, impl=impl, threads=t, **match)
            if r is None and impl == "naive":
                r = find(results, workload=workload, impl=impl, **match)
            cells.append(ms(r))
            if r and impl in ("blas", "fused", "nwattn") and (best is None or
                                                                r["median_s"] < best["median_s"]):
                best = r
        label = ", ".join(f"{p}={v}" for p, v in params)
        unit = f"{best['rate']:.3g} {best['rate_unit']}" if best else ""
        print(f"| {workload} | {label} | {t} | " + " | ".join(cells) + f" | {unit} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    args = ap.parse_args()
    with open(args.results) as f:
        report = json.load(f)
    results = report["results"]
    m = report.get("machine", {})
    print(f"Machine: {m.get('cpu')}, {m.get('cores_online')} cores, {m.get('blas')}, "
          f"vector kernels {m.get('vector_kernels')}; Python {report.get('python')}; "
          f"{report.get('date')}\n")
    targets(results)
    print("\nMedian milliseconds (T: threads; naive is always one thread):\n")
    results_table(results)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Times numpy (and PyTorch, and statsmodels, where installed) on nwbench's workloads and data.

    /usr/bin/python3 benchmarks/companion.py --nwbench build/benchmarks/nwbench \
        --threads 1,2 --out benchmarks/results/results.json [--quick] [--reps 5]

runs the C suite (nwbench) first, then the same workloads on the same floats in numpy and
PyTorch, one child process per thread count (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and
torch.set_num_threads set before anything starts), and writes one JSON with everything and
the ratios nwattn/numpy and nwattn/torch: all from one run on one machine. Without --nwbench
only the Python side is timed. The data streams are nwbench's (bench_util.c): element i of
stream s is splitmix64(s * 2^32 + i) >> 40, times 2^-24, on [lo, hi), rounded once to float.

The implementations are what people write: numpy broadcasting, a max-shifted softmax and a
matmul (d2l's Nadaraya-Watson); PyTorch's softmax and matmul, torch.bmm, and
nn.MultiheadAttention; statsmodels' KernelReg(bw='cv_ls') for bandwidth selection.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import machine

MASK64 = (1 << 64) - 1


def uniform(seed, count, lo, hi):
    """nwbench's bench_data(seed, count, lo, hi), bit for bit."""
    import numpy as np
    i = np.arange(count, dtype=np.uint64)
    x = (np.uint64(seed) << np.uint64(32)) + i
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    unit = (x >> np.uint64(40)).astype(np.float64) * 2.0**-24
    return (lo + (hi - lo) * unit).astype(np.float32)


def timed(fn, reps, long_run, settle=True):
    """nwbench's protocol (bench_time): a 0.25 s pause so that the previous implementation's
    threads go idle, warm-up calls for 20 ms (at least one), then up to reps runs (fewer when
    long); (runs, median, min, max)."""
    if settle:
        time.sleep(0.25)
    t0 = time.perf_counter()
    fn()
    warm = time.perf_counter() - t0
    if warm > long_run:
        times = [warm]
    else:
        while time.perf_counter() - t0 < 0.02:
            fn()
        budget = int(4 * long_run / warm) if warm > 0 else reps
        times = []
        for _ in range(max(1, min(reps, budget))):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    times.sort()
    k = len(times)
    median = times[k // 2] if k % 2 else 0.5 * (times[k // 2 - 1] + times[k // 2])
    return k, median, times[0], times[-1]


def sizes(quick):
    return {
        "nw1d": [256, 1000] if quick else [1024, 4096, 16384, 65536],
        "nwd_n": 300 if quick else 4096,
        "sdpa": [200] if quick else [1024, 4096, 16384],
        "sdpa_d": 16 if quick else 64,
        "bmm_batch": 50 if quick else 1000,
        "cubes": (16, 16) if quick else (1024, 64),
        "mha": (2, 32, 64, 8) if quick else (8, 512, 512, 8),
        "bandwidth": [100] if quick else [1000],
    }


# Largest m·n a broadcast implementation is allowed (its temporaries take several times
# m·n·4 bytes: 16384^2 is 1 GiB each).
MAX_PAIRS = 16384 * 16384


def child(threads, reps, long_run, quick, out_path):
    import numpy as np
    try:
        import torch
        torch.set_num_threads(threads)
    except ImportError:
        torch = None
    results = []
    sz = sizes(quick)

    def add(workload, params, impl, work, unit, fn):
        runs, med, lo, hi = timed(fn, reps, long_run, settle=not quick)
        row = {"workload": workload, **params, "impl": impl, "threads": threads, "runs": runs,
               "median_s": med, "min_s": lo, "max_s": hi, "rate": work / med / 1e9,
               "rate_unit": unit}
        results.append(row)
        print(f"{workload:6} {json.dumps(params):60} {impl:8} {threads:2} {1e3 * med:10.3f} ms "
              f"{row['rate']:9.2f} {unit}", flush=True)

    def np_softmax(s):
        s = s - s.max(axis=1, keepdims=True)
        e = np.exp(s)
        return e / e.sum(axis=1, keepdims=True)

    # 1. 1-D Gaussian Nadaraya-Watson, d2l's broadcast form.
    for n in sz["nw1d"]:
        if n * n > MAX_PAIRS:
            continue
        q, k, v = uniform(1, n, 0.0, 5.0), uniform(2, n, 0.0, 5.0), uniform(3, n, -1.0, 1.0)
        params = {"m": n, "n": n, "d": 1, "dv": 1}
        add("nw1d", params, "numpy", n * n, "Geval/s",
            lambda: np_softmax(-((q[:, None] - k[None, :]) ** 2) / 2) @ v)
        if torch is not None:
            tq, tk, tv = map(torch.from_numpy, (q, k, v))
            add("nw1d", params, "torch", n * n, "Geval/s",
                lambda: torch.softmax(-((tq[:, None] - tk[None, :]) ** 2) / 2, dim=1) @ tv)

    # 2. d-dimensional Gaussian Nadaraya-Watson, h = sqrt(d) / 2.
    n = sz["nwd_n"]
    for d in (2, 8, 64):
        q = uniform(4, n * d, 0.0, 5.0).reshape(n, d)
        k = uniform(5, n * d, 0.0, 5.0).reshape(n, d)
        v = uniform(6, n, -1.0, 1.0)
        h = np.float32(0.5 * math.sqrt(d))
        params = {"m": n, "n": n, "d": d, "dv": 1}

        def nw_np(q=q, k=k, v=v, h=h):
            d2 = ((q[:, None, :] - k[None, :, :]) ** 2).sum(axis=2)
            return np_softmax(-d2 / (2 * h * h)) @ v
        add("nwd", params, "numpy", n * n, "Geval/s", nw_np)
        if torch is not None:
            tq, tk, tv = map(torch.from_numpy, (q, k, v))
            hh = float(h)
            add("nwd", params, "torch", n * n, "Geval/s",
                lambda tq=tq, tk=tk, tv=tv, hh=hh:
                torch.softmax(-torch.cdist(tq, tk) ** 2 / (2 * hh * hh), dim=1) @ tv)

    # 3. Scaled dot-product attention, with and without a causal mask.
    d = sz["sdpa_d"]
    for n in sz["sdpa"]:
        if n * n > MAX_PAIRS:
            continue
        q = uniform(7, n * d, -1.0, 1.0).reshape(n, d)
        k = uniform(8, n * d, -1.0, 1.0).reshape(n, d)
        v = uniform(9, n * d, -1.0, 1.0).reshape(n, d)
        scale = np.float32(1.0 / math.sqrt(d))
        for causal in (False, True):
            params = {"m": n, "n": n, "d": d, "dv": d, "causal": causal}
            pairs = n * (n + 1) / 2 if causal else n * n
            flops = 4.0 * d * pairs
            upper = np.triu(np.ones((n, n), dtype=bool), 1) if causal else None

            def sdpa_np(q=q, k=k, v=v, upper=upper):
                s = (q @ k.T) * scale
                if upper is not None:
                    s[upper] = -np.inf
                return np_softmax(s) @ v
            add("sdpa", params, "numpy", flops, "GFLOP/s", sdpa_np)
            if torch is not None:
                tq, tk, tv = map(torch.from_numpy, (q, k, v))
                F = torch.nn.functional
                if hasattr(F, "scaled_dot_product_attention"):
                    fn = (lambda tq=tq, tk=tk, tv=tv, c=causal:
                          F.scaled_dot_product_attention(tq[None], tk[None], tv[None],
                                                         is_causal=c))
                else:  # PyTorch 1.x: the same thing spelled out
                    tmask = torch.from_numpy(upper) if causal else None

                    def fn(tq=tq, tk=tk, tv=tv, tmask=tmask):
                        s = (tq @ tk.T) * float(scale)
                        if tmask is not None:
                            s = s.masked_fill(tmask, float("-inf"))
                        return torch.softmax(s, dim=1) @ tv
                with torch.no_grad():
                    add("sdpa", params, "torch", flops, "GFLOP/s", fn)

    # 4. Batched products: d2l's (B, 1, n) x (B, n, 1), and 1024 cubes of 64.
    b = sz["bmm_batch"]
    shapes = [("d2l", b, 1, 1, b - 1), ("cubes", sz["cubes"][0]) + (sz["cubes"][1],) * 3]
    for name, batch, m, nn, kk in shapes:
        a = uniform(13, batch * m * kk, -1.0, 1.0).reshape(batch, m, kk)
        bb = uniform(14, batch * kk * nn, -1.0, 1.0).reshape(batch, kk, nn)
        params = {"shape": name, "batch": batch, "m": m, "n": nn, "k": kk}
        flops = 2.0 * batch * m * nn * kk
        add("bmm", params, "numpy", flops, "GFLOP/s", lambda a=a, bb=bb: np.matmul(a, bb))
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(bb)
            add("bmm", params, "torch", flops, "GFLOP/s", lambda ta=ta, tb=tb: torch.bmm(ta, tb))

    # 6. Multi-head self-attention (nn.MultiheadAttention's definition).
    B, T, E, H = sz["mha"]
    x = uniform(15, B * T * E, -1.0, 1.0).reshape(B, T, E)
    s = 1.0 / math.sqrt(E)
    w = uniform(16, 4 * E * E, -s, s).reshape(4, E, E)
    bias = uniform(17, 4 * E, -0.1, 0.1).reshape(4, E)
    dh = E // H
    flops = 8.0 * B * T * E * E + B * H * 4.0 * T * T * dh
    params = {"batch": B, "t": T, "d_model": E, "heads": H}

    def mha_np():
        q, k, v = (x @ w[i].T + bias[i] for i in range(3))
        split = lambda t: t.reshape(B, T, H, dh).transpose(0, 2, 1, 3)
        q, k, v = split(q), split(k), split(v)
        sc = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(dh))
        sc = np.exp(sc - sc.max(axis=-1, keepdims=True))
        o = (sc / sc.sum(axis=-1, keepdims=True)) @ v
        return o.transpose(0, 2, 1, 3).reshape(B, T, E) @ w[3].T + bias[3]
    add("mha", params, "numpy", flops, "GFLOP/s", mha_np)
    if torch is not None:
        layer = torch.nn.MultiheadAttention(E, H, batch_first=True)
        with torch.no_grad():
            layer.in_proj_weight.copy_(torch.from_numpy(w[:3].reshape(3 * E, E)))
            layer.in_proj_bias.copy_(torch.from_numpy(bias[:3].reshape(3 * E)))
            layer.out_proj.weight.copy_(torch.from_numpy(w[3]))
            layer.out_proj.bias.copy_(torch.from_numpy(bias[3]))
        layer.eval()
        tx = torch.from_numpy(x)

        def mha_torch():
            with torch.no_grad():
                return layer(tx, tx, tx, need_weights=False)[0]
        add("mha", params, "torch", flops, "GFLOP/s", mha_torch)

    # 5. Bandwidth selection by leave-one-out CV: statsmodels' KernelReg(bw='cv_ls'), on
    # nwbench's data: x on [0, 5), y = 2 sin x + x^0.8 + noise on [-0.5, 0.5), in double.
    try:
        from statsmodels.nonparametric.kernel_regression import KernelReg
    except ImportError:
        KernelReg = None
    if KernelReg is not None and threads == 1:  # statsmodels is single-threaded Python
        for n in sz["bandwidth"]:
            xs = uniform(20, n, 0.0, 5.0).astype(np.float64)
            noise = uniform(21, n, -0.5, 0.5).astype(np.float64)
            ys = (2.0 * np.sin(xs) + xs ** 0.8 + noise).astype(np.float32).astype(np.float64)
            chosen = {}

            def select():
                kr = KernelReg(ys, xs, var_type="c", reg_type="lc", bw="cv_ls")
                chosen["bw"] = float(kr.bw[0])
            add("bandwidth", {"n": n, "d": 1}, "statsmodels", n * n, "Geval/s", select)
            results[-1]["bandwidth"] = chosen["bw"]

    with open(out_path, "w") as f:
        json.dump(results, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nwbench", help="path of the nwbench program (run first)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--long-run", type=float, default=5.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", required=True)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, args.reps, args.long_run, args.quick, args.child_out)
        return

    report = {"results": []}
    if args.nwbench:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            path = tmp.name
        cmd = [args.nwbench, "--threads", args.threads, "--reps", str(args.reps),
               "--long-run", str(args.long_run), "--json", path]
        if args.quick:
            cmd.append("--quick")
        subprocess.run(cmd, check=True)
        with open(path) as f:
            report = json.load(f)
        os.unlink(path)
    python = []
    for t in [int(x) for x in args.threads.split(",")]:
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t),
                   MKL_NUM_THREADS=str(t))
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            path = tmp.name
        cmd = [sys.executable, os.path.abspath(__file__), "--out", "-", "--child", str(t),
               "--child-out", path, "--reps", str(args.reps), "--long-run", str(args.long_run)]
        if args.quick:
            cmd.append("--quick")
        subprocess.run(cmd, check=True, env=env)
        with open(path) as f:
            python += json.load(f)
        os.unlink(path)
    report["results"] += python
    report["python"] = python_versions()
    report["comparisons"] = compare(report["results"])
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    for c in report["comparisons"]:
        print(f"{c['workload']:6} {c['key']:48} T={c['threads']} {c['impl']:8} "
              f"{c['vs']:>6}: {c['ratio']:.2f}x")


def python_versions():
    out = {"python": sys.version.split()[0], "cpu": machine.cpu_name(), **machine.openblas()}
    for name in ("numpy", "torch", "statsmodels"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = None
    return out


KEYS = ("m", "n", "d", "dv", "causal", "shape", "batch", "k", "t", "d_model", "heads")


def key(row):
    keys = ("n", "d") if row["workload"] == "bandwidth" else KEYS
    return ",".join(f"{k}={row[k]}" for k in keys if k in row)


def compare(rows):
    """nwattn's best time (fused, blas or nwattn) against numpy and torch, per problem."""
    out = []
    by = {}
    for r in rows:
        by.setdefault((r["workload"], key(r), r["threads"]), {})[r["impl"]] = r
    for (workload, k, threads), impls in sorted(by.items()):
        if workload == "bandwidth" and threads != 1:
            continue
        ours = [impls[i] for i in ("fused", "blas", "nwattn") if i in impls]
        if not ours:
            continue
        best = min(ours, key=lambda r: r["median_s"])
        for other in ("numpy", "torch", "statsmodels"):
            if other in impls:
                out.append({"workload": workload, "key": k, "threads": threads,
                            "impl": best["impl"], "vs": other,
                            "ratio": impls[other]["median_s"] / best["median_s"]})
    return out


if __name__ == "__main__":
    main()

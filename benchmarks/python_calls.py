"""Per-call time of the Python binding's public functions at the seeds' sizes (d2l's 50 × 50
Gaussian pooling with h = 1, seed 1's 200 queries × 80 points with h = 0.5), against numpy and,
where it is installed, PyTorch doing the same, and against the bare C call (call_floor).

Every implementation of a case is timed in each round, one after the other (interleaved), so
that the ratios compare times taken under the same load; the reported time is the median over
the rounds of the best of each round's batches, each ratio the median of the per-round ratios.
`compiled` is the binding with its compiled fast path, `pure` the pure-Python fallback (both in
this process), `c` the bare C call (call_floor.c, loaded into this process and timed in the
same alternation). Everything runs on one thread: OpenBLAS (shared by numpy and libnwattn in
this process) is set to one thread unless OPENBLAS_NUM_THREADS says otherwise, torch too.
Benchmarks are not tests: nothing here asserts a time.

usage: NWATTN_LIBRARY=build/src/libnwattn.so.0 PYTHONPATH=python /usr/bin/python3 \
         benchmarks/python_calls.py --floor build/benchmarks/libcall_floor.so [--rounds 9] \
         [--json F] [--quick]
"""
import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS

import numpy as np

import machine
import nwattn
from nwattn import _core, _regression

try:
    from nwattn import _fastpath
except ImportError:  # a checkout from before the compiled path: measure what it has
    _fastpath = None

try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None


def f32(rng, *shape):
    return (5 * rng.random(shape)).astype(np.float32)


def np_softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_gauss_scores(q, k, h):
    return -((q - k.T) ** 2) / (2 * h * h)


def np_diagnostics(w):
    p = w / w.sum(axis=1, keepdims=True)
    return -(p * np.log(p)).sum(axis=1), 1 / (p * p).sum(axis=1)


def np_loo_cv(x, y, h):
    s = np_gauss_scores(x[:, None], x[:, None], h)
    np.fill_diagonal(s, -np.inf)
    return float(np.mean((y - np_softmax(s) @ y) ** 2))


def np_positional_encoding(t, d):
    p = np.arange(t, dtype=np.float32)[:, None] / np.power(
        10000, np.arange(0, d, 2, dtype=np.float32) / d)
    out = np.empty((t, d), np.float32)
    out[:, 0::2], out[:, 1::2] = np.sin(p), np.cos(p)
    return out


def np_self_attention(x, w):
    q, k, v = x @ w.T, x @ w.T, x @ w.T
    return np_softmax(q @ k.T / np.sqrt(q.shape[1])) @ v


def cases(rng):
    """{name: {implementation: callable}}; the seeds' sizes."""
    out = {}
    for label, m, n, h in (("d2l 50x50", 50, 50, 1.0), ("seed1 200x80", 200, 80, 0.5)):
        out.update(seed_cases(rng, label, m, n, h))
    return out | other_cases(rng)


def seed_cases(rng, label, m, n, h):
    """The calls at one seed's size (a function of its own, so the lambdas bind these arrays)."""
    q, k, v = f32(rng, m, 1), f32(rng, n, 1), f32(rng, n, 1)
    s, w = f32(rng, m, n), np_softmax(f32(rng, m, n)).astype(np.float32)
    xq, x, y = q[:, 0].copy(), k[:, 0].copy(), v[:, 0].copy()
    ctx = nwattn.Context()
    c = {
        f"pool {label}": {
            "nwattn": lambda: nwattn.pool(q, k, v, score="gaussian", bandwidth=h),
            "nwattn ctx": lambda: nwattn.pool(q, k, v, score="gaussian", bandwidth=h,
                                              ctx=ctx),
            "numpy": lambda: np_softmax(np_gauss_scores(q, k, h)) @ v},
        f"softmax {label}": {"nwattn": lambda: nwattn.softmax(s),
                             "numpy": lambda: np_softmax(s)},
        f"bmm {label}": {"nwattn": lambda: nwattn.bmm(w, v), "numpy": lambda: w @ v},
        f"scores {label}": {
            "nwattn": lambda: nwattn.scores(q, k, score="gaussian", bandwidth=h),
            "numpy": lambda: np_gauss_scores(q, k, h)},
        f"nw_predict {label}": {
            "nwattn": lambda: nwattn.nw_predict(xq, x, y, h),
            "numpy": lambda: np_softmax(np_gauss_scores(q, k, h)) @ y},
        f"average_pool {label}": {"nwattn": lambda: nwattn.average_pool(v, m),
                                  "numpy": lambda: np.repeat(v.mean(0, keepdims=True), m, 0)},
        f"weights_diagnostics {label}": {"nwattn": lambda: nwattn.weights_diagnostics(w),
                                         "numpy": lambda: np_diagnostics(w)},
        f"wmodel_evaluate {label}": {"nwattn": lambda: nwattn.wmodel_evaluate(1.0, xq, x, y),
                                     "numpy": lambda: np_softmax(np_gauss_scores(
                                         q, k, 1.0)) @ y},
    }
    if torch is not None:
        tq, tk, tv, ts, tw = (torch.from_numpy(a) for a in (q, k, v, s, w))
        c[f"pool {label}"]["torch"] = lambda: torch.softmax(
            -(tq - tk.T) ** 2 / (2 * h * h), -1) @ tv
        c[f"softmax {label}"]["torch"] = lambda: torch.softmax(ts, -1)
        c[f"bmm {label}"]["torch"] = lambda: tw @ tv
        c[f"scores {label}"]["torch"] = lambda: -(tq - tk.T) ** 2 / (2 * h * h)
        c[f"nw_predict {label}"]["torch"] = c[f"pool {label}"]["torch"]
    return c


def other_cases(rng):
    x80, y80 = f32(rng, 80), f32(rng, 80)
    x3 = f32(rng, 50, 16)
    w16 = f32(rng, 16, 16) / 16
    return {
        "nw_cv seed1 n=80": {"nwattn": lambda: nwattn.nw_cv(x80, y80, 0.5),
                             "numpy": lambda: np_loo_cv(x80, y80, 0.5)},
        "bandwidth_rule_of_thumb n=80": {"nwattn": lambda: nwattn.bandwidth_rule_of_thumb(x80)},
        "select_bandwidth seed1 n=80": {"nwattn": lambda: nwattn.select_bandwidth(x80, y80)},
        "wmodel_train d2l n=50 1 epoch": {"nwattn": lambda: nwattn.wmodel_train(
            x80[:50], y80[:50], 1.0, learning_rate=0.5, epochs=1)},
        "positional_encoding 50x16": {"nwattn": lambda: nwattn.positional_encoding(50, 16),
                                      "numpy": lambda: np_positional_encoding(50, 16)},
        "attention self 50x16": {"nwattn": lambda: nwattn.attention(x3, w_q=w16, w_k=w16,
                                                                    w_v=w16),
                                 "numpy": lambda: np_self_attention(x3, w16)},
        "pool_partial+finish_state 50x50": {
            "nwattn": lambda: nwattn.finish_state(nwattn.pool_partial(
                x3[:, :1], x3[:, 1:2], x3[:, 2:3], score="gaussian")),
            "numpy": lambda: np_softmax(np_gauss_scores(x3[:, :1], x3[:, 1:2], 1.0))
            @ x3[:, 2:3]},
        "dataset_generate d2l n=50": {"nwattn": lambda: nwattn.dataset_generate(
            "d2l", 50, nwattn.Rng(1))},
        "dataset_truth d2l n=50": {"nwattn": lambda: nwattn.dataset_truth("d2l", x80[:50])},
    }


COMPILED = ("pool", "softmax", "bmm", "scores", "nw_predict")


def pure(fn):
    """fn on the pure-Python path (the compiled one switched off for the call)."""
    def call():
        saved = getattr(_core, "_fast", None), getattr(_regression, "_fast", None)
        _core._fast = _regression._fast = None
        try:
            return fn()
        finally:
            _core._fast, _regression._fast = saved
    return call


def best_per_call(impls, seconds, reps):
    """{implementation: best seconds per call}: the implementations alternate batch by batch
    (about `seconds` each), so a change of load hits them all alike."""
    number = {i: max(1, int(seconds / max(timeit.timeit(fn, number=3) / 3, 1e-7)))
              for i, fn in impls.items()}
    best = {i: float("inf") for i in impls}
    for _ in range(reps):
        for i, fn in impls.items():
            best[i] = min(best[i], timeit.timeit(fn, number=number[i]) / number[i])
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--floor", help="libcall_floor.so (the bare C times)")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true",
                    help="one round of tiny batches: CTest's smoke run, times nothing useful")
    args = ap.parse_args()
    seconds, reps = (0.0002, 1) if args.quick else (0.003, 5)
    if args.quick:
        args.rounds = 1

    table = cases(np.random.default_rng(1))
    if args.floor:
        floor = ctypes.CDLL(os.path.abspath(args.floor))
        floor.call_floor_seconds.restype = ctypes.c_double
        floor.call_floor_seconds.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
        for name, impls in table.items():
            if floor.call_floor_seconds(name.encode(), 1) >= 0:
                # one ctypes call per batch of 64: its cost (~1 us) is spread over them
                impls["c"] = (lambda key: lambda: floor.call_floor_seconds(key, 64))(
                    name.encode())
    for name, impls in table.items():  # the pure path of the functions that have both
        for impl in [i for i in impls if i.startswith("nwattn")]:
            if _fastpath and _fastpath.ext is not None and name.split()[0] in COMPILED:
                impls[impl.replace("nwattn", "pure")] = pure(impls[impl])
    for impls in table.values():  # warm up (default contexts, workspaces)
        for fn in impls.values():
            fn()
    times = {name: {impl: [] for impl in impls} for name, impls in table.items()}
    for r in range(args.rounds):
        for name, impls in table.items():
            for impl, best in best_per_call(impls, seconds, reps).items():
                times[name][impl].append(best / 64 if impl == "c" else best)
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)

    rows = []
    for name, per in times.items():
        row = {"case": name, "us": {i: 1e6 * statistics.median(t) for i, t in per.items()}}
        if "c" in per:
            for impl in ("nwattn", "nwattn ctx", "pure"):
                if impl in per:  # the overhead above the bare C call: per round, then median
                    row[f"{impl} - c (us)"] = statistics.median(
                        1e6 * (t - c) for t, c in zip(per[impl], per["c"]))
        for base in ("numpy", "torch"):
            if base in per:
                row[f"nwattn / {base}"] = statistics.median(
                    a / b for a, b in zip(per["nwattn"], per[base]))
        if "nwattn ctx" in per:
            row["ctx / default"] = statistics.median(
                a / b for a, b in zip(per["nwattn ctx"], per["nwattn"]))
        if "pure" in per:
            row["pure / compiled"] = statistics.median(
                a / b for a, b in zip(per["pure"], per["nwattn"]))
        rows.append(row)

    meta = {"cpu": machine.cpu_name(), **machine.openblas(),
            "python": platform.python_version(), "numpy": np.__version__,
            "torch": torch.__version__ if torch else None, "nwattn": nwattn.version(),
            "compiled_path": _fastpath and _fastpath.path, "rounds": args.rounds,
            "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "load_average_after": os.getloadavg(),
            "protocol": "interleaved rounds; median over rounds of the best per-call time of "
                        "each round; ratios: median of per-round ratios"}
    for row in rows:
        us = "  ".join(f"{k} {v:8.2f}" for k, v in row["us"].items())
        extra = "  ".join(f"{k} {v:.2f}" for k, v in row.items() if k not in ("case", "us"))
        print(f"{row['case']:34s} {us}  | {extra}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

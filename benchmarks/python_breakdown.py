"""Where the time of one pure-Python call goes: each stage of nwattn.pool and nwattn.nw_predict
(argument handling, conversions, checks, broadcasting, output allocation, the ctypes call)
timed on its own with the arguments it gets in a real call, at d2l's 50 × 50 Gaussian pooling
(h = 1) and seed 1's 200 × 80 (h = 0.5), next to the whole call on each path and the bare C
call. It uses the binding's internals (stage by stage), so it follows python/nwattn/; run it
on an older checkout's package to compare. Stages run alternately, round after round; the
median of the rounds' best is reported. Benchmarks are not tests.

usage: NWATTN_LIBRARY=build/src/libnwattn.so.0 PYTHONPATH=python /usr/bin/python3 \
         benchmarks/python_breakdown.py [--floor build/benchmarks/libcall_floor.so] [--json F]
"""
import argparse
import ctypes
import json
import os
import statistics
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import nwattn  # noqa: E402
from nwattn import _arrays as A, _core, _regression  # noqa: E402
from nwattn._capi import C  # noqa: E402
from python_calls import pure  # noqa: E402  (this directory: the pure-path switch)

try:
    from nwattn import _fastpath  # noqa: E402
except ImportError:  # a checkout from before the compiled path
    _fastpath = None


def handle(ctx):
    if hasattr(nwattn._context, "handle_of"):
        return nwattn._context.handle_of(ctx)
    return nwattn._context.resolve(ctx).handle


def pool_stages(q, k, v, h):
    """[(stage, callable)] for nwattn.pool(q, k, v, score="gaussian", bandwidth=h)."""
    m, d, n, dv = q.shape[0], q.shape[1], k.shape[0], v.shape[1]
    batch = ()
    sc, _ = _core.make_score("gaussian", None, h, None, d)
    qo, ko, vo = (A.input_operand(x, batch, "x") for x in (q, k, v))
    oo = A.output_operand(None, (m, dv), "out")
    hd = handle(None)
    args = (hd, ctypes.byref(sc), None, 1, m, n, d, dv, *qo.args, *ko.args, *vo.args, *oo.args,
            None, 0, 0, None, 0)

    def signature(q, k, v, *, score="dot", scale=None, bandwidth=None, bandwidths=None,
                  valid_lens=None, causal=False, leave_one_out=False, additive=None, keep=None,
                  out=None, weights=None, lse=None, ctx=None):
        return None

    return [
        ("keyword call of a Python function", lambda: signature(q, k, v, score="gaussian",
                                                                  bandwidth=h)),
        ("context (default)", lambda: handle(None)),
        ("float_input x3 (dtype, ndim)", lambda: (A.float_input(q, "q"), A.float_input(k, "k"),
                                                  A.float_input(v, "v"))),
        ("mask keywords (_MaskArgs, none given)",
         lambda: _core._MaskArgs(m, n, None, False, False, None, None).build(batch)),
        ("batch broadcast_batch", lambda: A.broadcast_batch([("q", ()), ("k", ()), ("v", ())])),
        ("score struct (make_score)", lambda: _core.make_score("gaussian", None, h, None, d)),
        ("input_operand x3 (layout, no copy)",
         lambda: [A.input_operand(x, batch, "x") for x in (q, k, v)]),
        ("output allocation (output_operand)", lambda: A.output_operand(None, (m, dv), "out")),
        ("pointers (.ctypes.data) x4", lambda: (qo.args, ko.args, vo.args, oo.args)),
        ("ctypes call incl. C (prebuilt args)", lambda: C.nwattn_pool(*args)),
    ]


def predict_stages(xq, x, y, h):
    m, n = xq.shape[0], x.shape[0]
    model = _regression._model("gaussian", "constant", "nearest")
    qo, _, _, _ = _regression._points(xq, "xq")
    xo, _, _, _ = _regression._points(x, "x")
    yo, _, _, _ = _regression._points(y, "y")
    bw = _regression._bandwidths(h, 1)
    oo = A.output_operand(None, (m, 1), "out")
    hd = handle(None)
    args = (hd, ctypes.byref(model), bw.ctypes.data, m, n, 1, 1, qo.ptr, qo.ld, xo.ptr, xo.ld,
            yo.ptr, yo.ld, oo.ptr, oo.ld, None, 0, None, None)
    return [
        ("context (default)", lambda: handle(None)),
        ("points x3 (_points: convert, reshape, operand)",
         lambda: [_regression._points(a, "a") for a in (xq, x, y)]),
        ("bandwidths array (_bandwidths)", lambda: _regression._bandwidths(h, 1)),
        ("model struct (3 enums)", lambda: _regression._model("gaussian", "constant",
                                                              "nearest")),
        ("output allocation (output_operand)", lambda: A.output_operand(None, (m, 1), "out")),
        ("ctypes call incl. C (prebuilt args)", lambda: C.nwattn_nw_predict(*args)),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--floor")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    floor = None
    if args.floor:
        floor = ctypes.CDLL(os.path.abspath(args.floor))
        floor.call_floor_seconds.restype = ctypes.c_double
        floor.call_floor_seconds.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
    rng = np.random.default_rng(1)
    report = {}
    for label, m, n, h in (("d2l 50x50", 50, 50, 1.0), ("seed1 200x80", 200, 80, 0.5)):
        q, k, v = ((5 * rng.random(s)).astype(np.float32) for s in ((m, 1), (n, 1), (n, 1)))
        for fname, stages, whole in (
                ("pool", pool_stages(q, k, v, h),
                 lambda: nwattn.pool(q, k, v, score="gaussian", bandwidth=h)),
                ("nw_predict", predict_stages(q[:, 0], k[:, 0], v[:, 0], h),
                 lambda: nwattn.nw_predict(q[:, 0], k[:, 0], v[:, 0], h))):
            case = f"{fname} {label}"
            stages = list(stages) + [("whole call, pure Python path", pure(whole))]
            if _fastpath is not None and _fastpath.ext is not None:
                stages.append(("whole call, compiled path", whole))
            if floor is not None:
                key = case.encode()
                stages.append(("bare C call (call_floor)",
                               lambda: floor.call_floor_seconds(key, 64)))
            best = {s: [] for s, _ in stages}
            for _ in range(args.rounds):
                for s, fn in stages:
                    fn()
                    number = max(1, int(0.002 / max(timeit.timeit(fn, number=3) / 3, 1e-7)))
                    t = min(timeit.repeat(fn, number=number, repeat=3)) / number
                    best[s].append(t / 64 if s.startswith("bare C") else t)
            report[case] = {s: 1e6 * statistics.median(t) for s, t in best.items()}
            print(f"\n{case}  (us per call)")
            for s, us in report[case].items():
                print(f"  {s:48s} {us:8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()

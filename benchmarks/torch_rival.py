"""libnwattn's backward passes against PyTorch's autograd, the targets of issues 12 and 18:

- bwd4096: the fused backward (nwattn.pool_backward, FUSED backend), d = 64, m = n = 4096,
  against torch.autograd.grad of the spelled-out SDPA (softmax(Q K^T / 8) V in float32);
  also forward + backward (nwattn.autograd.pool against the same torch graph built and run);
- mha: B = 8, T = 512, E = 512, 8 heads, forward + backward of nwattn.autograd.attention
  (with w_o and the four biases) against nn.MultiheadAttention(batch_first=True);
- d2l50: forward + backward of d2l's 50 x 50 Gaussian pooling with a learnable w
  (nwattn.autograd.pool, h = 1/|w|) against d2l's own torch code.

Each round times every implementation of a case one after the other (interleaved); a case's
time is the median over rounds of each round's best call, its ratio the median of the
per-round ratios torch / nwattn (> 1: the library is faster). One process measures one thread
count and one OpenBLAS core type, both fixed before OpenBLAS loads; without --threads the
script runs itself once per (core type, threads) pair, OPENBLAS_CORETYPE unset (OpenBLAS's own
detection) and, where the CPU has AVX-512, SkylakeX, threads 1 and 2, and writes them all
into one JSON. PyTorch 1.13 from Debian does its float32 matmuls through the system
libblas.so.3, here OpenBLAS too, so the core type applies to both sides. Benchmarks are not
tests: nothing here asserts a time.

usage: NWATTN_LIBRARY=build/src/libnwattn.so.0 PYTHONPATH=python /usr/bin/python3 \
         benchmarks/torch_rival.py [--rounds 5] [--json benchmarks/results/torch_rival.json]
       (--threads T: one configuration in this process; --quick: small sizes, a smoke run;
        --case d2l50: only the cases whose name starts so)
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import machine


def _best(fn, calls):
    best = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _cases(threads, quick):
    import torch

    import nwattn
    ag = nwattn.autograd
    torch.manual_seed(0)
    fused = nwattn.Context("fused", threads=threads)
    auto = nwattn.Context("auto", threads=threads)
    cases = {}

    # bwd4096 -------------------------------------------------------------------------------
    m, d = (256, 16) if quick else (4096, 64)
    q, k, v, do = (torch.randn(m, d) for _ in range(4))
    qn, kn, vn, don = (t.numpy() for t in (q, k, v, do))
    o, lse = nwattn.pool(qn, kn, vn, lse=True, ctx=fused)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    graph = torch.softmax(leaves[0] @ leaves[1].T / d ** 0.5, dim=-1) @ leaves[2]

    def torch_bwd():
        torch.autograd.grad(graph, leaves, do, retain_graph=True)

    def torch_fwd_bwd():
        out = torch.softmax(leaves[0] @ leaves[1].T / d ** 0.5, dim=-1) @ leaves[2]
        torch.autograd.grad(out, leaves, do)

    def nwattn_fwd_bwd():
        out = ag.pool(*leaves, ctx=fused)
        torch.autograd.grad(out, leaves, do)

    flops = 2 * m * m * (3 * d + 2 * d)  # the five products of the backward
    cases["bwd4096 backward"] = ({
        "nwattn": lambda: nwattn.pool_backward(qn, kn, vn, o, lse, don, ctx=fused),
        "torch": torch_bwd}, 1, flops)
    cases["bwd4096 forward+backward"] = ({"nwattn": nwattn_fwd_bwd, "torch": torch_fwd_bwd},
                                         1, None)

    # mha -----------------------------------------------------------------------------------
    b, t, e, heads = (2, 32, 32, 4) if quick else (8, 512, 512, 8)
    mha = torch.nn.MultiheadAttention(e, heads, batch_first=True)
    x = torch.randn(b, t, e, requires_grad=True)
    dy = torch.randn(b, t, e)
    w_q, w_k, w_v = (p.detach().clone().requires_grad_(True)
                     for p in mha.in_proj_weight.chunk(3))
    b_q, b_k, b_v = (p.detach().clone().requires_grad_(True) for p in mha.in_proj_bias.chunk(3))
    w_o = mha.out_proj.weight.detach().clone().requires_grad_(True)
    b_o = mha.out_proj.bias.detach().clone().requires_grad_(True)
    params = [x, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o]

    def torch_mha():
        y, _ = mha(x, x, x, need_weights=False)
        torch.autograd.grad(y, [x, *mha.parameters()], dy)

    def nwattn_mha():
        y = ag.attention(x, w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v,
                         b_o=b_o, heads=heads, ctx=auto)
        torch.autograd.grad(y, params, dy)

    cases["mha forward+backward"] = ({"nwattn": nwattn_mha, "torch": torch_mha}, 1, None)

    # d2l50 ---------------------------------------------------------------------------------
    n = 50
    x_train, _ = torch.sort(torch.rand(n) * 5)
    y_train = 2 * torch.sin(x_train) + x_train ** 0.8
    keys, values = x_train.repeat((n, 1)), y_train.repeat((n, 1))
    w = torch.tensor([1.3], requires_grad=True)

    def torch_d2l():
        queries = x_train.repeat_interleave(n).reshape((-1, n))
        att = torch.softmax(-((queries - keys) * w) ** 2 / 2, dim=1)
        out = torch.bmm(att.unsqueeze(1), values.unsqueeze(-1)).reshape(-1)
        out.sum().backward()

    xq, xk, yv = x_train.reshape(n, 1), x_train.reshape(n, 1), y_train.reshape(n, 1)

    def nwattn_d2l():
        ag.pool(xq, xk, yv, 1 / w.abs(), score="gaussian", ctx=auto).sum().backward()

    cases["d2l50 forward+backward"] = ({"nwattn": nwattn_d2l, "torch": torch_d2l},
                                       5 if quick else 200, None)
    return cases


def measure(threads, rounds, quick=False, case=""):
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    blas = machine.openblas()
    core = blas["blas_core"]
    rows = []
    for name, (impls, calls, flops) in _cases(threads, quick).items():
        if not name.startswith(case):
            continue
        for fn in impls.values():  # warm up (and allocate) before the first round
            fn()
        per = {impl: [] for impl in impls}
        for _ in range(rounds):
            for impl, fn in impls.items():
                per[impl].append(_best(fn, calls) if calls == 1 else
                                 _best(lambda: [fn() for _ in range(calls)], 3) / calls)
        row = {"case": name, "threads": threads, "blas_core": core,
               "ms": {i: 1e3 * statistics.median(ts) for i, ts in per.items()},
               "torch / nwattn": statistics.median(
                   a / b for a, b in zip(per["torch"], per["nwattn"]))}
        if flops:
            row["nwattn GFLOP/s (five products)"] = flops / statistics.median(per["nwattn"]) / 1e9
        rows.append(row)
        print(f"{name:26s} T={threads} {core:10s} " + "  ".join(
            f"{i} {v:9.3f} ms" for i, v in row["ms"].items()) +
            f"  torch/nwattn {row['torch / nwattn']:.2f}", flush=True)
    return {"openblas": blas["blas"], "blas_core": core, "rows": rows,
            "load_average_after": os.getloadavg(),
            "torch": torch.__version__, "numpy": np.__version__}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, help="one configuration, in this process")
    p.add_argument("--quick", action="store_true",
                   help="small sizes, one round (a smoke run: the script still works)")
    p.add_argument("--case", default="", help="only the cases whose name starts so")
    p.add_argument("--json")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.threads = 1, args.threads or 1
    if args.threads:
        result = measure(args.threads, args.rounds, args.quick, args.case)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f)
        return
    runs = []
    # SkylakeX's kernels are AVX-512: on a CPU without it OpenBLAS dies with SIGILL (Zen 3).
    for coretype in (None, "SkylakeX") if machine.has_avx512() else (None,):
        for threads in (1, 2):
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
                       OMP_NUM_THREADS=str(threads))
            env.pop("OPENBLAS_CORETYPE", None)
            if coretype:
                env["OPENBLAS_CORETYPE"] = coretype
            out = f"/tmp/torch_rival.{os.getpid()}.json"
            subprocess.run([sys.executable, __file__, "--threads", str(threads), "--rounds",
                            str(args.rounds), "--case", args.case, "--json", out], env=env,
                           check=True)
            with open(out) as f:
                run = json.load(f)
            os.unlink(out)
            run["OPENBLAS_CORETYPE"] = coretype
            runs.append(run)
    import nwattn
    report = {"meta": {"cpu": machine.cpu_name(), "cores_online": os.cpu_count(),
                       "nwattn": nwattn.version(),
                       "python": platform.python_version(), "rounds": args.rounds,
                       "protocol": "interleaved rounds; median over rounds of each round's "
                                   "best call; ratio: median of per-round torch/nwattn"},
              "runs": runs}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()

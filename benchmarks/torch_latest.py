"""libnwattn against the newest PyTorch's CPU kernels (issue 16's rival, and issue 12's
backward target): F.scaled_dot_product_attention (its CPU flash-attention kernel) forward
and backward at d = 64, m = n = 4096 and 16384, with and without a causal mask;
nn.MultiheadAttention (B = 8, T = 512, E = 512, 8 heads) forward, and forward + backward;
the 1-D Gaussian Nadaraya-Watson at m = n = 16384 as people write it in torch
(softmax(-cdist(q, k)^2 / 2h^2) @ v), and by KeOps where pykeops imports (its CPU code;
`pip install pykeops` in the same venv). libnwattn runs its FUSED backend (nwattn.pool,
pool_backward) and nwattn.attention / nwattn.autograd.attention.

PyPI's torch is large, so it stays out of CI and the quick start: install it in a virtual
environment (Debian's python refuses system-wide pip installs), with numpy beside it:
    python3 -m venv ~/venv-torch && ~/venv-torch/bin/pip install torch numpy
    NWATTN_LIBRARY=build/src/libnwattn.so.0 PYTHONPATH=python ~/venv-torch/bin/python \
        benchmarks/torch_latest.py --json benchmarks/results/<cpu>/torch_latest.json
On Debian's torch 1.13, which has no scaled_dot_product_attention, the SDPA cases are
skipped. Each thread count (1, 2) runs in its own process with
OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and torch.set_num_threads fixed before anything loads;
implementations alternate round by round; a time is the median over rounds of each round's
best call, a ratio the median of the per-round ratios torch / nwattn (> 1: libnwattn is
faster). Benchmarks are not tests: nothing here asserts a time.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

import machine
from torch_rival import _best  # the same timer: best of `calls` runs

# A venv's numpy 2 cannot load the optional compiled extension built against Debian's numpy
# 1.x; the pure ctypes binding costs microseconds a call, nothing at these sizes.
os.environ.setdefault("NWATTN_EXTENSION", "off")


def _cases(threads, quick, only):
    import numpy as np
    import torch
    import torch.nn.functional as F

    import nwattn
    torch.manual_seed(0)
    fused = nwattn.Context("fused", threads=threads)
    auto = nwattn.Context("auto", threads=threads)
    has_sdpa = hasattr(F, "scaled_dot_product_attention")
    cases = {}
    d = 16 if quick else 64
    for n in ((256,) if quick else (4096, 16384)):
        for causal in (False, True):
            name = f"sdpa {n} {'causal' if causal else 'full'}"
            if not has_sdpa or not name.startswith(only):
                continue
            q, k, v, do = (torch.randn(1, 1, n, d) for _ in range(4))
            qn, kn, vn, don = (t[0, 0].numpy() for t in (q, k, v, do))
            cases[name + " forward"] = ({
                "nwattn": lambda qn=qn, kn=kn, vn=vn, c=causal: nwattn.pool(
                    qn, kn, vn, causal=c, ctx=fused),
                "torch": lambda q=q, k=k, v=v, c=causal: F.scaled_dot_product_attention(
                    q, k, v, is_causal=c)}, 1)
            if n > 4096 and not quick:
                continue  # the backward at 16384^2 takes tens of seconds a call
            o, lse = nwattn.pool(qn, kn, vn, causal=causal, lse=True, ctx=fused)
            leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
            out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
            cases[name + " backward"] = ({
                "nwattn": lambda qn=qn, kn=kn, vn=vn, o=o, lse=lse, don=don, c=causal:
                    nwattn.pool_backward(qn, kn, vn, o, lse, don, causal=c, ctx=fused),
                "torch": lambda out=out, leaves=leaves, do=do: torch.autograd.grad(
                    out, leaves, do, retain_graph=True)}, 1)

    b, t, e, heads = (2, 32, 32, 4) if quick else (8, 512, 512, 8)
    if "mha".startswith(only) or only.startswith("mha"):
        mha = torch.nn.MultiheadAttention(e, heads, batch_first=True)
        x = torch.randn(b, t, e)
        w_q, w_k, w_v = (p.detach() for p in mha.in_proj_weight.chunk(3))
        b_q, b_k, b_v = (p.detach() for p in mha.in_proj_bias.chunk(3))
        w_o, b_o = mha.out_proj.weight.detach(), mha.out_proj.bias.detach()
        xn = x.numpy()
        weights = dict(w_q=w_q.numpy(), w_k=w_k.numpy(), w_v=w_v.numpy(), w_o=w_o.numpy(),
                       b_q=b_q.numpy(), b_k=b_k.numpy(), b_v=b_v.numpy(), b_o=b_o.numpy())

        def torch_mha():
            with torch.no_grad():
                mha(x, x, x, need_weights=False)

        cases["mha forward"] = ({
            "nwattn": lambda: nwattn.attention(xn, heads=heads, ctx=auto, **weights),
            "torch": torch_mha}, 1)
        xg = x.clone().requires_grad_(True)
        dy = torch.randn(b, t, e)
        params = [p.detach().clone().requires_grad_(True)
                  for p in (w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o)]

        def torch_mha_bwd():
            y, _ = mha(xg, xg, xg, need_weights=False)
            torch.autograd.grad(y, [xg, *mha.parameters()], dy)

        def nwattn_mha_bwd():
            y = nwattn.autograd.attention(
                xg, w_q=params[0], w_k=params[1], w_v=params[2], w_o=params[3],
                b_q=params[4], b_k=params[5], b_v=params[6], b_o=params[7], heads=heads,
                ctx=auto)
            torch.autograd.grad(y, [xg, *params], dy)

        cases["mha forward+backward"] = ({"nwattn": nwattn_mha_bwd, "torch": torch_mha_bwd}, 1)

    n = 1024 if quick else 16384
    if "nw1d".startswith(only) or only.startswith("nw1d"):
        h = 1.0
        rng = np.random.default_rng(0)
        qn = rng.uniform(0, 5, (n, 1)).astype(np.float32)
        kn = rng.uniform(0, 5, (n, 1)).astype(np.float32)
        vn = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
        q, k, v = (torch.from_numpy(a) for a in (qn, kn, vn))

        def torch_nw():
            with torch.no_grad():
                torch.softmax(-torch.cdist(q, k) ** 2 / (2 * h * h), dim=1) @ v

        impls = {
            "nwattn": lambda: nwattn.pool(qn, kn, vn, score="gaussian", bandwidth=h, ctx=fused),
            "torch": torch_nw}
        keops = _keops_nw(qn, kn, vn, h)
        if keops is not None:
            impls["keops"] = keops
        cases["nw1d gaussian"] = (impls, 1)
    return cases


def _keops_nw(qn, kn, vn, h):
    """KeOps' symbolic reduction for the same 1-D NW sums (pykeops.numpy, its CPU code: OpenMP
    over rows, OMP_NUM_THREADS), or None where pykeops does not import. Its first call compiles
    the formula (seconds); the warm-up call below pays that."""
    try:
        from pykeops.numpy import LazyTensor
    except ImportError:
        return None
    x_i, y_j, v_j = LazyTensor(qn[:, None, :]), LazyTensor(kn[None, :, :]), LazyTensor(vn[None, :, :])
    scores = -((x_i - y_j) ** 2).sum(-1) / (2 * h * h)
    return lambda: scores.sumsoftmaxweight(v_j, axis=1)


def measure(threads, rounds, quick=False, only=""):
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    blas = machine.openblas()
    rows = []
    for name, (impls, calls) in _cases(threads, quick, only).items():
        for fn in impls.values():  # warm up (and allocate) before the first round
            fn()
        per = {impl: [] for impl in impls}
        for _ in range(rounds):
            for impl, fn in impls.items():
                per[impl].append(_best(fn, calls))
        row = {"case": name, "threads": threads,
               "ms": {i: 1e3 * statistics.median(ts) for i, ts in per.items()}}
        for rival in (i for i in impls if i != "nwattn"):  # "torch / nwattn", "keops / nwattn"
            row[f"{rival} / nwattn"] = statistics.median(
                a / b for a, b in zip(per[rival], per["nwattn"]))
        rows.append(row)
        print(f"{name:30s} T={threads} " + "  ".join(
            f"{i} {v:10.3f} ms" for i, v in row["ms"].items()) + "".join(
            f"  {r.replace(' ', '')} {row[r]:.2f}" for r in row if r.endswith("/ nwattn")),
            flush=True)
    import nwattn
    return {"rows": rows, "openblas": blas["blas"], "blas_core": blas["blas_core"],
            "nwattn_context": nwattn.Context("fused", threads=threads).describe(),
            "torch": torch.__version__, "numpy": np.__version__,
            "load_average_after": os.getloadavg()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, help="one thread count, in this process")
    p.add_argument("--only", default="", help="only the cases whose name starts so")
    p.add_argument("--quick", action="store_true", help="small sizes, one round (smoke run)")
    p.add_argument("--json")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.threads = 1, args.threads or 1
    if args.threads:
        result = measure(args.threads, args.rounds, args.quick, args.only)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f)
        return
    runs = []
    for threads in (1, 2):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        out = f"/tmp/torch_latest.{os.getpid()}.json"
        subprocess.run([sys.executable, __file__, "--threads", str(threads), "--rounds",
                        str(args.rounds), "--only", args.only, "--json", out], env=env,
                       check=True)
        with open(out) as f:
            runs.append(json.load(f))
        os.unlink(out)
    report = {"meta": {"cpu": machine.cpu_name(), "cores_online": os.cpu_count(),
                       "python": platform.python_version(), "rounds": args.rounds,
                       "protocol": "interleaved rounds; median over rounds of each round's "
                                   "best call; ratio: median of per-round torch/nwattn"},
              "runs": runs}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()

"""Where the time of one autograd step of d2l's 50 x 50 Gaussian pooling goes (issue 18's
target, docs/performance.md "Backward passes against PyTorch autograd"): the whole
nwattn.autograd.pool forward + backward, its two library calls alone (nwattn.pool with lse, the
numpy nwattn.pool_backward), and d2l's own PyTorch step, each timed alone, alternating, 7
rounds of the best of 3 batches of 200 calls, medians in µs. One thread. Not a test.

usage: NWATTN_LIBRARY=build/src/libnwattn.so.0 PYTHONPATH=python OPENBLAS_NUM_THREADS=1 \
         /usr/bin/python3 benchmarks/autograd_stages.py
"""
import statistics
import time

import numpy  # noqa: F401  (loads OpenBLAS before torch, as the binding does)
import torch

import nwattn


def main():
    torch.set_num_threads(1)
    ag, c, n = nwattn.autograd, nwattn.Context("auto"), 50
    x = torch.rand(n, 1) * 5
    y = torch.sin(x)
    w = torch.tensor([1.3], requires_grad=True)
    xn, yn = x.numpy(), y.numpy()
    o, lse = nwattn.pool(xn, xn, yn, score="gaussian", bandwidth=1.0, lse=True, ctx=c)
    keys, vals, xt = x.reshape(1, n).repeat((n, 1)), y.reshape(1, n).repeat((n, 1)), x.reshape(-1)

    def torch_d2l():
        q = xt.repeat_interleave(n).reshape((-1, n))
        a = torch.softmax(-((q - keys) * w) ** 2 / 2, dim=1)
        torch.bmm(a.unsqueeze(1), vals.unsqueeze(-1)).reshape(-1).sum().backward()

    stages = {
        "autograd.pool forward + backward":
            lambda: ag.pool(x, x, y, 1 / w.abs(), score="gaussian", ctx=c).sum().backward(),
        "nwattn.pool (lse)":
            lambda: nwattn.pool(xn, xn, yn, score="gaussian", bandwidth=1.0, lse=True, ctx=c),
        "nwattn.pool_backward (numpy)":
            lambda: nwattn.pool_backward(xn, xn, yn, o, lse, o, score="gaussian",
                                         bandwidth=1.0, ctx=c),
        "PyTorch d2l forward + backward": torch_d2l}
    per = {k: [] for k in stages}
    for _ in range(7):
        for name, fn in stages.items():
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                for _ in range(200):
                    fn()
                best = min(best, (time.perf_counter() - t0) / 200)
            per[name].append(best)
    for name, ts in per.items():
        print(f"{name:34s} {1e6 * statistics.median(ts):8.1f} us")


if __name__ == "__main__":
    main()

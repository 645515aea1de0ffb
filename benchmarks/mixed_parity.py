"""Parity of the mixed-data local linear estimators with statsmodels (issue 15), and the cost.

statsmodels' KernelReg(var_type, reg_type='ll') puts every column into the local design: our
reg_type='ll_all' (NWATTN_MIXED_LOCAL_LINEAR_ALL). For each var_type, at fixed bandwidths
(n = 90: c ~ U(0, 2), C ~ U(-1, 1), u = i % 3, o a permutation of i % 4,
y = sin 2c + 0.3 C + 0.5 [u == 1] + 0.2 o + 0.3 N(0, 1)), prints the largest relative
difference of the fit at every 7th point and of the leave-one-out CV, and the time of one CV
evaluation each (best of 3). Then the CV bandwidth selection over all columns (n = 60, 'cuo')
by mixed_select_bandwidth ('ll_all' and np's 'll') and by KernelReg(bw='cv_ls').

usage: NWATTN_LIBRARY=build/src/libnwattn.so.0 PYTHONPATH=python \\
       /usr/bin/python3 benchmarks/mixed_parity.py
"""
import time

import numpy as np
from statsmodels.nonparametric.kernel_regression import KernelReg

import nwattn

BW = {"c": 0.3, "C": 0.5, "u": 0.2, "o": 0.4}


def data(n, seed=4):
    rng = np.random.default_rng(seed)
    c = rng.uniform(0, 2, n)
    u = np.arange(n) % 3
    o = rng.permutation(np.arange(n) % 4)
    y = np.sin(2 * c) + 0.5 * (u == 1) + 0.2 * o + 0.3 * rng.normal(size=n)
    c2 = np.random.default_rng(seed + 1).uniform(-1, 1, n)
    return {"c": c, "C": c2, "u": u, "o": o}, (y + 0.3 * c2).astype(np.float32)


def problem(var_type, n=90):
    cols, y = data(n)
    names, continuous = [], iter("cC")
    for t in var_type:
        names.append(next(continuous) if t == "c" else t)
    x = np.ascontiguousarray(np.column_stack([cols[k] for k in names]), np.float32)
    return x, y, np.array([BW[k] for k in names], np.float32)


def best_of(f, runs=3):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    print("var_type  fit rel diff  cv rel diff  cv time ours  cv time statsmodels")
    for vt in ["cu", "co", "cuo", "ccu", "cco", "ccuo", "uo", "cc"]:
        x, y, bw = problem(vt)
        xs = [x[:, k].astype(float) for k in range(x.shape[1])]
        kr = KernelReg(y.astype(float), xs, vt, reg_type="ll", bw=bw.astype(float))
        q = x[::7]
        fit = np.max(np.abs(nwattn.mixed_predict(q, x, y, bw, vt, reg_type="ll_all") /
                            kr.fit(q.astype(float))[0] - 1))
        theirs = float(np.squeeze(kr.cv_loo(bw.astype(float), kr._est_loc_linear)))
        cv = abs(nwattn.mixed_cv(x, y, [bw], vt, reg_type="ll_all")[0] / theirs - 1)
        t_ours = best_of(lambda: nwattn.mixed_cv(x, y, [bw], vt, reg_type="ll_all"))
        t_sm = best_of(lambda: kr.cv_loo(bw.astype(float), kr._est_loc_linear))
        print(f"{vt:8s}  {fit:12.1e}  {cv:11.1e}  {t_ours:10.4f} s  {t_sm:10.4f} s")
    x, y, _ = problem("cuo", n=60)
    for rt in ("ll_all", "ll"):
        t0 = time.perf_counter()
        h = nwattn.mixed_select_bandwidth(x, y, "cuo", reg_type=rt)
        t = time.perf_counter() - t0
        print(f"mixed_select_bandwidth(reg_type={rt!r}): {h}, CV "
              f"{nwattn.mixed_cv(x, y, [h], 'cuo', reg_type=rt)[0]:.6f}, {t:.2f} s")
    t0 = time.perf_counter()
    kr = KernelReg(y.astype(float), [x[:, k].astype(float) for k in range(3)], "cuo",
                   reg_type="ll", bw="cv_ls")
    t = time.perf_counter() - t0
    print(f"KernelReg(reg_type='ll', bw='cv_ls'): {kr.bw}, its CV "
          f"{float(np.squeeze(kr.cv_loo(kr.bw, kr._est_loc_linear))):.6f}, {t:.2f} s")


if __name__ == "__main__":
    main()

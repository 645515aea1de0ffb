"""Coverage of the 95 % bands by simulation (issue 15).

Design: n = 200, x ~ U(0, 1), y = sin(2 pi x) + e, e ~ N(0, 1) (homoscedastic) or
y = sin(2 pi x) + (0.5 + x) e (heteroscedastic); Gaussian local linear at a fixed h = 0.04
(at h = 0.04 the smoothing bias, h^2 f''/2 <= 0.03, is a sixth of the standard error, about
0.19: the bands are for the truth only where the bias is small against se); evaluation points
0.2, 0.3, ..., 0.8 (away from the boundary); R replicates (numpy default_rng(seed)). Bands:

  homo     fit ± 1.959964 se, homoscedastic variance
  hetero   fit ± 1.959964 se, heteroscedastic (HC3) variance
  hetero-t fit ± t_{0.975, dof_resid} se (HC3; the Student quantile at the smoother's residual
           degrees of freedom, nwattn_nw_summary's dof_resid: a small-sample correction tried)
  boot     the wild bootstrap's pointwise percentile band (B = 199 draws)
  boot-t   the studentised wild bootstrap band (bootstrap-t, B = 199, the same draws)

Prints the fraction of replicates whose band covers the true f(x0), per point, its mean, and
for the bootstrap bands the fraction whose simultaneous band covers f at all 7 points at once.

usage: NWATTN_LIBRARY=build/src/libnwattn.so.0 PYTHONPATH=python \\
       /usr/bin/python3 benchmarks/coverage.py [replicates] [seed]
"""
import sys
import time

import numpy as np
from scipy import stats

import nwattn


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = np.random.default_rng(seed)
    n, h, z = 200, 0.04, 1.959963984540054
    x0 = np.round(np.arange(0.2, 0.81, 0.1), 2).astype(np.float32)
    truth = np.sin(2 * np.pi * x0.astype(np.float64))
    kinds = ("homo", "hetero", "hetero-t", "boot", "boot-t")
    rows = []
    t0 = time.perf_counter()
    for design in ("homoscedastic", "heteroscedastic"):
        cover = {k: np.zeros(x0.size) for k in kinds}
        sim = {"boot": 0, "boot-t": 0}
        for r in range(reps):
            x = rng.uniform(0, 1, n)
            sd = 1.0 if design == "homoscedastic" else 0.5 + x
            y = np.sin(2 * np.pi * x) + sd * rng.normal(size=n)
            for kind, var in (("homo", "homoscedastic"), ("hetero", "heteroscedastic")):
                inf = nwattn.nw_inference(x0, x, y, h, degree="linear", variance=var)
                cover[kind] += np.abs(inf.fit - truth) <= z * inf.se
            dof = nwattn.nw_summary(x, y, h, degree="linear").dof_resid
            cover["hetero-t"] += np.abs(inf.fit - truth) <= stats.t.ppf(0.975, dof) * inf.se
            for kind, method in (("boot", "percentile"), ("boot-t", "studentized")):
                b = nwattn.nw_bootstrap_bands(x0, x, y, h, degree="linear", replicates=199,
                                              seed=seed * 100003 + r, method=method)
                cover[kind] += (b.lower <= truth) & (truth <= b.upper)
                sim[kind] += bool(np.all((b.sim_lower <= truth) & (truth <= b.sim_upper)))
        for kind in kinds:
            rows.append((design, kind, cover[kind] / reps, sim.get(kind)))
    print(f"{reps} replicates, n = {n}, h = {h}, local linear Gaussian, seed {seed}, "
          f"{time.perf_counter() - t0:.1f} s")
    print("errors          band     " + " ".join(f"{v:6.2f}" for v in x0)
          + "   mean  range        simultaneous")
    for design, kind, c, s in rows:
        simultaneous = "" if s is None else f"  {100 * s / reps:5.1f}"
        print(f"{design:16s}{kind:9s}" + " ".join(f"{100 * v:6.1f}" for v in c)
              + f"  {100 * c.mean():5.1f}  {100 * c.min():4.1f}-{100 * c.max():4.1f}"
              + simultaneous)


if __name__ == "__main__":
    main()

"""Coverage by simulation (issue 15), the CI-sized version of benchmarks/coverage.py: 300
replicates of n = 200, x ~ U(0, 1), y = sin 2 pi x + N(0, 1), Gaussian local linear at the
fixed h = 0.04 (smoothing bias at most a sixth of the standard error); the 95 % homoscedastic
pointwise bands at x0 = 0.2 .. 0.8 (away from the boundary) must cover sin 2 pi x0 in 93-97 %
of the 2100 (replicate, point) pairs (binomial sd 0.5 %), and at every point in 90-99 %."""
import os

import numpy as np

import nwattn


# NWATTN_TEST_SMALL (CI's valgrind stage, where 300 fits take 30 s): 100 fits, and only the
# mean coverage is checked (700 intervals: its standard error is 0.008).
SMALL = os.environ.get("NWATTN_TEST_SMALL", "0") not in ("", "0")


def test_pointwise_band_coverage():
    rng = np.random.default_rng(2026)
    reps, n, h = (100 if SMALL else 300), 200, 0.04
    x0 = np.round(np.arange(0.2, 0.81, 0.1), 2)
    truth = np.sin(2 * np.pi * x0)
    covered = np.zeros(x0.size)
    for _ in range(reps):
        x = rng.uniform(0, 1, n)
        y = np.sin(2 * np.pi * x) + rng.normal(size=n)
        inf = nwattn.nw_inference(x0, x, y, h, degree="linear")
        covered += np.abs(inf.fit - truth) <= 1.959963984540054 * inf.se
    share = covered / reps
    assert 0.93 <= share.mean() <= 0.97, share
    if not SMALL:
        assert np.all((share >= 0.90) & (share <= 0.99)), share

"""The scikit-learn estimator passes sklearn.utils.estimator_checks (where scikit-learn is
installed: Debian's python3-sklearn) and agrees with the C functions; the result object's
bands, derivatives and summary."""
import numpy as np
import pytest

import nwattn

estimator_checks = pytest.importorskip("sklearn.utils.estimator_checks")

CONFIGS = [dict(), dict(kernel="epanechnikov", degree="linear", bandwidth="normal_reference"),
           dict(kernel="laplace", degree="linear", bandwidth=0.7)]


def _checks():
    for config in CONFIGS:
        for est, check in estimator_checks.check_estimator(nwattn.NadarayaWatson(**config),
                                                           generate_only=True):
            name = getattr(check, "func", check).__name__
            yield pytest.param(est, check, id=f"{config.get('kernel', 'gaussian')}-{name}")


@pytest.mark.parametrize("estimator, check", _checks())
def test_estimator_checks(estimator, check):
    check(estimator)


def test_estimator_matches_the_library():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 3, (60, 1))
    y = np.sin(2 * x[:, 0]) + 0.2 * rng.normal(size=60)
    est = nwattn.NadarayaWatson(degree="linear").fit(x, y)
    sel = nwattn.select_bandwidth(x.astype(np.float32), y.astype(np.float32), degree="linear")
    np.testing.assert_array_equal(est.bandwidth_, sel.bandwidths)
    xq = np.linspace(0.1, 2.9, 11)[:, None]
    pred = nwattn.nw_predict(xq.astype(np.float32), x.astype(np.float32), y.astype(np.float32),
                             sel.bandwidths, degree="linear")
    np.testing.assert_allclose(est.predict(xq), pred, rtol=1e-5, atol=1e-6)
    assert est.score(x, y) == pytest.approx(est.results_.r2, rel=1e-6)
    assert est.get_params() == {"kernel": "gaussian", "degree": "linear", "bandwidth": "cv"}
    res = est.results_
    lo, hi = res.conf_int(xq[:, 0])
    band = res.bootstrap_bands(xq[:, 0], seed=3)
    fit = res.fit(xq[:, 0])
    assert np.all(lo < fit) and np.all(fit < hi)
    assert np.all(band.sim_lower <= band.lower) and np.all(band.upper <= band.sim_upper)
    deriv, dse = res.derivative(xq[:, 0])
    assert deriv.shape == (11, 1) and np.all(dse > 0)
    text = res.summary()
    assert "Effective dof" in text and f"{res.dof:.4f}" in text
    scales, curve = res.cv_curve
    assert len(scales) == len(curve) == 16


def test_normal_quantile():
    from nwattn._sklearn import _normal_quantile
    assert _normal_quantile(0.975) == pytest.approx(1.959963984540054, rel=1e-13)
    assert _normal_quantile(0.5) == pytest.approx(0.0, abs=1e-15)
    assert _normal_quantile(1e-10) == pytest.approx(-6.361340902404056, rel=1e-12)

"""Issue 15's statistics against statsmodels and scipy: fits, marginal effects, R², CV and the
large-h local linear limit (KernelReg); densities and their CV objectives and bandwidths
(gaussian_kde, KDEMultivariate); the d > 1 search beyond the grid's box; observation weights
(integer = repeated rows); bands by seed; argument checks before ctypes."""
import numpy as np
import pytest

import nwattn

sm_kr = pytest.importorskip("statsmodels.nonparametric.kernel_regression")
sm_kd = pytest.importorskip("statsmodels.nonparametric.kernel_density")
scipy_stats = pytest.importorskip("scipy.stats")


def sine_data(n=80, seed=0, d=1):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 3, (n, d)).astype(np.float32)
    y = (np.sin(2 * x[:, 0]) + (0.3 * x[:, 1] if d > 1 else 0) +
         0.3 * rng.normal(size=n)).astype(np.float32)
    return (x[:, 0] if d == 1 else x), y


@pytest.mark.parametrize("reg", ["lc", "ll"])
@pytest.mark.parametrize("d", [1, 2])
def test_fit_marginal_effects_r2_match_statsmodels(reg, d):
    x, y = sine_data(d=d)
    h = [0.3] * d
    xq = np.linspace(0.2, 2.8, 7 * d).reshape(7, d).astype(np.float32)
    kr = sm_kr.KernelReg(y.astype(float), x.astype(float).reshape(len(y), d), "c" * d,
                         reg_type=reg, bw=h)
    mean, mfx = kr.fit(xq.astype(float))
    degree = "constant" if reg == "lc" else "linear"
    inf = nwattn.nw_inference(xq, x, y, h, degree=degree)
    np.testing.assert_allclose(inf.fit, mean, rtol=1e-6, atol=1e-6)
    if reg == "ll":  # statsmodels' local constant "marginal effects" are scaled differently
        np.testing.assert_allclose(inf.deriv, mfx, rtol=1e-5, atol=1e-5)
    s = nwattn.nw_summary(x, y, h, degree=degree)
    assert s.r2_corr == pytest.approx(kr.r_squared(), rel=1e-6)
    cv = nwattn.nw_cv(x, y, np.array([h], np.float32), degree=degree)
    assert s.cv == pytest.approx(float(cv[0]), rel=1e-6)


def test_local_constant_derivative_is_the_fits_derivative():
    x, y = sine_data()
    xq = np.linspace(0.3, 2.7, 9)
    eps = 1e-3
    up = nwattn.nw_inference(xq + eps, x, y, 0.3).fit
    down = nwattn.nw_inference(xq - eps, x, y, 0.3).fit
    der = nwattn.nw_inference(xq, x, y, 0.3).deriv[:, 0]
    np.testing.assert_allclose(der, (up - down) / (2 * eps), rtol=1e-3, atol=1e-3)


def test_local_linear_large_h_is_least_squares_like_statsmodels():
    """Finding 4: at h = 1e3 .. 1e5 × the range, the least-squares line (statsmodels too)."""
    x, y = sine_data(n=50, seed=3)
    xq = np.array([0.0, 1.0, 2.5], np.float32)
    slope, icpt = np.polyfit(x.astype(float), y.astype(float), 1)
    for h in (1e3 * 3, 1e4 * 3, 1e5 * 3):
        got = nwattn.nw_predict(xq, x, y, h, degree="linear", row_flags=True)
        pred, flags = got if isinstance(got, tuple) else (got, None)
        if flags is not None:
            assert not np.any(flags)
        np.testing.assert_allclose(pred, icpt + slope * xq, rtol=1e-4, atol=1e-4)
        kr = sm_kr.KernelReg(y.astype(float), x.astype(float), "c", reg_type="ll", bw=[h])
        np.testing.assert_allclose(pred, kr.fit(xq.astype(float))[0], rtol=1e-4, atol=1e-4)


def test_d2_search_leaves_the_grid_box_and_beats_the_wall():
    """Finding 5: y depends on x_1 only; h_2 may leave 20 × start; CV at the answer is no
    worse than statsmodels' cv_ls optimum (evaluated by our exact CV)."""
    rng = np.random.default_rng(5)
    n = 100
    x = rng.uniform(0, 1, (n, 2)).astype(np.float32)
    y = (np.sin(6 * x[:, 0]) + 0.3 * rng.normal(size=n)).astype(np.float32)
    sel = nwattn.select_bandwidth(x, y, degree="linear")
    kr = sm_kr.KernelReg(y.astype(float), x.astype(float), "cc", reg_type="ll", bw="cv_ls")
    sm_cv = nwattn.nw_cv(x, y, np.array([np.minimum(kr.bw, 1e30)], np.float32),
                         degree="linear")[0]
    assert sel.cv <= sm_cv * (1 + 1e-3)


def test_kde_matches_scipy_and_statsmodels():
    x, _ = sine_data(n=120, seed=1)
    xq = np.linspace(-1, 4, 41).astype(np.float32)
    h = 0.27
    dens = nwattn.kde(xq, x, h)
    xd = x.astype(float)
    ref = scipy_stats.gaussian_kde(xd, bw_method=h / xd.std(ddof=1))(xq.astype(float))
    np.testing.assert_allclose(dens, ref, rtol=1e-5, atol=1e-7)
    x2 = np.column_stack([x, np.cos(x)]).astype(np.float32)
    q2 = np.column_stack([xq, np.sin(xq)]).astype(np.float32)
    km = sm_kd.KDEMultivariate([x2[:, 0].astype(float), x2[:, 1].astype(float)], "cc",
                               bw=[0.3, 0.2])
    np.testing.assert_allclose(nwattn.kde(q2, x2, [0.3, 0.2]), km.pdf(q2.astype(float)),
                               rtol=1e-5, atol=1e-7)
    lscv, _ = nwattn.kde_cv(x2, [[0.3, 0.2]])
    assert lscv[0] == pytest.approx(km.imse(np.array([0.3, 0.2])), rel=1e-5)


@pytest.mark.parametrize("method", ["cv_ls", "cv_ml"])
def test_kde_bandwidth_selection_matches_statsmodels(method):
    x, _ = sine_data(n=80, seed=0)
    ours = nwattn.kde_select_bandwidth(x, method=method)
    theirs = sm_kd.KDEMultivariate([x.astype(float)], "c", bw=method).bw
    np.testing.assert_allclose(ours, theirs, rtol=1e-3)


def test_integer_weights_are_repeated_rows():
    x, y = sine_data(n=30, seed=2)
    w = np.random.default_rng(2).integers(0, 4, 30).astype(np.float32)
    w[:3] = 1
    xr, yr = np.repeat(x, w.astype(int)), np.repeat(y, w.astype(int))
    for degree in ("constant", "linear"):
        a = nwattn.nw_summary(x, y, 0.3, degree=degree, weights=w)
        b = nwattn.nw_summary(xr, yr, 0.3, degree=degree)
        for field in ("r2", "dof", "dof_resid", "sigma2", "rss", "cv"):
            assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-9)
        ia = nwattn.nw_inference([0.5, 1.5], x, y, 0.3, degree=degree, weights=w)
        ib = nwattn.nw_inference([0.5, 1.5], xr, yr, 0.3, degree=degree)
        for u, v in zip(ia[:4], ib[:4]):
            np.testing.assert_allclose(u, v, rtol=1e-9)
    np.testing.assert_allclose(nwattn.kde([0.5, 1.0], x, 0.3, weights=w),
                               nwattn.kde([0.5, 1.0], xr, 0.3), rtol=1e-12)
    hw = nwattn.nw_select_bandwidth_weighted(x, y, w)
    with nwattn.Context("reference") as ref:  # the weighted search's engine
        hr = nwattn.select_bandwidth(xr, yr, ctx=ref).bandwidths
    np.testing.assert_allclose(hw, hr, rtol=2e-4)


def test_weighted_selection_in_c():
    x, y = sine_data(n=60, seed=4)
    w = np.random.default_rng(4).integers(0, 4, 60).astype(np.float32)
    w[:3] = 1
    sel = nwattn.select_bandwidth(x, y, degree="linear", weights=w, tolerance=1e-6)
    assert sel.curve_cv.shape == (16,) and np.all(np.isfinite(sel.curve_cv))
    # the CV it reports is nw_summary's weighted leave-one-out CV at the bandwidth chosen
    assert sel.cv == pytest.approx(
        nwattn.nw_summary(x, y, sel.bandwidths, degree="linear", weights=w).cv, rel=1e-9)
    # nothing on a grid around it is lower
    for s in (0.9, 0.97, 1.03, 1.1):
        other = nwattn.nw_summary(x, y, s * sel.bandwidths, degree="linear", weights=w).cv
        assert other >= sel.cv * (1 - 1e-9)
    ones = nwattn.select_bandwidth(x, y, weights=np.ones(60))
    plain = nwattn.select_bandwidth(x, y)
    for a, b in zip(ones, plain):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="weights"):
        nwattn.select_bandwidth(x, y, weights=np.ones(59))
    with pytest.raises(nwattn.NWAttnError, match="obs_weights"):
        nwattn.select_bandwidth(x, y, weights=-np.ones(60))


def test_bands_reproducible_by_seed():
    x, y = sine_data()
    xq = np.linspace(0.3, 2.7, 5)
    a = nwattn.nw_bootstrap_bands(xq, x, y, 0.3, replicates=300, seed=7)
    b = nwattn.nw_bootstrap_bands(xq, x, y, 0.3, replicates=300, seed=7)
    c = nwattn.nw_bootstrap_bands(xq, x, y, 0.3, replicates=300, seed=8)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a.lower, c.lower)
    assert np.all(a.sim_lower <= a.lower) and np.all(a.sim_upper >= a.upper)


def test_studentized_bands():
    x, y = sine_data()
    xq = np.linspace(0.3, 2.7, 5)
    a = nwattn.nw_bootstrap_bands(xq, x, y, 0.3, degree="linear", replicates=200, seed=7,
                                  method="studentized")
    b = nwattn.nw_bootstrap_bands(xq, x, y, 0.3, degree="linear", replicates=200, seed=7,
                                  method="studentized")
    assert isinstance(a, nwattn.TBands)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    inf = nwattn.nw_inference(xq, x, y, 0.3, degree="linear", variance="heteroscedastic")
    np.testing.assert_allclose(a.lower, inf.fit - a.crit * inf.se, rtol=1e-12)
    np.testing.assert_allclose(a.sim_upper, inf.fit + a.sim_crit * inf.se, rtol=1e-12)
    assert np.all(a.sim_crit >= a.crit) and np.all(a.crit > 1.0)
    assert np.all(a.sim_lower <= a.lower) and np.all(a.lower <= inf.fit)
    with pytest.raises(ValueError, match="method"):
        nwattn.nw_bootstrap_bands(xq, x, y, 0.3, method="bca")


@pytest.mark.parametrize("method", ["percentile", "studentized"])
@pytest.mark.parametrize("kwargs, error", [
    (dict(replicates=1), ValueError), (dict(replicates=2 ** 64), ValueError),
    (dict(replicates=-1), ValueError), (dict(replicates=3.5), TypeError),
    (dict(seed=2 ** 64), ValueError), (dict(seed=-1), ValueError), (dict(level=1.0), ValueError),
    (dict(kernel="cosine"), ValueError), (dict(kernel=2 ** 33), ValueError),
    (dict(degree=7), nwattn.NWAttnError),
])
def test_bootstrap_arguments_checked_before_ctypes(kwargs, error, method):
    x, y = sine_data(n=20)
    with pytest.raises(error):
        nwattn.nw_bootstrap_bands([1.0], x, y, 0.3, method=method, **kwargs)


def test_bad_inputs_name_the_argument():
    x, y = sine_data(n=20)
    with pytest.raises(ValueError, match="bandwidth"):
        nwattn.nw_inference([1.0], x, y, [0.3, 0.4])
    with pytest.raises(ValueError, match="weights"):
        nwattn.nw_summary(x, y, 0.3, weights=np.ones(3))
    with pytest.raises(ValueError, match="variance"):
        nwattn.nw_inference([1.0], x, y, 0.3, variance="robust")
    with pytest.raises(nwattn.NWAttnError, match="obs_weights"):
        nwattn.nw_summary(x, y, 0.3, weights=-np.ones(20))
    with pytest.raises(ValueError, match="xq"):
        nwattn.nw_inference(np.ones((2, 3)), x, y, 0.3)

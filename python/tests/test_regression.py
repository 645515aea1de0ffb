"""Nadaraya-Watson regression against numpy: predictions with every kernel (local constant and
linear, d = 1 and 2), empty and singular rows, exact leave-one-out CV and its gradient,
bandwidth rules and selection, d2l's learnable-w model and its training, weight diagnostics,
the RNG and the seeds' data sets."""
import numpy as np
import pytest

import nwattn
from nwattn import Status

KERNELS = {
    "gaussian": lambda t: np.exp(-t / 2),
    "laplace": lambda t: np.exp(-np.sqrt(t)),
    "epanechnikov": lambda t: np.where(t < 1, 1 - t, 0.0),
    "tricube": lambda t: np.where(t < 1, (1 - np.minimum(t, 1) ** 1.5) ** 3, 0.0),
    "uniform": lambda t: np.where(t <= 1, 1.0, 0.0),
    "matern32": lambda t: (1 + np.sqrt(t)) * np.exp(-np.sqrt(t)),
    "matern52": lambda t: (1 + np.sqrt(t) + t / 3) * np.exp(-np.sqrt(t)),
}


def oracle_predict(xq, x, y, h, kernel, degree):
    xq, x, y = (np.asarray(a, np.float64) for a in (xq, x, y))
    xq = xq.reshape(len(xq), -1)
    x = x.reshape(len(x), -1)
    y1 = y.reshape(len(y), -1)
    t = np.sum(((xq[:, None, :] - x[None, :, :]) / np.asarray(h, np.float64)) ** 2, axis=-1)
    k = KERNELS[kernel](t)
    if degree == "constant":
        w = k / k.sum(axis=1, keepdims=True)
        return w @ y1, w
    out = np.empty((len(xq), y1.shape[1]))
    for i, q in enumerate(xq):
        z = np.hstack([np.ones((len(x), 1)), x - q])
        sw = np.sqrt(k[i])[:, None]
        coef = np.linalg.lstsq(z * sw, y1 * sw, rcond=None)[0]
        out[i] = coef[0]
    return out, None


def data1(rng, n=40):
    x = np.sort(rng.random(n) * 5).astype(np.float32)
    y = (2 * np.sin(x) + x ** 0.8 + rng.normal(0, 0.5, n)).astype(np.float32)
    return x, y


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("degree", ["constant", "linear"])
def test_predict_d1(ctx, rng, kernel, degree):
    x, y = data1(rng)
    xq = np.linspace(0.2, 4.8, 23, dtype=np.float32)
    h = 0.8
    got, w, flags = nwattn.nw_predict(xq, x, y, h, kernel=kernel, degree=degree, weights=True,
                                      row_flags=True, ctx=ctx)
    want, want_w = oracle_predict(xq, x, y, h, kernel, degree)
    assert got.shape == (23,) and not flags.any()
    np.testing.assert_allclose(got, want[:, 0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(w @ y.astype(np.float64), got, rtol=1e-4, atol=1e-4)
    if want_w is not None:
        np.testing.assert_allclose(w, want_w, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kernel", ["gaussian", "laplace", "matern32", "matern52"])
@pytest.mark.parametrize("degree", ["constant", "linear"])
def test_fastsum_method(rng, kernel, degree):
    """The fast sums (Context.nw_method) against numpy and against the direct rows."""
    x, y = data1(rng, 300)
    xq = np.concatenate([rng.uniform(-1, 6, 20), x[:5]]).astype(np.float32)  # outside too
    fast, direct = nwattn.Context(), nwattn.Context()
    fast.nw_method, direct.nw_method = "fastsum", nwattn.NwMethod.DIRECT
    assert fast.nw_method == nwattn.NwMethod.FASTSUM and fast.nw_tolerance == 1e-7
    fast.nw_tolerance = 1e-10
    got = nwattn.nw_predict(xq, x, y, 0.3, kernel=kernel, degree=degree, ctx=fast)
    want, _ = oracle_predict(xq, x, y, 0.3, kernel, degree)
    np.testing.assert_allclose(got, want[:, 0], rtol=1e-5, atol=1e-5)
    h = np.array([0.1, 0.4], np.float32)
    cv_f = nwattn.nw_cv(x, y, h, kernel=kernel, degree=degree, ctx=fast)
    cv_d = nwattn.nw_cv(x, y, h, kernel=kernel, degree=degree, ctx=direct)
    np.testing.assert_allclose(cv_f, cv_d, rtol=1e-5)
    with pytest.raises(nwattn.NWAttnError):
        fast.nw_tolerance = 0.5
    with pytest.raises(ValueError):
        fast.nw_method = "quick"


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
@pytest.mark.parametrize("degree", ["constant", "linear"])
def test_predict_d2_two_outputs(ctx, rng, kernel, degree):
    x = rng.random((60, 2)).astype(np.float32)
    y = np.stack([np.sin(3 * x[:, 0]) + x[:, 1], np.cos(2 * x[:, 1])], axis=1).astype(np.float32)
    xq = rng.uniform(0.2, 0.8, (9, 2)).astype(np.float32)
    h = np.array([0.4, 0.6], np.float32)
    got = nwattn.nw_predict(xq, x, y, h, kernel=kernel, degree=degree, ctx=ctx)
    want, _ = oracle_predict(xq, x, y, h, kernel, degree)
    assert got.shape == (9, 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_local_linear_reproduces_affine_functions(ctx, rng):
    x = rng.random(30).astype(np.float32) * 4
    y = (3 * x - 1).astype(np.float32)
    xq = np.array([0.0, 2.0, 4.5], np.float32)  # includes the boundary and beyond
    got = nwattn.nw_predict(xq, x, y, 0.7, degree="linear", ctx=ctx)
    np.testing.assert_allclose(got, 3 * xq - 1, rtol=1e-4, atol=1e-4)


def test_empty_rows(ctx):
    x = np.array([0.0, 1.0, 2.0], np.float32)
    y = np.array([5.0, 6.0, 7.0], np.float32)
    xq = np.array([1.05, 10.0], np.float32)
    for empty, far in (("nearest", 7.0), ("zero", 0.0)):
        got, flags = nwattn.nw_predict(xq, x, y, 0.2, kernel="uniform", empty=empty,
                                       row_flags=True, ctx=ctx)
        assert flags.tolist() == [0, nwattn.RowFlag.EMPTY]
        assert got[0] == pytest.approx(6.0) and got[1] == pytest.approx(far)
    got = nwattn.nw_predict(xq, x, y, 0.2, kernel="uniform", empty="nan", ctx=ctx)
    assert np.isnan(got[1]) and got[0] == pytest.approx(6.0)


def oracle_cv(x, y, h, kernel):
    n = len(x)
    err = 0.0
    for i in range(n):
        keep = np.arange(n) != i
        pred, _ = oracle_predict(x[i:i + 1], x[keep], y[keep], h, kernel, "constant")
        err += float(np.sum((pred[0] - np.asarray(y[i], np.float64)) ** 2))
    return err / n


@pytest.mark.parametrize("kernel", ["gaussian", "laplace", "epanechnikov"])
def test_cv_is_exact_leave_one_out(ctx, rng, kernel):
    x, y = data1(rng, 30)
    grid = np.array([0.5, 0.9, 1.5], np.float32)
    cv, grad, flagged = nwattn.nw_cv(x, y, grid, kernel=kernel, gradient=True, flagged=True,
                                     ctx=ctx)
    assert cv.shape == (3,) and grad.shape == (3, 1) and flagged.tolist() == [0, 0, 0]
    for g, h in enumerate(grid):
        assert cv[g] == pytest.approx(oracle_cv(x, y, float(h), kernel), rel=1e-4)
    # the analytic gradient against a central difference
    h0, e = 0.9, 1e-3
    lo, hi = nwattn.nw_cv(x, y, [h0 - e, h0 + e], kernel=kernel, ctx=ctx)
    assert grad[1, 0] == pytest.approx((hi - lo) / (2 * e), rel=2e-2, abs=1e-4)
    assert isinstance(nwattn.nw_cv(x, y, 0.9, kernel=kernel, ctx=ctx), float)


def test_cv_of_an_inadmissible_compact_bandwidth_is_infinite(ctx):
    x = np.array([0.0, 0.1, 0.2, 5.0, 5.1], np.float32)  # 5.0 and 5.1 are far from the rest
    y = np.arange(5, dtype=np.float32)
    cv, flagged = nwattn.nw_cv(x, y, 0.05, kernel="epanechnikov", flagged=True, ctx=ctx)
    assert cv == np.inf and flagged > 0


def test_bandwidth_rules(ctx, rng):
    x = rng.normal(size=(200, 2)).astype(np.float32)
    x64 = x.astype(np.float64)
    s = x64.std(axis=0, ddof=1)
    iqr = np.subtract(*np.percentile(x64, [75, 25], axis=0))
    factor = 200 ** (-1 / 6)
    want = {"silverman": 0.9 * np.minimum(s, iqr / 1.34) * factor,
            "scott": 1.06 * np.minimum(s, iqr / 1.34) * factor,
            "normal_reference": 1.06 * s * factor}
    for rule, value in want.items():
        np.testing.assert_allclose(nwattn.bandwidth_rule_of_thumb(x, rule, ctx=ctx), value,
                                   rtol=1e-5)


def test_select_bandwidth_finds_the_cv_minimum(ctx, rng):
    x, y = data1(rng, 60)
    sel = nwattn.select_bandwidth(x, y, ctx=ctx)
    assert sel.converged and sel.at_grid_edge == 0 and sel.bandwidths.shape == (1,)
    fine = np.geomspace(0.05, 3, 400).astype(np.float32)
    cv = nwattn.nw_cv(x, y, fine, ctx=ctx)
    assert sel.cv <= cv.min() + 1e-7
    assert sel.cv == pytest.approx(nwattn.nw_cv(x, y, sel.bandwidths[0], ctx=ctx), rel=1e-9)
    assert sel.curve_scales.shape == (16,) and np.all(np.isfinite(sel.curve_cv))
    assert nwattn.cv_options_default()["grid_points"] == 16
    small = nwattn.select_bandwidth(x, y, grid_points=5, max_evaluations=8, ctx=ctx)
    assert small.curve_scales.shape == (5,) and small.evaluations <= 8


def test_wmodel_evaluate_is_d2l_parametric_pooling(ctx, rng):
    x, y = data1(rng, 30)
    xq = np.arange(0, 5, 0.25, dtype=np.float32)
    w = 2.5
    r = nwattn.wmodel_evaluate(w, xq, x, y, weights=True, ctx=ctx)
    diff = xq[:, None].astype(np.float64) - x[None, :]
    e = np.exp(-((diff * w) ** 2) / 2)
    a = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(r.yhat, a @ y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r.weights, a, rtol=1e-4, atol=1e-6)
    assert r.loss is None and r.grad is None
    # d2l's training set-up: leave-one-out, loss sum (yhat - y)^2 / 2, and its derivative
    t = nwattn.wmodel_evaluate(w, x, x, y, target=y, leave_one_out=True, ctx=ctx)
    diff = x[:, None].astype(np.float64) - x[None, :]

    def loss(wv):
        e = np.exp(-((diff * wv) ** 2) / 2)
        np.fill_diagonal(e, 0)
        return float(np.sum(((e / e.sum(1, keepdims=True)) @ y - y) ** 2) / 2)

    assert t.loss == pytest.approx(loss(w), rel=1e-5)
    assert t.grad == pytest.approx((loss(w + 1e-4) - loss(w - 1e-4)) / 2e-4, rel=1e-3)


def test_wmodel_train_takes_d2l_sgd_steps(ctx, rng):
    x, y = data1(rng, 40)
    w, losses = nwattn.wmodel_train(x, y, 0.7, learning_rate=0.5, epochs=5, ctx=ctx)
    assert losses.shape == (5,)
    wv = 0.7
    for epoch in range(5):
        r = nwattn.wmodel_evaluate(wv, x, x, y, target=y, leave_one_out=True, ctx=ctx)
        assert losses[epoch] == pytest.approx(r.loss, rel=1e-6)
        wv = np.float32(wv - 0.5 * r.grad)
    assert w == pytest.approx(float(wv), rel=1e-5)
    with pytest.raises(nwattn.NWAttnError) as info:
        nwattn.wmodel_train(x, y, 0.7, learning_rate=0.0, epochs=1, ctx=ctx)
    assert info.value.status == Status.ERR_BAD_PARAMETER


def test_weights_diagnostics(ctx):
    w = np.array([[1, 0, 0, 0], [1, 1, 1, 1], [2, 1, 1, 0], [0, 0, 0, 0]], np.float32)
    entropy, n_eff = nwattn.weights_diagnostics(w, ctx=ctx)
    p = np.array([0.5, 0.25, 0.25])
    np.testing.assert_allclose(entropy, [0, np.log(4), -np.sum(p * np.log(p)), 0], atol=1e-6)
    np.testing.assert_allclose(n_eff, [1, 4, 1 / np.sum(p ** 2), 0], rtol=1e-6)
    with pytest.raises(nwattn.NWAttnError) as info:
        nwattn.weights_diagnostics(-w, ctx=ctx)
    assert info.value.status == Status.ERR_BAD_PARAMETER


def test_rng_is_deterministic_splitmix64():
    a, b = nwattn.Rng(2024), nwattn.Rng(2024)
    assert [a.next() for _ in range(5)] == [b.next() for _ in range(5)]
    # SplitMix64 from seed 0: the reference sequence's first value
    assert nwattn.Rng(0).next() == 0xE220A8397B1DCDAF
    r = nwattn.Rng(7)
    copy = nwattn.Rng()
    copy.state = r.state
    assert r.uniform() == (copy.next() >> 11) * 2.0 ** -53
    u = nwattn.Rng(1).uniform(1000)
    assert u.shape == (1000,) and 0 <= u.min() and u.max() < 1
    z = nwattn.Rng(1).normal(4000)
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.1


@pytest.mark.parametrize("dataset", ["d2l", "sine"])
def test_datasets_follow_the_documented_recipe(ctx, dataset):
    n = 50
    x, y = nwattn.dataset_generate(dataset, n, nwattn.Rng(99), ctx=ctx)
    r = nwattn.Rng(99)
    u = r.uniform(n)
    z = r.normal(n)
    if dataset == "d2l":
        xs = np.sort((5 * u).astype(np.float32))
        f = 2 * np.sin(xs.astype(np.float64)) + xs.astype(np.float64) ** 0.8
        noise = 0.5 * z
    else:
        xs = (10 * u).astype(np.float32)
        f = np.sin(xs.astype(np.float64))
        noise = 0.2 * z
    np.testing.assert_array_equal(x, xs)
    np.testing.assert_allclose(y, f + noise, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(nwattn.dataset_truth(dataset, x, ctx=ctx), f, rtol=1e-6,
                               atol=1e-6)


def test_regression_errors(ctx):
    x = np.array([0.0, 1.0, 2.0], np.float32)
    with pytest.raises(nwattn.NWAttnError) as info:
        nwattn.nw_predict(x, np.zeros(0, np.float32), np.zeros(0, np.float32), 1.0, ctx=ctx)
    assert info.value.status == Status.ERR_DEGENERATE_DATA
    with pytest.raises(nwattn.NWAttnError) as info:
        nwattn.nw_predict(x, x, x, -1.0, ctx=ctx)
    assert info.value.status == Status.ERR_BAD_PARAMETER
    with pytest.raises(nwattn.NWAttnError) as info:
        nwattn.nw_predict(x, x, x, 1.0, kernel=9, ctx=ctx)
    assert info.value.status == Status.ERR_BAD_ENUM
    with pytest.raises(ValueError, match="unknown kernel"):
        nwattn.nw_predict(x, x, x, 1.0, kernel="cosine")
    with pytest.raises(ValueError, match="points"):
        nwattn.nw_predict(x, x, x[:2], 1.0)
    with pytest.raises(nwattn.NWAttnError) as info:
        nwattn.dataset_truth("d2l", [-1.0], ctx=ctx)
    assert info.value.status == Status.ERR_BAD_PARAMETER
    with pytest.raises(TypeError, match="Rng"):
        nwattn.dataset_generate("sine", 3, 42)

"""Mixed data (issue 15): continuous, unordered and ordered columns against statsmodels'
KernelReg(var_type, reg_type='lc') and KDEMultivariate(var_type): predictions, CV and
densities to 1e-6 at the same bandwidths, the likelihood CV objective, bandwidth selection
over all columns, integer weights as repeated rows, argument checks. Local linear: the
statsmodels definition (reg_type='ll_all') against KernelReg(reg_type='ll'), np's
(reg_type='ll') against a direct weighted least-squares solve, both against the continuous
local linear fit when every column is continuous."""
import math

import numpy as np
import pytest

import nwattn

sm_kr = pytest.importorskip("statsmodels.nonparametric.kernel_regression")
sm_kd = pytest.importorskip("statsmodels.nonparametric.kernel_density")


def mixed_data(n=90, seed=4):
    rng = np.random.default_rng(seed)
    xc = rng.uniform(0, 2, n)
    xu = np.arange(n) % 3  # every category several times (statsmodels counts levels per fold)
    xo = rng.permutation(np.arange(n) % 4)
    y = np.sin(2 * xc) + 0.5 * (xu == 1) + 0.2 * xo + 0.3 * rng.normal(size=n)
    return np.column_stack([xc, xu, xo]).astype(np.float32), y.astype(np.float32)


def columns(x):
    return [x[:, k].astype(float) for k in range(x.shape[1])]


BW = np.array([0.3, 0.2, 0.4], np.float32)


@pytest.mark.parametrize("var_type", ["cuo", "cu", "co", "uo"])
def test_predict_and_cv_match_statsmodels(var_type):
    x, y = mixed_data()
    keep = [i for i, t in enumerate("cuo") if t in var_type][:len(var_type)]
    if var_type == "uo":
        keep = [1, 2]
    x, bw = np.ascontiguousarray(x[:, keep]), BW[keep].astype(float)
    kr = sm_kr.KernelReg(y.astype(float), columns(x), var_type, reg_type="lc", bw=bw)
    q = x[::7]
    np.testing.assert_allclose(nwattn.mixed_predict(q, x, y, bw, var_type),
                               kr.fit(q.astype(float))[0], rtol=1e-6)
    ours = nwattn.mixed_cv(x, y, [bw], var_type)[0]
    assert ours == pytest.approx(kr.cv_loo(bw, kr._est_loc_constant), rel=1e-6)


def test_density_and_likelihood_match_statsmodels():
    x, _ = mixed_data()
    km = sm_kd.KDEMultivariate(columns(x), "cuo", bw=BW.astype(float))
    q = x[::5]
    dens, ll = nwattn.mixed_kde(q, x, BW, "cuo")
    np.testing.assert_allclose(dens, km.pdf(q.astype(float)), rtol=1e-6)
    n = len(x)  # statsmodels sums log((n - 1) f_-i) and negates
    assert -(n * ll + n * math.log(n - 1)) == pytest.approx(
        km.loo_likelihood(BW.astype(float), func=np.log), rel=1e-6)


def test_selection_over_all_columns_is_no_worse_than_statsmodels():
    x, y = mixed_data(n=60)
    ours = nwattn.mixed_select_bandwidth(x, y, "cuo")
    kr = sm_kr.KernelReg(y.astype(float), columns(x), "cuo", reg_type="lc", bw="cv_ls")
    theirs = np.clip(kr.bw, [1e-6, 0, 0], [1e30, 1, 1]).astype(np.float32)
    cv_ours, cv_theirs = nwattn.mixed_cv(x, y, [ours, theirs], "cuo")
    assert cv_ours <= cv_theirs * (1 + 1e-6)
    assert 0 <= ours[1] <= 1 and 0 <= ours[2] <= 1 and ours[0] > 0


def test_li_racine_kernels_and_weights():
    x, y = mixed_data(n=30, seed=1)
    w = (np.arange(30) % 3).astype(np.float32)
    w[:3] = 1
    xr, yr = np.repeat(x, w.astype(int), axis=0), np.repeat(y, w.astype(int))
    for vt in ("cuo", "cUO"):
        np.testing.assert_allclose(nwattn.mixed_predict(x[:5], x, y, BW, vt, weights=w),
                                   nwattn.mixed_predict(x[:5], xr, yr, BW, vt), rtol=1e-12)
        np.testing.assert_allclose(nwattn.mixed_cv(x, y, [BW], vt, weights=w),
                                   nwattn.mixed_cv(xr, yr, [BW], vt), rtol=1e-12)
    # Li-Racine at lambda = 1 makes a column irrelevant: the continuous fit alone
    only_c = nwattn.mixed_predict(x[:5, :1], x[:, :1], y, BW[:1], "c")
    np.testing.assert_allclose(nwattn.mixed_predict(x[:5], x, y, [BW[0], 1, 1], "cUO"), only_c,
                               rtol=1e-12)


@pytest.mark.parametrize("args, error, match", [
    (dict(var_type="cux"), ValueError, "letter"),
    (dict(var_type="cu"), ValueError, "var_type"),
    (dict(bandwidth=[0.3, 1.5, 0.2]), nwattn.NWAttnError, "lambda"),
    (dict(bandwidth=[0.0, 0.5, 0.2]), nwattn.NWAttnError, "h > 0"),
    (dict(x_code=0.5), nwattn.NWAttnError, "integer code"),
])
def test_bad_inputs(args, error, match):
    x, y = mixed_data(n=20)
    if "x_code" in args:
        x = x.copy()
        x[3, 1] = args["x_code"]
    with pytest.raises(error, match=match):
        nwattn.mixed_predict(x[:2], x, y, args.get("bandwidth", BW), args.get("var_type", "cuo"))


# ---- Local linear -----------------------------------------------------------------------------
def mixed_data_ll(n=90, seed=4):
    """mixed_data's columns c, u, o and a second continuous column C."""
    x, y = mixed_data(n, seed)
    c2 = np.random.default_rng(seed + 1).uniform(-1, 1, n).astype(np.float32)
    return {"c": x[:, 0], "C": c2, "u": x[:, 1], "o": x[:, 2]}, (y + 0.3 * c2).astype(np.float32)


LL_BW = {"c": 0.3, "C": 0.5, "u": 0.2, "o": 0.4}


def ll_problem(var_type, n=90, seed=4):
    cols, y = mixed_data_ll(n, seed)
    names, continuous = [], iter("cC")
    for t in var_type:
        names.append(next(continuous) if t == "c" else t.lower())
    x = np.ascontiguousarray(np.column_stack([cols[k] for k in names]), np.float32)
    return x, y, np.array([LL_BW[k] for k in names], np.float32)


@pytest.mark.parametrize("var_type", ["cu", "co", "cuo", "ccu", "cco", "ccuo", "uo"])
def test_local_linear_all_columns_matches_statsmodels(var_type):
    x, y, bw = ll_problem(var_type)
    kr = sm_kr.KernelReg(y.astype(float), columns(x), var_type, reg_type="ll", bw=bw.astype(float))
    q = x[::7]
    fit, flags = nwattn.mixed_predict(q, x, y, bw, var_type, reg_type="ll_all", row_flags=True)
    assert not flags.any()
    np.testing.assert_allclose(fit, kr.fit(q.astype(float))[0], rtol=1e-9)
    cv, flagged = nwattn.mixed_cv(x, y, [bw], var_type, reg_type="ll_all", flagged=True)
    assert flagged[0] == 0
    assert cv[0] == pytest.approx(kr.cv_loo(bw.astype(float), kr._est_loc_linear), rel=1e-9)


def _kernels(x, q, bw, var_type):
    """The product kernel of every training point at q, from the header's formulas."""
    k = np.ones(len(x))
    for c, t in enumerate(var_type):
        a, b, h = float(q[c]), x[:, c].astype(float), float(bw[c])
        same, dist = b == a, np.abs(b - a)
        if t == "c":
            k *= np.exp(-0.5 * ((b - a) / h) ** 2) / h
        elif t == "u":
            k *= np.where(same, 1 - h, h / (len(np.unique(x[:, c])) - 1))
        elif t == "o":
            k *= np.where(same, 1 - h, 0.5 * (1 - h) * h ** dist)
        elif t == "U":
            k *= np.where(same, 1.0, h)
        else:
            k *= h ** dist
    return k


def _wls(x, y, bw, var_type, q, slopes, skip=None):
    k = _kernels(x, q, bw, var_type)
    if skip is not None:
        k[skip] = 0
    cols = [c for c, t in enumerate(var_type) if slopes == "all" or t == "c"]
    z = np.column_stack([np.ones(len(x))] + [x[:, c].astype(float) - float(q[c]) for c in cols])
    return np.linalg.solve(z.T @ (k[:, None] * z), z.T @ (k * y.astype(float)))[0]


@pytest.mark.parametrize("var_type", ["cuo", "cUO", "ccu", "cco", "cO"])
def test_local_linear_np_matches_direct_weighted_least_squares(var_type):
    x, y, bw = ll_problem(var_type, n=50)
    q = x[::6]
    want = [_wls(x, y, bw, var_type, qi, "continuous") for qi in q]
    np.testing.assert_allclose(nwattn.mixed_predict(q, x, y, bw, var_type, reg_type="ll"), want,
                               rtol=1e-10)
    loo = [_wls(x, y, bw, var_type, x[i], "continuous", skip=i) for i in range(len(x))]
    cv = np.mean((y.astype(float) - loo) ** 2)
    assert nwattn.mixed_cv(x, y, [bw], var_type, reg_type="ll")[0] == pytest.approx(cv, rel=1e-10)
    # statsmodels' definition is the same solve with every column
    want_all = [_wls(x, y, bw, var_type, qi, "all") for qi in q]
    np.testing.assert_allclose(nwattn.mixed_predict(q, x, y, bw, var_type, reg_type="ll_all"),
                               want_all, rtol=1e-10)


def test_local_linear_all_continuous_is_the_continuous_local_linear_fit():
    x, y, bw = ll_problem("cc")
    q = x[::5]
    want = nwattn.nw_predict(q, x, y, bw, degree="linear")
    want_cv = nwattn.nw_cv(x, y, bw, degree="linear")
    for reg_type in ("ll", "ll_all", nwattn.MixedEstimator.LOCAL_LINEAR, 2):
        np.testing.assert_allclose(nwattn.mixed_predict(q, x, y, bw, "cc", reg_type=reg_type),
                                   want, rtol=1e-5, atol=1e-6)
        assert nwattn.mixed_cv(x, y, [bw], "cc", reg_type=reg_type)[0] == pytest.approx(
            want_cv, rel=1e-6)


def test_local_linear_singular_rows_take_the_local_constant_fit_and_are_flagged():
    x, y, _ = ll_problem("cuo")
    bw = np.array([0.3, 0.0, 0.4], np.float32)  # exact matching: the code column is all zeros
    q = x[:6]
    lc = nwattn.mixed_predict(q, x, y, bw, "cuo")
    fit, flags = nwattn.mixed_predict(q, x, y, bw, "cuo", reg_type="ll_all", row_flags=True)
    assert np.array_equal(fit, lc)
    assert np.all(flags == nwattn.RowFlag.SINGULAR)
    cv, flagged = nwattn.mixed_cv(x, y, [bw], "cuo", reg_type="ll_all", flagged=True)
    assert cv[0] == nwattn.mixed_cv(x, y, [bw], "cuo")[0] and flagged[0] == len(x)
    _, flags = nwattn.mixed_predict(q, x, y, bw, "cuo", reg_type="ll", row_flags=True)
    assert not flags.any()  # np's design has no code column


def test_local_linear_weights_are_repeated_rows():
    x, y, bw = ll_problem("cuo", n=30, seed=1)
    w = (np.arange(30) % 3).astype(np.float32)
    w[:3] = 1
    xr, yr = np.repeat(x, w.astype(int), axis=0), np.repeat(y, w.astype(int))
    for reg_type in ("ll", "ll_all"):
        np.testing.assert_allclose(
            nwattn.mixed_predict(x[:5], x, y, bw, "cuo", reg_type=reg_type, weights=w),
            nwattn.mixed_predict(x[:5], xr, yr, bw, "cuo", reg_type=reg_type), rtol=1e-12)
        np.testing.assert_allclose(
            nwattn.mixed_cv(x, y, [bw], "cuo", reg_type=reg_type, weights=w),
            nwattn.mixed_cv(xr, yr, [bw], "cuo", reg_type=reg_type), rtol=1e-12)


@pytest.mark.parametrize("reg_type", ["ll", "ll_all"])
def test_local_linear_selection_over_all_columns_beats_a_grid(reg_type):
    x, y = mixed_data(n=60)
    ours = nwattn.mixed_select_bandwidth(x, y, "cuo", reg_type=reg_type)
    assert ours[0] > 0 and 0 <= ours[1] <= 1 and 0 <= ours[2] <= 1
    grid = np.array([(h, lu, lo) for h in (0.1, 0.2, 0.3, 0.5, 1.0)
                     for lu in (0.05, 0.2, 0.4, 0.6) for lo in (0.05, 0.3, 0.6, 0.9)], np.float32)
    cv = nwattn.mixed_cv(x, y, np.vstack([ours, grid]), "cuo", reg_type=reg_type)
    assert cv[0] <= cv[1:].min()
    if reg_type == "ll_all":  # statsmodels' objective agrees at our answer
        kr = sm_kr.KernelReg(y.astype(float), columns(x), "cuo", reg_type="ll",
                             bw=ours.astype(float))
        assert cv[0] == pytest.approx(kr.cv_loo(ours.astype(float), kr._est_loc_linear),
                                      rel=1e-9)


@pytest.mark.parametrize("reg_type, error, match", [
    ("lq", ValueError, "unknown reg_type 'lq'"),
    (2 ** 40, ValueError, r"reg_type.*out of range"),
    (2.5, TypeError, r"reg_type.*integer"),
    (3, nwattn.NWAttnError, "estimator"),
    (-1, nwattn.NWAttnError, "estimator"),
])
def test_bad_reg_type(reg_type, error, match):
    x, y = mixed_data(n=20)
    with pytest.raises(error, match=match):
        nwattn.mixed_predict(x[:2], x, y, BW, "cuo", reg_type=reg_type)
    with pytest.raises(error, match=match):
        nwattn.mixed_cv(x, y, [BW], "cuo", reg_type=reg_type)
    with pytest.raises(error, match=match):
        nwattn.mixed_select_bandwidth(x, y, "cuo", reg_type=reg_type)

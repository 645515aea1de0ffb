"""Mixed data (issue 15): continuous, unordered and ordered columns against statsmodels'
KernelReg(var_type, reg_type='lc') and KDEMultivariate(var_type): predictions, CV and
densities to 1e-6 at the same bandwidths, the likelihood CV objective, bandwidth selection
over all columns, integer weights as repeated rows, argument checks."""
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

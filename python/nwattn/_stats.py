"""Statistics of a kernel regression fit, computed by the C library in double: observation
weights, fit summaries (R², effective degrees of freedom, leave-one-out CV), pointwise standard
errors (homoscedastic or heteroscedastic), derivatives (local linear slopes, local constant
derivatives) with their standard errors, wild bootstrap bands (pointwise and simultaneous,
reproducible by seed), and Gaussian kernel densities with their CV objectives.

One response per call: y is (n,). x is (n, d) or (n,); queries (m, d) or (m,). ``weights`` are
observation weights (frequency weights: an integer weight equals repeated rows). The C header
(include/nwattn.h, "Inference") states every formula.
"""
import collections
import ctypes
import enum
import math

import numpy as np

from ._capi import C, Regression, enum_value, size, uint64
from ._context import resolve
from ._errors import check
from ._regression import _model as _regression_model


class Variance(enum.IntEnum):
    HOMOSCEDASTIC = 0
    HETEROSCEDASTIC = 1


class _FitSummary(ctypes.Structure):
    """struct nwattn_fit_summary"""

    _fields_ = [("r2", ctypes.c_double), ("r2_corr", ctypes.c_double),
                ("dof", ctypes.c_double), ("dof_resid", ctypes.c_double),
                ("sigma2", ctypes.c_double), ("rss", ctypes.c_double), ("cv", ctypes.c_double),
                ("flagged_rows", ctypes.c_size_t)]


FitSummary = collections.namedtuple(
    "FitSummary", "r2 r2_corr dof dof_resid sigma2 rss cv flagged_rows fitted leverage")
Inference = collections.namedtuple("Inference", "fit se deriv deriv_se row_flags")
Bands = collections.namedtuple("Bands", "lower upper sim_lower sim_upper")
TBands = collections.namedtuple("TBands", "lower upper sim_lower sim_upper crit sim_crit")

def _model(kernel, degree):
    return _regression_model(kernel, degree, "nan")


def _floats(a, name, ndim):
    arr = np.asarray(a)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real array, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if ndim == 2:
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError(f"{name}: expected shape (n,) or (n, d), got {arr.shape}")
    elif arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension(s), got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def _data(x, y, weights):
    xa = _floats(x, "x", 2)
    n, d = xa.shape
    ya = _floats(y, "y", 1)
    if ya.shape[0] != n:
        raise ValueError(f"x has {n} points but y has {ya.shape[0]}")
    wa = None
    if weights is not None:
        wa = _floats(weights, "weights", 1)
        if wa.shape[0] != n:
            raise ValueError(f"x has {n} points but weights has {wa.shape[0]}")
    return xa, ya, wa, n, d


def _bw(bandwidth, d):
    bw = np.asarray(bandwidth, dtype=np.float32).reshape(-1)
    if bw.size == 1:
        bw = np.repeat(bw, d)
    if bw.size != d:
        raise ValueError(f"bandwidth: expected 1 or d = {d} values, got {bw.size}")
    return np.ascontiguousarray(bw)


def _queries(xq, d):
    q = _floats(xq, "xq", 2)
    if q.shape[1] != d:
        if d == 1 and q.shape[0] == 1:
            q = np.ascontiguousarray(q.T)
        else:
            raise ValueError(f"xq: expected {d} columns (d of x), got shape {q.shape}")
    return q


def _ptr(a):
    return None if a is None else a.ctypes.data


def nw_summary(x, y, bandwidth, *, kernel="gaussian", degree="constant", weights=None,
               ctx=None):
    """``nwattn_nw_summary``: R² (1 - RSS/TSS and statsmodels' squared correlation), effective
    degrees of freedom tr L, the residual degrees of freedom and variance, the leave-one-out CV
    score (with weights), the fitted values and leverages."""
    ctx = resolve(ctx)
    xa, ya, wa, n, d = _data(x, y, weights)
    bw = _bw(bandwidth, d)
    model = _model(kernel, degree)
    out = _FitSummary()
    fitted = np.empty(n, np.float32)
    leverage = np.empty(n, np.float64)
    h = ctx.handle
    check(C.nwattn_nw_summary(h, ctypes.byref(model), bw.ctypes.data, n, d, xa.ctypes.data, d,
                              ya.ctypes.data, _ptr(wa), ctypes.addressof(out), fitted.ctypes.data,
                              leverage.ctypes.data), h, "nwattn_nw_summary")
    return FitSummary(out.r2, out.r2_corr, out.dof, out.dof_resid, out.sigma2, out.rss, out.cv,
                      out.flagged_rows, fitted, leverage)


def nw_inference(xq, x, y, bandwidth, *, kernel="gaussian", degree="constant", weights=None,
                 variance="homoscedastic", ctx=None):
    """``nwattn_nw_inference``: fit, standard errors, derivatives d yhat / d x_k (local linear:
    slopes; local constant: derivative of the ratio) and their standard errors at the queries.
    Arrays: fit, se (m,), deriv, deriv_se (m, d), row_flags (m,) uint8."""
    ctx = resolve(ctx)
    xa, ya, wa, n, d = _data(x, y, weights)
    bw = _bw(bandwidth, d)
    q = _queries(xq, d)
    m = q.shape[0]
    var = enum_value(Variance, variance, "variance")
    fit, se = np.empty(m), np.empty(m)
    deriv, deriv_se = np.empty((m, d)), np.empty((m, d))
    flags = np.empty(m, np.uint8)
    model = _model(kernel, degree)
    h = ctx.handle
    check(C.nwattn_nw_inference(h, ctypes.byref(model), bw.ctypes.data, n, d, xa.ctypes.data, d,
                                ya.ctypes.data, _ptr(wa), var, m, q.ctypes.data, d,
                                fit.ctypes.data, se.ctypes.data, deriv.ctypes.data, d,
                                deriv_se.ctypes.data, d, flags.ctypes.data), h,
          "nwattn_nw_inference")
    return Inference(fit, se, deriv, deriv_se, flags)


def nw_bootstrap_bands(xq, x, y, bandwidth, *, kernel="gaussian", degree="constant",
                       weights=None, replicates=999, seed=0, level=0.95, method="percentile",
                       ctx=None):
    """Wild (Rademacher) bootstrap bands at the queries: pointwise (lower, upper) and
    simultaneous over all queries (sim_lower, sim_upper). The same seed gives the same bands
    on every platform, and both methods the same draws.

    ``method="percentile"`` (``nwattn_nw_bootstrap_bands``): quantiles of the bootstrap fits;
    returns :class:`Bands`. ``method="studentized"`` (``nwattn_nw_bootstrap_t_bands``,
    bootstrap-t): fit ± crit · se with se the HC3 standard error and crit the quantile of
    each replicate's |fit deviation / its own HC3 standard error|; returns :class:`TBands`,
    with the pointwise critical values crit (m,) and the simultaneous one sim_crit (float).
    The studentized bands cover closer to the nominal level (docs/regression.md)."""
    if method not in ("percentile", "studentized"):
        raise ValueError(f"method must be 'percentile' or 'studentized', not {method!r}")
    ctx = resolve(ctx)
    xa, ya, wa, n, d = _data(x, y, weights)
    bw = _bw(bandwidth, d)
    q = _queries(xq, d)
    m = q.shape[0]
    replicates = size(replicates, "replicates", minimum=2)
    seed = uint64(seed, "seed")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level = {level} is not in (0, 1)")
    outs = [np.empty(m) for _ in range(4)]
    model = _model(kernel, degree)
    h = ctx.handle
    if method == "studentized":
        crit, sim_crit = np.empty(m), ctypes.c_double()
        check(C.nwattn_nw_bootstrap_t_bands(h, ctypes.byref(model), bw.ctypes.data, n, d,
                                            xa.ctypes.data, d, ya.ctypes.data, _ptr(wa), m,
                                            q.ctypes.data, d, replicates, seed, level,
                                            *(o.ctypes.data for o in outs), crit.ctypes.data,
                                            ctypes.addressof(sim_crit)), h,
              "nwattn_nw_bootstrap_t_bands")
        return TBands(*outs, crit, sim_crit.value)
    check(C.nwattn_nw_bootstrap_bands(h, ctypes.byref(model), bw.ctypes.data, n, d,
                                      xa.ctypes.data, d, ya.ctypes.data, _ptr(wa), m,
                                      q.ctypes.data, d, replicates, seed, level,
                                      *(o.ctypes.data for o in outs)), h,
          "nwattn_nw_bootstrap_bands")
    return Bands(*outs)


def kde(xq, x, bandwidth, *, weights=None, ctx=None):
    """``nwattn_kde``: the Gaussian product-kernel density at the queries, (m,) float64."""
    ctx = resolve(ctx)
    xa = _floats(x, "x", 2)
    n, d = xa.shape
    wa = None if weights is None else _floats(weights, "weights", 1)
    if wa is not None and wa.shape[0] != n:
        raise ValueError(f"x has {n} points but weights has {wa.shape[0]}")
    bw = _bw(bandwidth, d)
    q = _queries(xq, d)
    out = np.empty(q.shape[0])
    h = ctx.handle
    check(C.nwattn_kde(h, bw.ctypes.data, q.shape[0], n, d, q.ctypes.data, d, xa.ctypes.data, d,
                       _ptr(wa), out.ctypes.data), h, "nwattn_kde")
    return out


def kde_cv(x, bandwidths, *, weights=None, ctx=None):
    """``nwattn_kde_cv``: (lscv, loglik) at each row of bandwidths ((k, d) or (k,) for d = 1):
    least-squares CV (minimise) and the mean leave-one-out log density (maximise)."""
    ctx = resolve(ctx)
    xa = _floats(x, "x", 2)
    n, d = xa.shape
    wa = None if weights is None else _floats(weights, "weights", 1)
    if wa is not None and wa.shape[0] != n:
        raise ValueError(f"x has {n} points but weights has {wa.shape[0]}")
    bws = np.ascontiguousarray(np.asarray(bandwidths, dtype=np.float32).reshape(-1, d))
    k = bws.shape[0]
    lscv, loglik = np.empty(k), np.empty(k)
    h = ctx.handle
    check(C.nwattn_kde_cv(h, k, bws.ctypes.data, d, n, d, xa.ctypes.data, d, _ptr(wa),
                          lscv.ctypes.data, loglik.ctypes.data), h, "nwattn_kde_cv")
    return lscv, loglik


def _minimise_log(objective, start):
    """Nelder-Mead on log h from start (as statsmodels' KDEMultivariate searches), needs scipy."""
    from scipy import optimize  # optional dependency of the selection helpers only
    res = optimize.minimize(lambda t: objective(np.exp(t)), np.log(start), method="Nelder-Mead",
                            options={"xatol": 1e-6, "fatol": 1e-12, "maxiter": 2000})
    return np.exp(res.x)


def _normal_reference(xa):
    n, d = xa.shape
    return 1.06 * xa.astype(np.float64).std(axis=0, ddof=1) * n ** (-1.0 / (4 + d))


def kde_select_bandwidth(x, *, method="cv_ls", weights=None, start=None, ctx=None):
    """Bandwidths (d,) minimising least-squares CV (``method="cv_ls"``) or maximising the
    leave-one-out likelihood (``"cv_ml"``), from the normal-reference rule (statsmodels'
    default start). Needs scipy (Nelder-Mead on log h)."""
    xa = _floats(x, "x", 2)
    if method not in ("cv_ls", "cv_ml"):
        raise ValueError(f"method must be 'cv_ls' or 'cv_ml', not {method!r}")
    start = _normal_reference(xa) if start is None else np.asarray(start, float).reshape(-1)
    col = 0 if method == "cv_ls" else 1
    sign = 1.0 if method == "cv_ls" else -1.0

    def objective(h):
        if not np.all(np.isfinite(h)) or np.any(h <= 0) or np.any(h > 1e30):
            return math.inf
        v = kde_cv(xa, h[None, :].astype(np.float32), weights=weights, ctx=ctx)[col][0]
        return sign * v if np.isfinite(v) else math.inf

    return _minimise_log(objective, start).astype(np.float32)


def nw_select_bandwidth_weighted(x, y, weights, *, kernel="gaussian", degree="constant",
                                 start=None, ctx=None):
    """Bandwidths (d,) float32 minimising the weighted leave-one-out CV of :func:`nw_summary`:
    ``nwattn_nw_select_bandwidth_weighted`` (the C search of :func:`nwattn.select_bandwidth`
    on the weighted CV; ``select_bandwidth(x, y, weights=...)`` returns its full report)."""
    from ._regression import select_bandwidth
    return select_bandwidth(x, y, kernel=kernel, degree=degree, start=start, weights=weights,
                            ctx=ctx).bandwidths

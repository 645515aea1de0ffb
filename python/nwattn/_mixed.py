"""Mixed data (issue 15): continuous, unordered and ordered categorical columns in one product
kernel, as statsmodels' ``var_type`` strings ('c', 'u', 'o') and R's np: local constant and
local linear regression, their leave-one-out CV and bandwidth selection over all columns, and
the density with its likelihood CV. Categorical columns hold integer codes; their bandwidths
are lambda in [0, 1]. include/nwattn.h ("Mixed data") states the kernels and estimators.

``reg_type``: ``'lc'`` local constant; ``'ll'`` local linear with slopes in the continuous
columns only (R np's ``npreg(regtype="ll")``; the categorical columns are smoothed by their
kernels); ``'ll_all'`` local linear with slopes in every column, category codes included
(statsmodels' ``KernelReg(reg_type='ll')``, for parity). Or a :class:`MixedEstimator`.
"""
import ctypes
import enum
import math

import numpy as np

from ._capi import C, enum_value
from ._context import resolve
from ._errors import check

# var_type letter -> nwattn_var_type; statsmodels' defaults for 'u' and 'o', np's Li-Racine
# variants as 'U' and 'O'
_TYPES = {"c": 0, "u": 1, "o": 2, "U": 3, "O": 4}


class MixedEstimator(enum.IntEnum):
    """nwattn_mixed_estimator"""
    LOCAL_CONSTANT = 0    # 'lc'
    LOCAL_LINEAR = 1      # 'll': slopes in the continuous columns (R np)
    LOCAL_LINEAR_ALL = 2  # 'll_all': slopes in every column, codes too (statsmodels)


_REG_TYPES = {"lc": "LOCAL_CONSTANT", "ll": "LOCAL_LINEAR", "ll_all": "LOCAL_LINEAR_ALL",
              "constant": "LOCAL_CONSTANT", "linear": "LOCAL_LINEAR"}


def _estimator(reg_type):
    """reg_type as a C int: 'lc', 'll', 'll_all', a MixedEstimator (or its name) or a number
    in int range (the C library refuses numbers that name no estimator)."""
    if isinstance(reg_type, str) and reg_type.lower() not in _REG_TYPES and \
            reg_type.upper() not in MixedEstimator.__members__:
        raise ValueError(f"unknown reg_type {reg_type!r}; expected 'lc' (local constant), 'll' "
                         "(local linear, slopes in the continuous columns: R np) or 'll_all' "
                         "(slopes in every column: statsmodels)")
    return enum_value(MixedEstimator, reg_type, "reg_type", _REG_TYPES)


def _types(var_type, d):
    if not isinstance(var_type, str) or len(var_type) != d:
        raise ValueError(f"var_type must be a string of d = {d} letters from 'cuoUO', got "
                         f"{var_type!r}")
    bad = [ch for ch in var_type if ch not in _TYPES]
    if bad:
        raise ValueError(f"var_type: unknown letter {bad[0]!r}; expected 'c', 'u', 'o' "
                         "(statsmodels' kernels) or 'U', 'O' (Li-Racine)")
    return np.array([_TYPES[ch] for ch in var_type], np.intc)


def _matrix(a, name):
    arr = np.asarray(a)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real array, got dtype {arr.dtype}")
    arr = np.asarray(arr, np.float32)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected shape (n,) or (n, d), got {arr.shape}")
    return np.ascontiguousarray(arr)


def _vector(a, name, n):
    if a is None:
        return None
    arr = np.ascontiguousarray(np.asarray(a, np.float32).reshape(-1))
    if arr.shape[0] != n:
        raise ValueError(f"{name}: expected {n} values, got {arr.shape[0]}")
    return arr


def _bw(bandwidth, d):
    bw = np.ascontiguousarray(np.asarray(bandwidth, np.float32).reshape(-1))
    if bw.size != d:
        raise ValueError(f"bandwidth: expected d = {d} values (one per column), got {bw.size}")
    return bw


def _ptr(a):
    return None if a is None else a.ctypes.data


def mixed_predict(xq, x, y, bandwidth, var_type, *, reg_type="lc", weights=None,
                  row_flags=False, ctx=None):
    """``nwattn_mixed_predict_estimator``: the fit at the queries, (m,) float64; with
    row_flags=True also the (m,) uint8 flags (:class:`RowFlag`: EMPTY rows are NaN, SINGULAR
    local linear rows took the local constant fit). reg_type: 'lc', 'll' (np) or 'll_all'
    (statsmodels), see the module's docstring."""
    ctx = resolve(ctx)
    est = _estimator(reg_type)
    xa = _matrix(x, "x")
    n, d = xa.shape
    types = _types(var_type, d)
    q = _matrix(xq, "xq")
    if q.shape[1] != d:
        raise ValueError(f"xq: expected {d} columns, got shape {q.shape}")
    ya, wa, bw = _vector(y, "y", n), _vector(weights, "weights", n), _bw(bandwidth, d)
    out = np.empty(q.shape[0])
    flags = np.zeros(q.shape[0], np.uint8) if row_flags else None
    h = ctx.handle
    check(C.nwattn_mixed_predict_estimator(h, types.ctypes.data, est, bw.ctypes.data,
                                           q.shape[0], n, d, q.ctypes.data, d, xa.ctypes.data, d,
                                           ya.ctypes.data, _ptr(wa), out.ctypes.data,
                                           _ptr(flags), None),
          h, "nwattn_mixed_predict_estimator")
    return (out, flags) if row_flags else out


def mixed_cv(x, y, bandwidths, var_type, *, reg_type="lc", weights=None, flagged=False,
             ctx=None):
    """``nwattn_mixed_cv_estimator``: leave-one-out CV at each row of bandwidths ((k, d));
    with flagged=True also the (k,) counts of leave-one-out rows flagged empty or singular."""
    ctx = resolve(ctx)
    est = _estimator(reg_type)
    xa = _matrix(x, "x")
    n, d = xa.shape
    types = _types(var_type, d)
    ya, wa = _vector(y, "y", n), _vector(weights, "weights", n)
    bws = np.ascontiguousarray(np.asarray(bandwidths, np.float32).reshape(-1, d))
    out = np.empty(bws.shape[0])
    counts = np.zeros(bws.shape[0], np.uintp) if flagged else None
    h = ctx.handle
    check(C.nwattn_mixed_cv_estimator(h, types.ctypes.data, est, bws.shape[0], bws.ctypes.data,
                                      d, n, d, xa.ctypes.data, d, ya.ctypes.data, _ptr(wa),
                                      out.ctypes.data, _ptr(counts)), h,
          "nwattn_mixed_cv_estimator")
    return (out, counts) if flagged else out


def mixed_kde(xq, x, bandwidth, var_type, *, weights=None, ctx=None):
    """``nwattn_mixed_kde``: (density at the queries (m,), mean leave-one-out log density)."""
    ctx = resolve(ctx)
    xa = _matrix(x, "x")
    n, d = xa.shape
    types = _types(var_type, d)
    q = _matrix(xq, "xq")
    if q.shape[1] != d:
        raise ValueError(f"xq: expected {d} columns, got shape {q.shape}")
    wa, bw = _vector(weights, "weights", n), _bw(bandwidth, d)
    out = np.empty(q.shape[0])
    ll = ctypes.c_double()
    h = ctx.handle
    check(C.nwattn_mixed_kde(h, types.ctypes.data, bw.ctypes.data, q.shape[0], n, d,
                             q.ctypes.data, d, xa.ctypes.data, d, _ptr(wa), out.ctypes.data,
                             ctypes.addressof(ll)), h, "nwattn_mixed_kde")
    return out, ll.value


def _start(xa, var_type):
    n, d = xa.shape
    start = 1.06 * xa.astype(np.float64).std(axis=0, ddof=1) * n ** (-1.0 / (4 + d))
    return np.array([s if t == "c" else 0.3 for s, t in zip(start, var_type)])


def mixed_select_bandwidth(x, y, var_type, *, reg_type="lc", weights=None, start=None,
                           ctx=None):
    """Bandwidths minimising :func:`mixed_cv` (of the estimator reg_type) over all columns
    (continuous h on log scale, categorical lambda through a logistic map onto its range),
    Nelder-Mead from the normal-reference rule (continuous) and lambda = 0.3 (categorical).
    Needs scipy."""
    from scipy import optimize  # optional dependency of the selection helper only
    _estimator(reg_type)
    xa = _matrix(x, "x")
    d = xa.shape[1]
    _types(var_type, d)
    cont = np.array([t == "c" for t in var_type])
    start = _start(xa, var_type) if start is None else np.asarray(start, float).reshape(-1)
    upper = np.array([1.0] * d)

    def to_bw(t):
        bw = np.empty(d)
        bw[cont] = np.exp(t[cont])
        bw[~cont] = upper[~cont] / (1 + np.exp(-t[~cont]))
        return bw

    t0 = np.where(cont, np.log(start), -np.log(upper / np.clip(start, 1e-6, None) - 1 + 1e-12))

    def objective(t):
        bw = to_bw(t)
        if not np.all(np.isfinite(bw)) or np.any(bw[cont] > 1e30) or np.any(bw[cont] <= 0):
            return math.inf
        return mixed_cv(xa, y, bw[None, :], var_type, reg_type=reg_type, weights=weights,
                        ctx=ctx)[0]

    res = optimize.minimize(objective, t0, method="Nelder-Mead",
                            options={"xatol": 1e-6, "fatol": 1e-12, "maxiter": 4000})
    return to_bw(res.x).astype(np.float32)

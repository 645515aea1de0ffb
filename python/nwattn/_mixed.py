"""Mixed data (issue 15): continuous, unordered and ordered categorical columns in one product
kernel, as statsmodels' ``var_type`` strings ('c', 'u', 'o') and R's np: local constant
regression, its leave-one-out CV and bandwidth selection over all columns, and the density
with its likelihood CV. Categorical columns hold integer codes; their bandwidths are
lambda in [0, 1]. include/nwattn.h ("Mixed data") states the kernels.
"""
import ctypes
import math

import numpy as np

from ._capi import C
from ._context import resolve
from ._errors import check

# var_type letter -> nwattn_var_type; statsmodels' defaults for 'u' and 'o', np's Li-Racine
# variants as 'U' and 'O'
_TYPES = {"c": 0, "u": 1, "o": 2, "U": 3, "O": 4}


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


def mixed_predict(xq, x, y, bandwidth, var_type, *, weights=None, ctx=None):
    """``nwattn_mixed_predict``: local constant fit at the queries, (m,) float64."""
    ctx = resolve(ctx)
    xa = _matrix(x, "x")
    n, d = xa.shape
    types = _types(var_type, d)
    q = _matrix(xq, "xq")
    if q.shape[1] != d:
        raise ValueError(f"xq: expected {d} columns, got shape {q.shape}")
    ya, wa, bw = _vector(y, "y", n), _vector(weights, "weights", n), _bw(bandwidth, d)
    out = np.empty(q.shape[0])
    h = ctx.handle
    check(C.nwattn_mixed_predict(h, types.ctypes.data, bw.ctypes.data, q.shape[0], n, d,
                                 q.ctypes.data, d, xa.ctypes.data, d, ya.ctypes.data, _ptr(wa),
                                 out.ctypes.data), h, "nwattn_mixed_predict")
    return out


def mixed_cv(x, y, bandwidths, var_type, *, weights=None, ctx=None):
    """``nwattn_mixed_cv``: leave-one-out CV at each row of bandwidths ((k, d))."""
    ctx = resolve(ctx)
    xa = _matrix(x, "x")
    n, d = xa.shape
    types = _types(var_type, d)
    ya, wa = _vector(y, "y", n), _vector(weights, "weights", n)
    bws = np.ascontiguousarray(np.asarray(bandwidths, np.float32).reshape(-1, d))
    out = np.empty(bws.shape[0])
    h = ctx.handle
    check(C.nwattn_mixed_cv(h, types.ctypes.data, bws.shape[0], bws.ctypes.data, d, n, d,
                            xa.ctypes.data, d, ya.ctypes.data, _ptr(wa), out.ctypes.data), h,
          "nwattn_mixed_cv")
    return out


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


def mixed_select_bandwidth(x, y, var_type, *, weights=None, start=None, ctx=None):
    """Bandwidths minimising :func:`mixed_cv` over all columns (continuous h on log scale,
    categorical lambda through a logistic map onto its range), Nelder-Mead from the
    normal-reference rule (continuous) and lambda = 0.3 (categorical). Needs scipy."""
    from scipy import optimize  # optional dependency of the selection helper only
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
        return mixed_cv(xa, y, bw[None, :], var_type, weights=weights, ctx=ctx)[0]

    res = optimize.minimize(objective, t0, method="Nelder-Mead",
                            options={"xatol": 1e-6, "fatol": 1e-12, "maxiter": 4000})
    return to_bw(res.x).astype(np.float32)

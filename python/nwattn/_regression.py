"""Nadaraya-Watson regression: predictions with seven kernels (local constant or linear),
exact leave-one-out cross-validation, bandwidth rules and selection, d2l's learnable-w model
with SGD training, weight diagnostics, and the library's deterministic RNG and data sets.

Data are one set per call (no batch axis): x is (n, d) or (n,) for d = 1, y is (n, dv) or (n,)
for dv = 1 (predictions are then 1-D too), queries are (m, d) or (m,).
"""
import collections
import ctypes
import enum

import numpy as np

from . import _arrays as A
from ._capi import (C, CvOptions, CvReport, Regression, Rng as _RngStruct, Sgd, enum_value, size,
                    uint64)
from ._context import handle_of
from ._fastpath import ext as _fast
from ._core import _MaskArgs
from ._errors import check


class Kernel(enum.IntEnum):
    GAUSSIAN = 0
    LAPLACE = 1
    EPANECHNIKOV = 2
    TRICUBE = 3
    UNIFORM = 4
    MATERN32 = 5  # (1 + r) e^-r, r = sqrt(t)
    MATERN52 = 6  # (1 + r + r^2/3) e^-r


class Degree(enum.IntEnum):
    LOCAL_CONSTANT = 0  # Nadaraya-Watson
    LOCAL_LINEAR = 1


class Empty(enum.IntEnum):
    """What a query with no training point in a compact kernel's support gets."""

    NEAREST = 0
    NAN = 1
    ZERO = 2


class RowFlag(enum.IntFlag):
    EMPTY = 1 << 0
    SINGULAR = 1 << 1


class BandwidthRule(enum.IntEnum):
    SILVERMAN = 0
    SCOTT = 1
    NORMAL_REFERENCE = 2


class Dataset(enum.IntEnum):
    D2L = 0  # x = 5·uniform sorted, y = 2 sin x + x^0.8 + 0.5·normal
    SINE = 1  # x = 10·uniform, y = sin x + 0.2·normal


_ALIASES = {"constant": "LOCAL_CONSTANT", "linear": "LOCAL_LINEAR", "nw": "LOCAL_CONSTANT",
            "normal": "NORMAL_REFERENCE", "sine": "SINE", "d2l": "D2L"}


def _enum(cls, value, name):
    # numbers in int range go to the C library, which refuses unknown ones
    return enum_value(cls, value, name, _ALIASES)


def _model(kernel, degree, empty):
    return Regression(_enum(Kernel, kernel, "kernel"), _enum(Degree, degree, "degree"),
                      _enum(Empty, empty, "empty"))


def _points(x, name):
    """(n, d) float32 operand from (n, d) or (n,); returns (array, rows, cols, was 1-D)."""
    arr = A.float_input(x, name, min_ndim=1)
    vector = arr.ndim == 1
    if vector:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected (n,) or (n, d), got shape {arr.shape}")
    op = A.input_operand(arr, (), name)
    return op, arr.shape[0], arr.shape[1], vector


def _bandwidths(h, d, name="bandwidth"):
    """One bandwidth for every dimension, or d of them, as a dense (d,) float32 array."""
    if type(h) is float:  # the common case, without numpy
        return np.full(d, h, A.F32)
    bw = A.float_input(h, name, min_ndim=0)
    if bw.ndim > 1:
        raise ValueError(f"{name}: shape {bw.shape}; give one value or d = {d} values "
                         "(one per feature)")
    if bw.size not in (1, d):
        raise ValueError(f"{name}: {bw.size} values given, expected 1 or d = {d} (one per "
                         "feature)")
    return np.ascontiguousarray(np.broadcast_to(bw.reshape(-1), (d,)))


def _double_out(shape):
    return np.empty(shape, np.float64)


def nw_predict(xq, x, y, bandwidth, *, kernel="gaussian", degree="constant", empty="nearest",
               weights=False, row_flags=False, out=None, ctx=None):
    """``nwattn_nw_predict``: the kernel regression estimate at the queries xq from (x, y).

    bandwidth: one value (every dimension) or d values. kernel: "gaussian", "laplace",
    "epanechnikov", "tricube", "uniform". degree: "constant" (Nadaraya-Watson) or "linear".
    empty: what queries outside every compact support get ("nearest", "nan", "zero").
    weights: True or an (m, n) float32 array for each query's weights on the training points.
    row_flags: True for an (m,) uint8 array of RowFlag bits (EMPTY, SINGULAR).
    Returns the predictions ((m,) for 1-D y, else (m, dv)), or a tuple with the extras
    requested in the order (predictions, weights, row_flags).
    """
    if _fast is not None:  # the compiled path (see _fastpath.py); NotImplemented: not plain
        r = _fast.nw_predict(xq, x, y, bandwidth, kernel, degree, empty, weights, row_flags, out,
                           ctx)
        if r is not NotImplemented:
            return r
    h = handle_of(ctx)
    xo, n, d, _ = _points(x, "x")
    qo, m, dq, _ = _points(xq, "xq")
    if dq != d:
        raise ValueError(f"xq has {dq} features but x has {d}")
    yo, ny, dv, y_vector = _points(y, "y")
    if ny != n:
        raise ValueError(f"x has {n} points but y has {ny}")
    bw = _bandwidths(bandwidth, d)
    model = _model(kernel, degree, empty)
    if out is not None and y_vector:
        if not isinstance(out, np.ndarray) or out.shape != (m,):
            raise ValueError(f"out: expected an array of shape ({m},)")
        oo = A.output_operand(out[:, None], (m, 1), "out")
        oo.array = out
    else:
        oo = A.output_operand(out, (m, dv), "out")
    wo = None
    if weights is not None and weights is not False:
        wo = A.output_operand(None if weights is True else weights, (m, n), "weights")
    flags = np.zeros(m, np.uint8) if row_flags else None
    check(C.nwattn_nw_predict(h, ctypes.byref(model), bw.ctypes.data, m, n, d, dv,
                              qo.ptr, qo.ld, xo.ptr, xo.ld, yo.ptr, yo.ld, oo.ptr, oo.ld,
                              wo.ptr if wo else None, wo.ld if wo else 0,
                              flags.ctypes.data if flags is not None else None, None), h,
          "nwattn_nw_predict")
    pred = oo.array if out is not None else (oo.array[:, 0] if y_vector else oo.array)
    extra = tuple(x for x in ((wo.array if wo else None), flags) if x is not None)
    return (pred,) + extra if extra else pred


def nw_cv(x, y, bandwidths, *, kernel="gaussian", degree="constant", gradient=False,
          flagged=False, ctx=None):
    """``nwattn_nw_cv``: the exact leave-one-out CV score (1/n) sum_i |y_i - yhat_{-i}|^2 of each
    bandwidth vector. bandwidths: a scalar or (n_bw,) grid when d = 1, a (d,) vector, or an
    (n_bw, d) grid. Returns cv (float64, (n_bw,); a float for a single bandwidth), plus the
    gradient dCV/dh ((n_bw, d)) and the flagged leave-one-out row counts if requested."""
    h = handle_of(ctx)
    xo, n, d, _ = _points(x, "x")
    yo, ny, dv, _ = _points(y, "y")
    if ny != n:
        raise ValueError(f"x has {n} points but y has {ny}")
    bw = A.float_input(bandwidths, "bandwidths", min_ndim=0)
    single = bw.ndim == 0 or (bw.ndim == 1 and d > 1)
    if bw.ndim <= 1 and d == 1:
        bw = bw.reshape(-1, 1)
    elif bw.ndim == 1:
        bw = bw[None, :]
    if bw.ndim != 2 or bw.shape[1] != d:
        raise ValueError(f"bandwidths: shape {np.shape(bandwidths)} does not give vectors of "
                         f"d = {d} bandwidths")
    bw = np.ascontiguousarray(bw)
    n_bw = bw.shape[0]
    model = _model(kernel, degree, "nearest")
    cv = _double_out((n_bw,))
    grad = _double_out((n_bw, d)) if gradient else None
    flags = np.zeros(n_bw, A.SIZE_T) if flagged else None
    check(C.nwattn_nw_cv(h, ctypes.byref(model), n, d, dv, xo.ptr, xo.ld, yo.ptr, yo.ld, n_bw,
                         bw.ctypes.data, d, cv.ctypes.data,
                         grad.ctypes.data if grad is not None else None, d,
                         flags.ctypes.data if flags is not None else None), h, "nwattn_nw_cv")
    result = (float(cv[0]) if single else cv,)
    if grad is not None:
        result += (grad[0] if single else grad,)
    if flags is not None:
        result += (int(flags[0]) if single else flags,)
    return result if len(result) > 1 else result[0]


def bandwidth_rule_of_thumb(x, rule="normal_reference", *, ctx=None):
    """``nwattn_bandwidth_rule_of_thumb``: "silverman", "scott" or "normal_reference"
    bandwidths, one per dimension of x ((d,) float32)."""
    h = handle_of(ctx)
    xo, n, d, _ = _points(x, "x")
    out = np.empty(d, A.F32)
    check(C.nwattn_bandwidth_rule_of_thumb(h, _enum(BandwidthRule, rule, "rule"), n, d, xo.ptr,
                                           xo.ld, out.ctypes.data), h,
          "nwattn_bandwidth_rule_of_thumb")
    return out


def _default_options():
    opts = CvOptions()
    C.nwattn_cv_options_default(ctypes.byref(opts))
    return opts


def cv_options_default():
    """``nwattn_cv_options_default``: the search's defaults, as a dict of keyword arguments of
    :func:`select_bandwidth`."""
    opts = _default_options()
    return {"grid_points": opts.grid_points, "scale_min": opts.scale_min,
            "scale_max": opts.scale_max, "start": None,
            "max_evaluations": opts.max_evaluations, "tolerance": opts.tolerance}


BandwidthSelection = collections.namedtuple(
    "BandwidthSelection", "bandwidths cv evaluations flagged_rows at_grid_edge converged "
                          "curve_scales curve_cv")


def select_bandwidth(x, y, *, kernel="gaussian", degree="constant", grid_points=None,
                     scale_min=None, scale_max=None, start=None, max_evaluations=None,
                     tolerance=None, weights=None, ctx=None):
    """``nwattn_nw_select_bandwidth``: bandwidths minimising the leave-one-out CV score (a log
    grid of grid_points scales of ``start`` from scale_min to scale_max, then refinement).
    None takes the C default (see :func:`cv_options_default`); start defaults to the
    normal-reference rule. Returns a BandwidthSelection: bandwidths ((d,) float32), cv,
    evaluations, flagged_rows, at_grid_edge (-1, 0, +1), converged, and the grid's CV curve
    (curve_scales, curve_cv).

    weights: observation weights, (n,) finite and >= 0
    (``nwattn_nw_select_bandwidth_weighted``: the weighted leave-one-out CV, frequency weights,
    the reference engine in double; weights all 1 are the unweighted search bit for bit)."""
    h = handle_of(ctx)
    xo, n, d, _ = _points(x, "x")
    yo, ny, dv, _ = _points(y, "y")
    if ny != n:
        raise ValueError(f"x has {n} points but y has {ny}")
    wa = None
    if weights is not None:
        wa = np.ascontiguousarray(A.float_input(weights, "weights", min_ndim=1))
        if wa.shape != (n,):
            raise ValueError(f"weights: expected shape ({n},) (one per point), got {wa.shape}")
    opts = _default_options()
    for field, value in (("grid_points", grid_points), ("max_evaluations", max_evaluations)):
        if value is not None:
            setattr(opts, field, size(value, field))
    for field, value in (("scale_min", scale_min), ("scale_max", scale_max),
                         ("tolerance", tolerance)):
        if value is not None:
            setattr(opts, field, float(value))
    # Zero fields mean "the default" in C, which then writes the default number of curve
    # points: size the curve from what C will use, never from the 0.
    points = opts.grid_points or _default_options().grid_points
    start_arr = None
    if start is not None:
        start_arr = _bandwidths(start, d, "start")
        opts.start = start_arr.ctypes.data
    model = _model(kernel, degree, "nearest")
    bw = np.empty(d, A.F32)
    report = CvReport()
    scales = np.empty(points, A.F32)
    curve = np.empty(points, np.float64)
    if wa is not None:
        check(C.nwattn_nw_select_bandwidth_weighted(
            h, ctypes.byref(model), n, d, dv, xo.ptr, xo.ld, yo.ptr, yo.ld, wa.ctypes.data,
            ctypes.byref(opts), bw.ctypes.data, ctypes.byref(report), scales.ctypes.data,
            curve.ctypes.data), h, "nwattn_nw_select_bandwidth_weighted")
    else:
        check(C.nwattn_nw_select_bandwidth(h, ctypes.byref(model), n, d, dv, xo.ptr, xo.ld,
                                           yo.ptr, yo.ld, ctypes.byref(opts), bw.ctypes.data,
                                           ctypes.byref(report), scales.ctypes.data,
                                           curve.ctypes.data), h, "nwattn_nw_select_bandwidth")
    return BandwidthSelection(bw, report.cv, report.evaluations, report.flagged_rows,
                              report.at_grid_edge, bool(report.converged), scales, curve)


WModelResult = collections.namedtuple("WModelResult", "yhat weights loss grad")


def wmodel_evaluate(w, xq, x, y, *, target=None, valid_lens=None, causal=False,
                    leave_one_out=False, additive=None, keep=None, weights=False, ctx=None):
    """``nwattn_wmodel_evaluate``: d2l's parametric model yhat_i = sum_j softmax_j(-((xq_i -
    x_j) w)^2 / 2) y_j at the queries; with ``target`` also d2l's loss
    sum (yhat - target)^2 / 2 and dL/dw. Mask keywords as in :func:`nwattn.softmax` (d2l
    trains with leave_one_out=True and xq = x). Returns WModelResult(yhat, weights or None,
    loss or None, grad or None); yhat is 1-D for 1-D y."""
    h = handle_of(ctx)
    xo, n, d, _ = _points(x, "x")
    qo, m, dq, _ = _points(xq, "xq")
    if dq != d:
        raise ValueError(f"xq has {dq} features but x has {d}")
    yo, ny, dv, y_vector = _points(y, "y")
    if ny != n:
        raise ValueError(f"x has {n} points but y has {ny}")
    to = None
    if target is not None:
        to, mt, dvt, _ = _points(target, "target")
        if (mt, dvt) != (m, dv):
            raise ValueError(f"target: shape {np.shape(target)}, expected ({m}, {dv}) or ({m},)")
    masks = _MaskArgs(m, n, valid_lens, causal, leave_one_out, additive, keep)
    mask, alive = masks.build(())
    yh = A.output_operand(None, (m, dv), "yhat")
    wo = A.output_operand(None if weights is True else weights, (m, n), "weights") \
        if weights is not None and weights is not False else None
    loss, grad = ctypes.c_double(), ctypes.c_double()
    check(C.nwattn_wmodel_evaluate(h, float(w), mask, m, n, d, dv, qo.ptr, qo.ld, xo.ptr,
                                   xo.ld, yo.ptr, yo.ld, to.ptr if to else None,
                                   to.ld if to else 0, yh.ptr, yh.ld,
                                   wo.ptr if wo else None, wo.ld if wo else 0,
                                   ctypes.byref(loss) if to else None,
                                   ctypes.byref(grad) if to else None), h,
          "nwattn_wmodel_evaluate")
    return WModelResult(yh.array[:, 0] if y_vector else yh.array, wo.array if wo else None,
                        loss.value if to else None, grad.value if to else None)


def wmodel_train(x, y, w, *, learning_rate, epochs, ctx=None):
    """``nwattn_wmodel_train``: d2l's training of w (leave-one-out on the training set, loss
    sum (yhat - y)^2 / 2, one SGD step per epoch). Returns (trained w, loss of each epoch as
    computed before its step, float64 array)."""
    h = handle_of(ctx)
    xo, n, d, _ = _points(x, "x")
    yo, ny, dv, _ = _points(y, "y")
    if ny != n:
        raise ValueError(f"x has {n} points but y has {ny}")
    epochs = size(epochs, "epochs")
    sgd = Sgd(learning_rate, epochs)
    w_c = ctypes.c_float(w)
    losses = np.empty(epochs, np.float64)
    check(C.nwattn_wmodel_train(h, ctypes.byref(sgd), n, d, dv, xo.ptr, xo.ld, yo.ptr, yo.ld,
                                ctypes.byref(w_c), losses.ctypes.data), h,
          "nwattn_wmodel_train")
    return w_c.value, losses


def weights_diagnostics(weights, *, ctx=None):
    """``nwattn_weights_diagnostics``: for each row of non-negative weights (m, n), the entropy
    of the normalised row (nats) and the effective number of neighbours. Returns (entropy,
    n_eff), float32 (m,) each."""
    h = handle_of(ctx)
    wo = A.input_operand(A.float_input(weights, "weights"), (), "weights")
    m, n = wo.array.shape
    entropy, n_eff = np.empty(m, A.F32), np.empty(m, A.F32)
    check(C.nwattn_weights_diagnostics(h, m, n, wo.ptr, wo.ld, entropy.ctypes.data,
                                       n_eff.ctypes.data), h, "nwattn_weights_diagnostics")
    return entropy, n_eff


class Rng:
    """The library's deterministic generator (``nwattn_rng``, SplitMix64): the same seed gives
    the same numbers as in C, on every platform."""

    def __init__(self, seed=0):
        self._struct = _RngStruct()
        self.seed(seed)

    def seed(self, seed):
        C.nwattn_rng_seed(ctypes.byref(self._struct), uint64(seed, "seed"))

    @property
    def state(self):
        return self._struct.state

    @state.setter
    def state(self, value):
        self._struct.state = uint64(value, "state")

    def next(self):
        """The next 64-bit value (``nwattn_rng_next``)."""
        return C.nwattn_rng_next(ctypes.byref(self._struct))

    def uniform(self, size=None):
        """Uniform on [0, 1) (``nwattn_rng_uniform``): a float, or an array of ``size``."""
        if size is None:
            return C.nwattn_rng_uniform(ctypes.byref(self._struct))
        return np.array([C.nwattn_rng_uniform(ctypes.byref(self._struct))
                         for _ in range(int(np.prod(size)))]).reshape(size)

    def normal(self, size=None):
        """Standard normal (``nwattn_rng_normal``): a float, or an array of ``size``."""
        if size is None:
            return C.nwattn_rng_normal(ctypes.byref(self._struct))
        return np.array([C.nwattn_rng_normal(ctypes.byref(self._struct))
                         for _ in range(int(np.prod(size)))]).reshape(size)

    def __repr__(self):
        return f"<nwattn.Rng state={self.state:#018x}>"


def dataset_generate(dataset, n, rng, *, ctx=None):
    """``nwattn_dataset_generate``: n pairs of "d2l" or "sine" (seed 1) data drawn from rng
    (an :class:`Rng`, advanced). Returns (x, y), float32 (n,) each."""
    h = handle_of(ctx)
    if not isinstance(rng, Rng):
        raise TypeError(f"rng: expected nwattn.Rng, got {type(rng).__name__}")
    n = size(n, "n")
    x, y = np.empty(n, A.F32), np.empty(n, A.F32)
    check(C.nwattn_dataset_generate(h, _enum(Dataset, dataset, "dataset"),
                                    ctypes.byref(rng._struct), n, x.ctypes.data, y.ctypes.data),
          h, "nwattn_dataset_generate")
    return x, y


def dataset_truth(dataset, x, *, ctx=None):
    """``nwattn_dataset_truth``: the data set's noise-free function at x (float32, x's length)."""
    h = handle_of(ctx)
    xs = np.ascontiguousarray(A.float_input(x, "x", min_ndim=1).ravel())
    f = np.empty(xs.shape, A.F32)
    check(C.nwattn_dataset_truth(h, _enum(Dataset, dataset, "dataset"), xs.size,
                                 xs.ctypes.data, f.ctypes.data), h, "nwattn_dataset_truth")
    return f

"""nwattn.mpi: libnwattn_mpi through an mpi4py communicator (``import nwattn.mpi``).

Needs mpi4py (Debian: python3-mpi4py) and libnwattn_mpi.so.0, found as
``NWATTN_MPI_LIBRARY`` (a path to the library or its directory), else through the dynamic
loader, else next to the libnwattn this package loaded (its directory, or ``../mpi/`` of a
build tree). Every function is collective over ``comm``: call it on every rank. Errors are
collective too: every rank raises :class:`nwattn.NWAttnError` with the same status and
message (``err.rank`` says which rank failed). Shapes are 2-D (no batch axes); the C header
``nwattn_mpi.h`` and docs/mpi.md are the reference.
"""
import ctypes
import os
import pathlib
from ctypes import c_int, c_size_t, c_uint, c_void_p

import numpy as np
from mpi4py import MPI

from . import _arrays as A
from ._capi import Mask, c_int_value, library_path, size
from ._context import resolve
from ._core import make_score
from ._errors import NWAttnError
from ._capi import CvOptions, CvReport
from ._regression import BandwidthSelection, _default_options, _model

ENV_VAR = "NWATTN_MPI_LIBRARY"
SONAME = "libnwattn_mpi.so.0"
ERR_COMM = 64  # NWATTN_MPI_ERR_COMM


def _load():
    tried = []
    override = os.environ.get(ENV_VAR)
    candidates = []
    if override:
        path = pathlib.Path(override)
        candidates.append(str(path / SONAME if path.is_dir() else path))
    else:
        candidates.append(SONAME)
        core_dir = pathlib.Path(library_path).resolve().parent if os.path.sep in \
            str(library_path) else None
        if core_dir is not None:
            candidates += [str(core_dir / SONAME), str(core_dir.parent / "mpi" / SONAME)]
    for target in candidates:
        try:
            return ctypes.CDLL(target), target
        except OSError as exc:
            tried.append(f"  {target}: {exc}")
    raise ImportError("nwattn.mpi: libnwattn_mpi could not be loaded; tried:\n" +
                      "\n".join(tried))


lib, mpi_library_path = _load()

# MPI_Comm is a pointer in Open MPI and an int in MPICH: mpi4py knows its size.
comm_t = c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(c_void_p) else c_int
S, F = c_size_t, c_void_p


class Error(ctypes.Structure):
    """struct nwattn_mpi_error"""

    _fields_ = [("status", c_int), ("rank", c_int), ("message", ctypes.c_char * 256)]


_PROTOTYPES = {
    "nwattn_mpi_pool_sharded_keys": (c_int, (c_void_p, comm_t, c_int, c_void_p, c_void_p,
                                             S, S, S, S, S, F, S, S, F, S, S, F, S, S, F, S, S,
                                             F, S, ctypes.POINTER(Error))),
    "nwattn_mpi_ring_attention": (c_int, (c_void_p, comm_t, c_void_p, c_uint, c_int, S, S, S,
                                          F, S, F, S, F, S, F, S, F, ctypes.POINTER(Error))),
    "nwattn_mpi_ulysses_attention": (c_int, (c_void_p, comm_t, c_void_p, c_uint, S, S, S, S,
                                             F, S, F, S, F, S, F, S, ctypes.POINTER(Error))),
    "nwattn_mpi_nw_predict": (c_int, (c_void_p, comm_t, c_void_p, F, S, S, S, S, F, S, F, S,
                                      F, S, F, S, F, S, F, F, ctypes.POINTER(Error))),
    "nwattn_mpi_nw_cv": (c_int, (c_void_p, comm_t, c_void_p, S, S, S, F, S, F, S, S, F, S,
                                 F, F, S, F, ctypes.POINTER(Error))),
    "nwattn_mpi_nw_select_bandwidth": (c_int, (c_void_p, comm_t, c_void_p, S, S, S, F, S, F, S,
                                               ctypes.POINTER(CvOptions), F,
                                               ctypes.POINTER(CvReport), F, F,
                                               ctypes.POINTER(Error))),
    "nwattn_mpi_zigzag_chunks": (c_int, (S, c_int, c_int, ctypes.POINTER(S),
                                         ctypes.POINTER(S))),
    "nwattn_mpi_version_number": (c_uint, ()),
}
for _name, (_res, _args) in _PROTOTYPES.items():
    _fn = getattr(lib, _name)
    _fn.restype, _fn.argtypes = _res, list(_args)

REDUCTIONS = {"auto": 0, "user_op": 1, "max_then_sum": 2}
LAYOUTS = {"contiguous": 0, "zigzag": 1}


def _choice(table, value, name):
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError(f"unknown {name} {value!r}; expected one of "
                         f"{', '.join(map(repr, table))}") from None


def _handle(comm):
    if not isinstance(comm, MPI.Comm):
        raise TypeError(f"comm must be an mpi4py communicator, not {type(comm).__name__}")
    return comm_t(MPI._handleof(comm))


def _raise(status, err, function):
    if status != 0:
        exc = NWAttnError(status, err.message.decode(errors="replace"), function)
        exc.rank = err.rank
        raise exc


def _rows(x, name, cols=None):
    arr = np.ascontiguousarray(A.float_input(x, name))
    if arr.ndim != 2:
        raise ValueError(f"{name}: a 2-D array (rows, features), not shape {arr.shape}")
    if cols is not None and arr.shape[1] != cols:
        raise ValueError(f"{name}: {arr.shape[1]} columns, expected {cols}")
    return arr


def pool_sharded_keys(q, k, v, comm, *, score="dot", scale=None, bandwidth=None,
                      bandwidths=None, causal=False, leave_one_out=False, reduction="auto",
                      lse=False, ctx=None):
    """``nwattn_mpi_pool_sharded_keys``: q (m, d) the same on every rank, this rank's keys k
    (n_local, d) and values v (n_local, dv), in rank order. Returns O (m, dv) — the pooling
    over every rank's keys, on every rank — or (O, lse) with ``lse=True``. Causal and
    leave-one-out masks count global key positions."""
    ctx = resolve(ctx)
    q = _rows(q, "q")
    m, d = q.shape
    k = _rows(k, "k", d)
    v = np.ascontiguousarray(A.float_input(v, "v"))
    if v.ndim != 2 or v.shape[0] != k.shape[0]:
        raise ValueError(f"v: shape {v.shape}, expected ({k.shape[0]}, dv)")
    dv = v.shape[1]
    sc, alive = make_score(score, scale, bandwidth, bandwidths, d)
    flags = (2 if causal else 0) | (1 if leave_one_out else 0)
    mask = Mask(flags, None, None, 0, 0, None, 0, 0)
    o = np.zeros((m, dv), np.float32)
    lse_out = np.zeros(m, np.float32)
    err = Error()
    status = lib.nwattn_mpi_pool_sharded_keys(
        ctx.handle, _handle(comm), _choice(REDUCTIONS, reduction, "reduction"), ctypes.byref(sc),
        ctypes.byref(mask), 1, m, k.shape[0], d, dv, q.ctypes.data, d, 0,
        k.ctypes.data, d, 0, v.ctypes.data, max(dv, 1), 0, o.ctypes.data, max(dv, 1), 0,
        lse_out.ctypes.data, 0, ctypes.byref(err))
    del alive
    _raise(status, err, "nwattn_mpi_pool_sharded_keys")
    return (o, lse_out) if lse else o


def ring_attention(q, k, v, comm, *, score="dot", scale=None, bandwidth=None,
                   bandwidths=None, causal=False, leave_one_out=False, layout="contiguous",
                   lse=False, ctx=None):
    """``nwattn_mpi_ring_attention``: self-attention over a sequence sharded by positions;
    q, k (n_local, d) and v (n_local, dv) are this rank's rows (``layout`` "contiguous": rank
    order; "zigzag": the two chunks of :func:`zigzag_chunks`). Returns this rank's rows of O
    (n_local, dv), or (O, lse) with ``lse=True``."""
    ctx = resolve(ctx)
    q = _rows(q, "q")
    n, d = q.shape
    k = _rows(k, "k", d)
    v = np.ascontiguousarray(A.float_input(v, "v"))
    if k.shape[0] != n or v.ndim != 2 or v.shape[0] != n:
        raise ValueError("q, k and v must hold the same rows")
    dv = v.shape[1]
    sc, alive = make_score(score, scale, bandwidth, bandwidths, d)
    flags = (2 if causal else 0) | (1 if leave_one_out else 0)
    o = np.zeros((n, dv), np.float32)
    lse_out = np.zeros(n, np.float32)
    err = Error()
    status = lib.nwattn_mpi_ring_attention(
        ctx.handle, _handle(comm), ctypes.byref(sc), flags, _choice(LAYOUTS, layout, "layout"), n, d, dv,
        q.ctypes.data, d, k.ctypes.data, d, v.ctypes.data, max(dv, 1), o.ctypes.data,
        max(dv, 1), lse_out.ctypes.data, ctypes.byref(err))
    del alive
    _raise(status, err, "nwattn_mpi_ring_attention")
    return (o, lse_out) if lse else o


def ulysses_attention(q, k, v, comm, heads, *, score="dot", scale=None, bandwidth=None,
                      bandwidths=None, causal=False, leave_one_out=False, ctx=None):
    """``nwattn_mpi_ulysses_attention``: multi-head self-attention with the heads split over
    the ranks. q, k (n_local, heads·dh) and v (n_local, heads·dvh) are this rank's
    consecutive positions (rank order), head h in columns h·dh ...; heads must be a multiple
    of the rank count. Returns this rank's rows of the concatenated heads (n_local,
    heads·dvh). The score applies per head (d = dh; the dot score's default scale is
    1/sqrt(dh))."""
    ctx = resolve(ctx)
    q = _rows(q, "q")
    n, width = q.shape
    heads = size(heads, "heads", minimum=1)
    if width % heads:
        raise ValueError(f"q: {width} columns do not split into {heads} heads")
    k = _rows(k, "k", width)
    v = np.ascontiguousarray(A.float_input(v, "v"))
    if k.shape[0] != n or v.ndim != 2 or v.shape[0] != n or v.shape[1] % heads:
        raise ValueError("q, k and v must hold the same rows, v's columns split into heads")
    dh, dvh = width // heads, v.shape[1] // heads
    sc, alive = make_score(score, scale, bandwidth, bandwidths, dh)
    flags = (2 if causal else 0) | (1 if leave_one_out else 0)
    o = np.zeros((n, heads * dvh), np.float32)
    err = Error()
    status = lib.nwattn_mpi_ulysses_attention(
        ctx.handle, _handle(comm), ctypes.byref(sc), flags, heads, n, dh, dvh, q.ctypes.data,
        width, k.ctypes.data, width, v.ctypes.data, max(v.shape[1], 1), o.ctypes.data,
        max(heads * dvh, 1), ctypes.byref(err))
    del alive
    _raise(status, err, "nwattn_mpi_ulysses_attention")
    return o


def _xy(x, y):
    x = np.ascontiguousarray(A.float_input(x, "x", min_ndim=1), dtype=np.float32)
    x = x[:, None] if x.ndim == 1 else x
    y = np.ascontiguousarray(A.float_input(y, "y", min_ndim=1), dtype=np.float32)
    y = y[:, None] if y.ndim == 1 else y
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"x {x.shape} and y {y.shape}: the same number of rows, 1-D or 2-D")
    return x, y


def nw_predict(xq, x, y, bandwidth, comm, *, kernel="gaussian", degree="constant",
               empty="nearest", weights=False, row_flags=False, ctx=None):
    """``nwattn_mpi_nw_predict``: :func:`nwattn.nw_predict`'s estimate at the queries xq (m, d),
    the same on every rank, from every rank's training pairs (this rank's x (n_local, d), y
    (n_local, dv); 1-D arrays are one column). kernel, degree, empty as nwattn.nw_predict's
    (the same on every rank); bandwidth: one value or d. Returns yq (m, dv) on every rank;
    with ``weights=True`` (on every rank) also this rank's columns of the weights, (m,
    n_local) float32, and with ``row_flags=True`` the (m,) uint8 RowFlag bits, in the order
    (yq, weights, row_flags)."""
    ctx = resolve(ctx)
    x, y = _xy(x, y)
    n, d = x.shape
    xq = np.ascontiguousarray(A.float_input(xq, "xq", min_ndim=1), dtype=np.float32)
    xq = xq[:, None] if xq.ndim == 1 else xq
    if xq.ndim != 2 or xq.shape[1] != d:
        raise ValueError(f"xq: shape {xq.shape}, expected (m, {d})")
    h = np.ascontiguousarray(np.broadcast_to(
        np.reshape(np.asarray(bandwidth, np.float32), -1), (d,)), dtype=np.float32)
    model = _model(kernel, degree, empty)
    m, dv = xq.shape[0], y.shape[1]
    yq = np.zeros((m, dv), np.float32)
    w = np.zeros((m, n), np.float32) if weights else None
    flags = np.zeros(m, np.uint8) if row_flags else None
    err = Error()
    status = lib.nwattn_mpi_nw_predict(ctx.handle, _handle(comm), ctypes.byref(model),
                                       h.ctypes.data, m, n, d, dv, xq.ctypes.data, d,
                                       x.ctypes.data, d, y.ctypes.data, dv, yq.ctypes.data,
                                       dv, w.ctypes.data if w is not None else None,
                                       max(n, 1), flags.ctypes.data if flags is not None
                                       else None, None, ctypes.byref(err))
    _raise(status, err, "nwattn_mpi_nw_predict")
    extra = tuple(a for a in (w, flags) if a is not None)
    return (yq,) + extra if extra else yq


def nw_cv(x, y, bandwidths, comm, *, kernel="gaussian", degree="constant", gradient=False,
          flagged=False, ctx=None):
    """``nwattn_mpi_nw_cv``: the exact leave-one-out CV score for each bandwidth vector of
    ``bandwidths`` ((g, d), or (g,) when d == 1), with the training set sharded (this rank's
    x, y); kernel and degree as nwattn.nw_cv's. Returns g doubles, bit for bit the same on
    every rank; with ``gradient=True`` (on every rank) also the analytic dCV/dh, (g, d)
    doubles, and with ``flagged=True`` the (g,) flagged leave-one-out row counts, in the
    order (cv, grad, flagged)."""
    ctx = resolve(ctx)
    x, y = _xy(x, y)
    n, d = x.shape
    bw = np.ascontiguousarray(A.float_input(bandwidths, "bandwidths", min_ndim=1),
                              dtype=np.float32)
    bw = bw[:, None] if bw.ndim == 1 and d == 1 else bw
    if bw.ndim != 2 or bw.shape[1] != d:
        raise ValueError(f"bandwidths: shape {bw.shape}, expected (g, {d})")
    cv = np.zeros(bw.shape[0], np.float64)
    grad = np.zeros((bw.shape[0], d), np.float64) if gradient else None
    flags = np.zeros(bw.shape[0], np.uintp) if flagged else None
    model = _model(kernel, degree, "nearest")
    err = Error()
    status = lib.nwattn_mpi_nw_cv(ctx.handle, _handle(comm), ctypes.byref(model), n, d,
                                  y.shape[1], x.ctypes.data, d, y.ctypes.data, y.shape[1],
                                  bw.shape[0], bw.ctypes.data, d, cv.ctypes.data,
                                  grad.ctypes.data if gradient else None, d,
                                  flags.ctypes.data if flagged else None, ctypes.byref(err))
    _raise(status, err, "nwattn_mpi_nw_cv")
    extra = tuple(a for a in (grad, flags) if a is not None)
    return (cv,) + extra if extra else cv


def nw_select_bandwidth(x, y, comm, *, kernel="gaussian", degree="constant", grid_points=None,
                        scale_min=None, scale_max=None, start=None, max_evaluations=None,
                        tolerance=None, ctx=None):
    """``nwattn_mpi_nw_select_bandwidth``: :func:`nwattn.select_bandwidth` with the training set
    sharded (this rank's x, y; kernel, degree and options the same on every rank). Returns a
    nwattn.BandwidthSelection, bit for bit the same on every rank."""
    ctx = resolve(ctx)
    x, y = _xy(x, y)
    n, d = x.shape
    opts = _default_options()
    for field, value in (("grid_points", grid_points), ("max_evaluations", max_evaluations)):
        if value is not None:
            setattr(opts, field, size(value, field))
    for field, value in (("scale_min", scale_min), ("scale_max", scale_max),
                         ("tolerance", tolerance)):
        if value is not None:
            setattr(opts, field, float(value))
    start_arr = None
    if start is not None:
        start_arr = np.ascontiguousarray(np.reshape(np.asarray(start, np.float32), -1))
        if start_arr.shape != (d,):
            raise ValueError(f"start: {start_arr.size} values, expected {d}")
        opts.start = start_arr.ctypes.data
    points = opts.grid_points or _default_options().grid_points
    model = _model(kernel, degree, "nearest")
    bw = np.zeros(d, np.float32)
    report = CvReport()
    scales = np.zeros(points, np.float32)
    curve = np.zeros(points, np.float64)
    err = Error()
    status = lib.nwattn_mpi_nw_select_bandwidth(
        ctx.handle, _handle(comm), ctypes.byref(model), n, d, y.shape[1], x.ctypes.data, d,
        y.ctypes.data, y.shape[1], ctypes.byref(opts), bw.ctypes.data, ctypes.byref(report),
        scales.ctypes.data, curve.ctypes.data, ctypes.byref(err))
    _raise(status, err, "nwattn_mpi_nw_select_bandwidth")
    return BandwidthSelection(bw, report.cv, report.evaluations, report.flagged_rows,
                              report.at_grid_edge, bool(report.converged), scales, curve)


def zigzag_chunks(n_total, ranks, rank):
    """``nwattn_mpi_zigzag_chunks``: ((offset0, count0), (offset1, count1)) of ``rank``."""
    offsets, counts = (c_size_t * 2)(), (c_size_t * 2)()
    status = lib.nwattn_mpi_zigzag_chunks(size(n_total, "n_total"), c_int_value(ranks, "ranks"),
                                          c_int_value(rank, "rank"), offsets, counts)
    if status != 0:
        raise NWAttnError(status, f"zigzag_chunks({n_total}, {ranks}, {rank}): bad rank",
                          "nwattn_mpi_zigzag_chunks")
    return (offsets[0], counts[0]), (offsets[1], counts[1])

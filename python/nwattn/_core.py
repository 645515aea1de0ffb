"""The core primitives: scores, softmax, bmm, pool, average_pool.

Shapes follow the header with optional leading batch axes: Q is (*batch, m, d), K (*batch, n, d),
V (*batch, n, dv), scores and weights (*batch, m, n), O (*batch, m, dv). Batch axes broadcast
like numpy's (a single K, V shared by a batch of Q is passed with batch stride 0, no copy).
"""
import ctypes
import enum
import math

import numpy as np

from . import _arrays as A
from ._capi import C, Mask, Score, enum_value, size
from ._context import handle_of
from ._fastpath import ext as _fast
from ._errors import check


class ScoreKind(enum.IntEnum):
    """nwattn_score_kind"""

    DOT = 0  # scale · q·k
    GAUSSIAN = 1  # -|q - k|^2 / (2 h^2)
    LAPLACE = 2  # -|q - k| / h
    COSINE = 3  # scale · q·k / (|q| |k|)


class MaskFlag(enum.IntFlag):
    """The NWATTN_MASK_* bits."""

    LEAVE_ONE_OUT = 1 << 0
    CAUSAL = 1 << 1
    LENS_PER_ROW = 1 << 2


def _score_kind(kind):
    # unknown numbers in int range are the C library's to refuse (NWATTN_ERR_BAD_ENUM)
    return enum_value(ScoreKind, kind, "score")


def make_score(kind, scale, bandwidth, bandwidths, d):
    """The nwattn_score struct and the arrays it points to (kept alive by the caller)."""
    kind = _score_kind(kind)
    struct = Score(kind, 0.0, 0.0, None)
    keep = []
    if kind == ScoreKind.DOT:
        if bandwidth is not None or bandwidths is not None:
            raise ValueError("bandwidth/bandwidths apply to 'gaussian' and 'laplace' scores, "
                             "not 'dot' (did you mean score='gaussian'?)")
        struct.scale = (1.0 / math.sqrt(d) if d > 0 else 1.0) if scale is None else scale
    elif kind == ScoreKind.COSINE:
        if bandwidth is not None or bandwidths is not None:
            raise ValueError("bandwidth/bandwidths apply to 'gaussian' and 'laplace' scores, "
                             "not 'cosine'")
        struct.scale = 1.0 if scale is None else scale
    else:
        if scale is not None:
            raise ValueError("scale applies to the 'dot' and 'cosine' scores only")
        if bandwidths is not None:
            if bandwidth is not None:
                raise ValueError("give bandwidth or bandwidths, not both")
            bws = np.ascontiguousarray(A.float_input(bandwidths, "bandwidths", min_ndim=1))
            if bws.shape != (d,):
                raise ValueError(f"bandwidths: shape {bws.shape}, expected ({d},): one per "
                                 "feature")
            struct.bandwidths = bws.ctypes.data
            keep.append(bws)
        struct.bandwidth = 1.0 if bandwidth is None else bandwidth
    return struct, keep


class _MaskArgs:
    """The mask keywords of a call, converted; build() gives the nwattn_mask for a batch."""

    def __init__(self, m, n, valid_lens, causal, leave_one_out, additive, keep):
        self.m, self.n = m, n
        self.flags = (MaskFlag.CAUSAL if causal else 0) | \
                     (MaskFlag.LEAVE_ONE_OUT if leave_one_out else 0)
        self.valid_lens = None
        if valid_lens is not None:
            lens = np.asarray(valid_lens)
            if lens.dtype.kind not in "iu":
                raise TypeError(f"valid_lens: dtype {lens.dtype} is not an integer type")
            if lens.size and lens.min() < 0:
                raise ValueError("valid_lens: lengths must be >= 0")
            self.valid_lens = lens
        self.additive = self._matrix(additive, "additive", A.float_input)
        self.keep = self._matrix(keep, "keep", A.keep_input)

    def _matrix(self, x, name, convert):
        if x is None:
            return None
        arr = convert(x, name)
        if arr.shape[-2:] != (self.m, self.n):
            raise ValueError(f"{name}: matrix shape {arr.shape[-2:]}, expected "
                             f"({self.m}, {self.n}) (m queries × n keys)")
        return arr

    def batch_shapes(self):
        return [(name, arr.shape[:-2]) for name, arr in
                (("additive", self.additive), ("keep", self.keep)) if arr is not None]

    def build(self, batch_shape):
        """(pointer to an nwattn_mask or None, objects to keep alive)."""
        if not self.flags and self.valid_lens is None and self.additive is None \
                and self.keep is None:
            return None, []
        mask = Mask(int(self.flags), None, None, 0, 0, None, 0, 0)
        alive = [mask]
        if self.valid_lens is not None:
            lens = self.valid_lens
            per_row = lens.ndim == len(batch_shape) + 1
            target = tuple(batch_shape) + ((self.m,) if per_row else ())
            try:
                lens = np.broadcast_to(lens, target)
            except ValueError:
                raise ValueError(
                    f"valid_lens: shape {lens.shape} does not broadcast to {target} "
                    f"(batch shape {tuple(batch_shape)}: give one length per item, or one per "
                    "query row with the batch axes and m as its shape)") from None
            lens = np.ascontiguousarray(lens, dtype=A.SIZE_T)
            if per_row:
                mask.flags |= MaskFlag.LENS_PER_ROW
            mask.valid_lens = lens.ctypes.data
            alive.append(lens)
        if self.additive is not None:
            op = A.input_operand(self.additive, batch_shape, "additive")
            mask.additive, mask.ld_additive, mask.stride_additive = op.args
            alive.append(op)
        if self.keep is not None:
            op = A.input_operand(self.keep, batch_shape, "keep")
            mask.keep, mask.ld_keep, mask.stride_keep = op.args
            alive.append(op)
        return ctypes.byref(mask), alive


def _optional_output(request, shape, name, vector=False):
    """None for False/None, else an output Operand (allocated for True)."""
    if request is None or request is False:
        return None
    out = None if request is True else request
    return (A.vector_output if vector else A.output_operand)(out, shape, name)


_NULL_MATRIX = (None, 0, 0)


def scores(q, k, *, score="dot", scale=None, bandwidth=None, bandwidths=None, out=None,
           ctx=None):
    """``nwattn_scores``: the raw m×n scores score(Q, K), no mask.

    Args:
        q: queries, (*batch, m, d). k: keys, (*batch, n, d).
        score: "dot" (scale·q·k, scale defaults to 1/sqrt(d)), "gaussian"
            (-|q-k|^2 / (2 h^2)), "laplace" (-|q-k| / h) or "cosine"
            (scale·q·k / (|q| |k|), scale defaults to 1); h is ``bandwidth`` (default 1)
            or the per-feature ``bandwidths`` (d values).
        out: optional float32 array (*batch, m, n) to write into.
        ctx: a Context (default: this thread's).
    Returns: the scores, (*batch, m, n) float32.
    """
    if _fast is not None:  # the compiled path (see _fastpath.py); NotImplemented: not plain
        r = _fast.scores(q, k, score, scale, bandwidth, bandwidths, out, ctx)
        if r is not NotImplemented:
            return r
    h = handle_of(ctx)
    q = A.float_input(q, "q")
    k = A.float_input(k, "k")
    (m, d), (n, dk) = q.shape[-2:], k.shape[-2:]
    if dk != d:
        raise ValueError(f"q has d = {d} features but k has {dk}")
    batch = A.broadcast_batch([("q", q.shape[:-2]), ("k", k.shape[:-2])])
    sc, alive = make_score(score, scale, bandwidth, bandwidths, d)
    qo, ko = A.input_operand(q, batch, "q"), A.input_operand(k, batch, "k")
    so = A.output_operand(out, batch + (m, n), "out")
    check(C.nwattn_scores(h, ctypes.byref(sc), A.count(batch), m, n, d,
                          *qo.args, *ko.args, *so.args), h, "nwattn_scores")
    return so.array


def softmax(s, *, valid_lens=None, causal=False, leave_one_out=False, additive=None,
            keep=None, out=None, lse=None, ctx=None):
    """``nwattn_softmax``: row-wise masked softmax of scores s, (*batch, m, n).

    Mask keywords (all optional, combined; a masked key gets exactly zero weight, a fully
    masked row gives zeros and lse = -inf):
        valid_lens: integer lengths, keys j >= len are masked. Shape ``batch`` (one per item,
            lower-dimensional arrays broadcast) or ``batch + (m,)`` (one per query row).
        causal: keys j > i are masked. leave_one_out: key i is masked for query i.
        additive: (*batch, m, n) floats added to the scores (-inf masks).
        keep: (*batch, m, n) booleans, False masks.
    out: where to write the weights; ``out=s`` (a float32 array) is an in-place softmax.
    lse: True (allocate) or an array (*batch, m) for each row's log-sum-exp.
    Returns: the weights, or (weights, lse) when lse is requested.
    """
    if _fast is not None:  # the compiled path (see _fastpath.py); NotImplemented: not plain
        r = _fast.softmax(s, valid_lens, causal, leave_one_out, additive, keep, out, lse, ctx)
        if r is not NotImplemented:
            return r
    h = handle_of(ctx)
    s = A.float_input(s, "s")
    m, n = s.shape[-2:]
    masks = _MaskArgs(m, n, valid_lens, causal, leave_one_out, additive, keep)
    batch = A.broadcast_batch([("s", s.shape[:-2])] + masks.batch_shapes())
    mask, alive = masks.build(batch)
    so = A.input_operand(s, batch, "s")
    wo = A.output_operand(out, batch + (m, n), "out")
    lo = _optional_output(lse, batch + (m,), "lse", vector=True)
    check(C.nwattn_softmax(h, mask, A.count(batch), m, n, *so.args, *wo.args,
                           lo.ptr if lo else None, lo.stride if lo else 0), h,
          "nwattn_softmax")
    return (wo.array, lo.array) if lo else wo.array


def bmm(a, b, *, out=None, ctx=None):
    """``nwattn_bmm``: the batched product C = A·B (torch.bmm), A (*batch, m, k),
    B (*batch, k, n), C (*batch, m, n); batch axes broadcast."""
    if _fast is not None:  # the compiled path (see _fastpath.py); NotImplemented: not plain
        r = _fast.bmm(a, b, out, ctx)
        if r is not NotImplemented:
            return r
    h = handle_of(ctx)
    a = A.float_input(a, "a")
    b = A.float_input(b, "b")
    (m, kk), (kb, n) = a.shape[-2:], b.shape[-2:]
    if kb != kk:
        raise ValueError(f"a is (…, {m}, {kk}) but b is (…, {kb}, {n}): inner sizes differ")
    batch = A.broadcast_batch([("a", a.shape[:-2]), ("b", b.shape[:-2])])
    ao, bo = A.input_operand(a, batch, "a"), A.input_operand(b, batch, "b")
    co = A.output_operand(out, batch + (m, n), "out")
    check(C.nwattn_bmm(h, A.count(batch), m, n, kk, *ao.args, *bo.args, *co.args), h,
          "nwattn_bmm")
    return co.array


def pool(q, k, v, *, score="dot", scale=None, bandwidth=None, bandwidths=None,
         valid_lens=None, causal=False, leave_one_out=False, additive=None, keep=None,
         out=None, weights=None, lse=None, ctx=None):
    """``nwattn_pool``: O = softmax(score(Q, K) + mask) · V in one call.

    q (*batch, m, d), k (*batch, n, d), v (*batch, n, dv); score keywords as in
    :func:`scores`, mask keywords as in :func:`softmax`.
    out: optional (*batch, m, dv) array for O.
    weights: True or a (*batch, m, n) array to also get the attention weights (heatmaps).
    lse: True or a (*batch, m) array to also get each row's log-sum-exp.
    Returns: O, or a tuple (O, weights), (O, lse) or (O, weights, lse) with what was requested.
    """
    if _fast is not None:  # the compiled path (see _fastpath.py); NotImplemented: not plain
        r = _fast.pool(q, k, v, score, scale, bandwidth, bandwidths, valid_lens, causal,
                     leave_one_out, additive, keep, out, weights, lse, ctx)
        if r is not NotImplemented:
            return r
    h = handle_of(ctx)
    q = A.float_input(q, "q")
    k = A.float_input(k, "k")
    v = A.float_input(v, "v")
    (m, d), (n, dk), (nv, dv) = q.shape[-2:], k.shape[-2:], v.shape[-2:]
    if dk != d:
        raise ValueError(f"q has d = {d} features but k has {dk}")
    if nv != n:
        raise ValueError(f"k has n = {n} keys but v has {nv} values")
    masks = _MaskArgs(m, n, valid_lens, causal, leave_one_out, additive, keep)
    batch = A.broadcast_batch([("q", q.shape[:-2]), ("k", k.shape[:-2]),
                               ("v", v.shape[:-2])] + masks.batch_shapes())
    sc, alive = make_score(score, scale, bandwidth, bandwidths, d)
    mask, alive_mask = masks.build(batch)
    qo, ko, vo = (A.input_operand(x, batch, name) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    oo = A.output_operand(out, batch + (m, dv), "out")
    wo = _optional_output(weights, batch + (m, n), "weights")
    lo = _optional_output(lse, batch + (m,), "lse", vector=True)
    check(C.nwattn_pool(h, ctypes.byref(sc), mask, A.count(batch), m, n, d, dv,
                        *qo.args, *ko.args, *vo.args, *oo.args,
                        *(wo.args if wo else _NULL_MATRIX),
                        lo.ptr if lo else None, lo.stride if lo else 0), h, "nwattn_pool")
    extra = tuple(x.array for x in (wo, lo) if x is not None)
    return (oo.array,) + extra if extra else oo.array


def average_pool(v, m=None, *, valid_lens=None, causal=False, leave_one_out=False,
                 additive=None, keep=None, out=None, ctx=None):
    """``nwattn_average_pool``: every unmasked key gets the same weight, so each of the m
    output rows is the mean of the rows of v (*batch, n, dv) that its mask keeps.

    m: the number of queries (output rows); may be omitted when out is given.
    Mask keywords as in :func:`softmax` (additive values act on a zero score).
    Returns: O, (*batch, m, dv).
    """
    h = handle_of(ctx)
    v = A.float_input(v, "v")
    n, dv = v.shape[-2:]
    if m is None:
        if out is None:
            raise TypeError("average_pool: give m (the number of queries) or out")
        m = np.shape(out)[-2]
    m = size(m, "m")
    masks = _MaskArgs(m, n, valid_lens, causal, leave_one_out, additive, keep)
    batch = A.broadcast_batch([("v", v.shape[:-2])] + masks.batch_shapes())
    mask, alive = masks.build(batch)
    vo = A.input_operand(v, batch, "v")
    oo = A.output_operand(out, batch + (m, dv), "out")
    check(C.nwattn_average_pool(h, mask, A.count(batch), m, n, dv, *vo.args, *oo.args), h,
          "nwattn_average_pool")
    return oo.array

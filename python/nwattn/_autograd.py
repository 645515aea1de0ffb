"""Backward passes: the gradient functions of the C library for numpy.

numpy (always available, also as ``nwattn.pool_backward`` and ``nwattn.nw_predict_backward``):

- :func:`pool_backward` — ``nwattn_pool_backward``: dQ, dK, dV and the score parameter's
  gradient from the forward's O and lse and dO;
- :func:`attention_backward` — ``nwattn_attention_backward``: the attention layer's gradients;
- :func:`nw_predict_backward` — ``nwattn_nw_predict_backward``: dL/dh of a prediction.

The torch layer over them is ``nwattn.autograd`` (``_torch_layer.py``), imported on first use.
"""
import ctypes
import math

import numpy as np

from . import _arrays as A
from ._capi import AttentionGrads, AttentionParams, C, PoolGrads, PoolUpstream, size
from ._context import resolve
from ._core import ScoreKind, _MaskArgs, make_score
from ._errors import check
from ._fastpath import ext as _fast
from ._regression import _bandwidths, _model, _points
from ._transformer import _dense


def _unbroadcast(grad, shape):
    """Sums grad (*batch, r, c) over the batch axes that were broadcast to reach it from shape."""
    shape = tuple(shape)
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, s in enumerate(shape[:-2]) if s == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return np.ascontiguousarray(grad, dtype=A.F32)


def _additive_output(masks, batch, mask, alive_mask):
    """(mask, alive_mask, the d_additive output operand) for a call that asks for the additive
    mask's gradient: one (m, n) matrix where C sees one matrix for every item (it sums the
    items' gradients there), else one per item of the batch."""
    m, n = masks.m, masks.n
    shared = A.count(batch) > 1 and alive_mask[0].stride_additive == 0
    if shared and math.prod(masks.additive.shape[:-2]) != 1:
        # a stride-0 view with batch axes of its own: its items get their own gradients
        masks.additive = np.array(masks.additive, order="C", copy=True)
        mask, alive_mask = masks.build(batch)
        shared = False
    ds = A.output_operand(None, (m, n) if shared else tuple(batch) + (m, n), "d_additive")
    return mask, alive_mask, (ds, shared)


def _additive_result(out, masks):
    """d_additive shaped like the additive mask, summed over the batch axes it broadcast."""
    (ds, shared), shape = out, masks.additive.shape
    return ds.array.reshape(shape) if shared else _unbroadcast(ds.array, shape)


def pool_backward(q, k, v, o, lse, d_o, *, score="dot", scale=None, bandwidth=None,
                  bandwidths=None, valid_lens=None, causal=False, leave_one_out=False,
                  additive=None, keep=None, additive_grad=False, ctx=None):
    """``nwattn_pool_backward``: the gradients of a loss L through ``nwattn.pool``.

    q, k, v and the score and mask keywords as given to :func:`nwattn.pool`; o (*batch, m, dv)
    and lse (*batch, m) are what it returned (``lse=True``); d_o = dL/dO, shaped like o.
    Returns (dq, dk, dv, d_param): dq, dk, dv shaped like q, k, v (summed over the batch axes
    that were broadcast), d_param the gradient of the score's parameter as a float (scale, or
    the one bandwidth) or a (d,) array (per-dimension bandwidths).
    additive_grad=True (needs ``additive``) appends d_additive = dL/d(additive), shaped like
    additive and summed over the batch axes it was broadcast along (learned attention biases;
    masked entries, -inf ones among them, get exactly 0).
    """
    if additive_grad and additive is None:
        raise ValueError("additive_grad=True needs the additive mask (additive=...)")
    if _fast is not None and not additive_grad:  # the compiled path (see _fastpath.py)
        r = _fast.pool_backward(q, k, v, o, lse, d_o, score, scale, bandwidth, bandwidths,
                                valid_lens, causal, leave_one_out, additive, keep, ctx)
        if r is not NotImplemented:
            return r
    ctx = resolve(ctx)
    q, k, v = (A.float_input(x, name) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    (m, d), (n, _), (_, dv) = q.shape[-2:], k.shape[-2:], v.shape[-2:]
    masks = _MaskArgs(m, n, valid_lens, causal, leave_one_out, additive, keep)
    batch = A.broadcast_batch([("q", q.shape[:-2]), ("k", k.shape[:-2]),
                               ("v", v.shape[:-2])] + masks.batch_shapes())
    sc, alive = make_score(score, scale, bandwidth, bandwidths, d)
    mask, alive_mask = masks.build(batch)
    if additive_grad:
        mask, alive_mask, ds = _additive_output(masks, batch, mask, alive_mask)
    ops = [A.input_operand(x, batch, name) for x, name in ((q, "q"), (k, "k"), (v, "v"))]
    oo = A.input_operand(A.float_input(o, "o"), batch, "o")
    do = A.input_operand(A.float_input(d_o, "d_o"), batch, "d_o")
    lse = np.ascontiguousarray(np.broadcast_to(A.float_input(lse, "lse", min_ndim=1),
                                               tuple(batch) + (m,)))
    grads = [A.output_operand(None, tuple(batch) + shape, name) for shape, name in
             (((m, d), "dq"), ((n, d), "dk"), ((n, dv), "dv"))]
    per_dim = sc.bandwidths is not None and sc.kind in (ScoreKind.GAUSSIAN, ScoreKind.LAPLACE)
    d_param = np.zeros(d if per_dim else 1, A.F32)
    g = PoolGrads(*grads[0].args, *grads[1].args, *grads[2].args, None, None, None)
    if sc.kind in (ScoreKind.DOT, ScoreKind.COSINE):
        g.d_scale = d_param.ctypes.data
    elif per_dim:
        g.d_bandwidths = d_param.ctypes.data
    else:
        g.d_bandwidth = d_param.ctypes.data
    if additive_grad:
        g.d_additive, g.ld_d_additive, g.stride_d_additive = ds[0].args
    up = PoolUpstream(*oo.args, lse.ctypes.data, m, *do.args)
    h = ctx.handle
    check(C.nwattn_pool_backward(h, ctypes.byref(sc), mask, A.count(batch), m, n, d, dv,
                                 *ops[0].args, *ops[1].args, *ops[2].args, ctypes.byref(up),
                                 ctypes.byref(g)), h, "nwattn_pool_backward")
    dq, dk, dvv = (_unbroadcast(op.array, x.shape) for op, x in zip(grads, (q, k, v)))
    result = (dq, dk, dvv, (d_param if per_dim else float(d_param[0])))
    if additive_grad:
        result += (_additive_result(ds, masks),)
    return result


def attention_backward(x_q, x_k, x_v, dy, *, w_q, w_k, w_v, w_o=None, b_q=None, b_k=None,
                       b_v=None, b_o=None, heads=1, score="dot", scale=None, bandwidth=None,
                       bandwidths=None, valid_lens=None, causal=False, leave_one_out=False,
                       additive=None, keep=None, additive_grad=False, saved=None, ctx=None):
    """``nwattn_attention_backward``: the gradients of a loss through :func:`nwattn.attention`
    (same arguments; x_k and x_v must be given, pass x_q again for self-attention) from
    dy = dL/dY. Returns a dict with dx_q, dx_k, dx_v (shaped like the inputs, summed over
    broadcast batch axes), dw_q, dw_k, dw_v, db_q, db_k, db_v and, with w_o, dw_o and db_o,
    and d_score (the score's parameter: a float, or a (d,) array for per-dimension
    bandwidths: what a learnable temperature or kernel width needs). additive_grad=True
    (needs ``additive``) adds d_additive, the additive mask's gradient summed over the heads,
    shaped like additive. saved: the activations :func:`nwattn.attention` returned with
    save=True for these arguments (``nwattn_attention_backward_saved``: the forward is not run
    again; the same gradients, bit for bit)."""
    if additive_grad and additive is None:
        raise ValueError("additive_grad=True needs the additive mask (additive=...)")
    ctx = resolve(ctx)
    xs = [A.float_input(x, name) for x, name in ((x_q, "x_q"), (x_k, "x_k"), (x_v, "x_v"))]
    (t_q, d_q_in), (t_kv, d_k_in), (_, d_v_in) = (x.shape[-2:] for x in xs)
    w = {"w_q": _dense(w_q, "w_q"), "w_k": _dense(w_k, "w_k"), "w_v": _dense(w_v, "w_v"),
         "w_o": _dense(w_o, "w_o")}
    d_qk, d_v = w["w_q"].shape[0], w["w_v"].shape[0]
    d_out = d_v if w_o is None else w["w_o"].shape[0]
    b = {"b_q": _dense(b_q, "b_q", (d_qk,), 1), "b_k": _dense(b_k, "b_k", (d_qk,), 1),
         "b_v": _dense(b_v, "b_v", (d_v,), 1), "b_o": _dense(b_o, "b_o", (d_out,), 1)}

    def ptr(a):
        return None if a is None else a.ctypes.data

    heads = size(heads, "heads")  # 0 and heads not dividing d_qk, d_v: C refuses them
    params = AttentionParams(heads, d_q_in, d_k_in, d_v_in, d_qk, d_v, d_out,
                             *(ptr(w[n]) for n in ("w_q", "w_k", "w_v", "w_o")),
                             *(ptr(b[n]) for n in ("b_q", "b_k", "b_v", "b_o")))
    masks = _MaskArgs(t_q, t_kv, valid_lens, causal, leave_one_out, additive, keep)
    batch = A.broadcast_batch([(n, x.shape[:-2]) for n, x in zip(("x_q", "x_k", "x_v"), xs)]
                              + masks.batch_shapes())
    d_head = d_qk // heads if heads else 0
    sc, alive = make_score(score, scale, bandwidth, bandwidths, d_head)
    mask, alive_mask = masks.build(batch)
    if additive_grad:
        mask, alive_mask, ds = _additive_output(masks, batch, mask, alive_mask)
    ops = [A.input_operand(x, batch, n) for x, n in zip(xs, ("x_q", "x_k", "x_v"))]
    dyo = A.input_operand(A.float_input(dy, "dy"), batch, "dy")
    dxs = [A.output_operand(None, tuple(batch) + x.shape[-2:], n)
           for x, n in zip(xs, ("dx_q", "dx_k", "dx_v"))]
    out = {n: np.zeros(a.shape if a is not None else (0,), A.F32) for n, a in
           {**{"d" + k: v for k, v in w.items()}, **{"d" + k: v for k, v in b.items()}}.items()}
    for name in ("db_q", "db_k", "db_v"):  # the gradient of a zero bias, also without one
        if out[name].size == 0:
            out[name] = np.zeros(d_qk if name != "db_v" else d_v, A.F32)
    per_dim = sc.bandwidths is not None and sc.kind in (ScoreKind.GAUSSIAN, ScoreKind.LAPLACE)
    d_score = np.zeros(d_head if per_dim else 1, A.F32)
    has_o = w_o is not None
    g = AttentionGrads(*dxs[0].args, *dxs[1].args, *dxs[2].args,
                       ptr(out["dw_q"]), ptr(out["dw_k"]), ptr(out["dw_v"]),
                       ptr(out["dw_o"]) if has_o else None, ptr(out["db_q"]), ptr(out["db_k"]),
                       ptr(out["db_v"]), ptr(out["db_o"]) if has_o else None,
                       d_score.ctypes.data)
    if additive_grad:
        g.d_additive, g.ld_d_additive, g.stride_d_additive = ds[0].args
    h = ctx.handle
    if saved is not None:
        saved = np.ascontiguousarray(A.float_input(saved, "saved", min_ndim=1)).reshape(-1)
        check(C.nwattn_attention_backward_saved(
            h, ctypes.byref(params), ctypes.byref(sc), mask, A.count(batch), t_q, t_kv,
            *ops[0].args, *ops[1].args, *ops[2].args, *dyo.args,
            saved.ctypes.data if saved.size else None, saved.size, ctypes.byref(g)), h,
            "nwattn_attention_backward_saved")
    else:
        check(C.nwattn_attention_backward(h, ctypes.byref(params), ctypes.byref(sc), mask,
                                          A.count(batch), t_q, t_kv, *ops[0].args,
                                          *ops[1].args, *ops[2].args, *dyo.args,
                                          ctypes.byref(g)), h, "nwattn_attention_backward")
    result = {n: _unbroadcast(op.array, x.shape) for n, op, x in
              zip(("dx_q", "dx_k", "dx_v"), dxs, xs)}
    result.update({n: a for n, a in out.items() if has_o or n not in ("dw_o", "db_o")})
    result["d_score"] = d_score if per_dim else float(d_score[0])
    if additive_grad:
        result["d_additive"] = _additive_result(ds, masks)
    return result


def nw_predict_backward(xq, x, y, bandwidth, dyq, *, kernel="gaussian", degree="constant",
                        empty="nearest", ctx=None):
    """``nwattn_nw_predict_backward``: dL/dh for a loss whose gradient with respect to the
    predictions of :func:`nwattn.nw_predict` (same arguments) is dyq, shaped like them.
    Returns a float for a scalar bandwidth (the sum of the d per-feature shares, as one h
    serves them all), else an array shaped like bandwidth."""
    ctx = resolve(ctx)
    xo, n, d, _ = _points(x, "x")
    qo, m, _, _ = _points(xq, "xq")
    yo, _, dv, _ = _points(y, "y")
    go, gm, gdv, _ = _points(dyq, "dyq")
    if (gm, gdv) != (m, dv):
        raise ValueError(f"dyq: shape ({gm}, {gdv}), expected the predictions' ({m}, {dv})")
    bw = _bandwidths(bandwidth, d)
    model = _model(kernel, degree, empty)
    out = np.zeros(d, A.F32)
    h = ctx.handle
    check(C.nwattn_nw_predict_backward(h, ctypes.byref(model), bw.ctypes.data, m, n, d, dv,
                                       qo.ptr, qo.ld, xo.ptr, xo.ld, yo.ptr, yo.ld, go.ptr,
                                       go.ld, out.ctypes.data), h, "nwattn_nw_predict_backward")
    if np.size(bandwidth) == 1:  # one h shared by the d features: dL/dh sums their shares
        return float(out.sum()) if np.ndim(bandwidth) == 0 else out.sum(keepdims=True)
    return out

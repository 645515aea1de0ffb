"""Backward passes: the gradient functions of the C library for numpy, and (where torch is
importable) ``torch.autograd.Function`` wrappers that train with the library's forward and
backward.

numpy (always available, also as ``nwattn.pool_backward`` and ``nwattn.nw_predict_backward``):

- :func:`pool_backward` — ``nwattn_pool_backward``: dQ, dK, dV and the score parameter's
  gradient from the forward's O and lse and dO;
- :func:`attention_backward` — ``nwattn_attention_backward``: the attention layer's gradients;
- :func:`nw_predict_backward` — ``nwattn_nw_predict_backward``: dL/dh of a prediction.

torch (``nwattn.autograd``, only where ``import torch`` works): :func:`pool`, a differentiable
``nwattn_pool`` whose scale or bandwidth may be a learnable tensor, :func:`attention`, the
attention layer (d2l's and the seed's SelfAttention train with it unchanged), and
:func:`nw_predict`, a differentiable Nadaraya-Watson prediction in its bandwidth. Tensors go
through float32 numpy on the CPU (CPU float32 tensors as views); results come back in the
input's dtype and device. Second derivatives through the library raise.
"""
import ctypes

import numpy as np

from . import _arrays as A
from ._capi import AttentionGrads, AttentionParams, C, PoolGrads, PoolUpstream, size
from ._context import resolve
from ._core import ScoreKind, _MaskArgs, make_score
from ._errors import check
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


def pool_backward(q, k, v, o, lse, d_o, *, score="dot", scale=None, bandwidth=None,
                  bandwidths=None, valid_lens=None, causal=False, leave_one_out=False,
                  additive=None, keep=None, ctx=None):
    """``nwattn_pool_backward``: the gradients of a loss L through ``nwattn.pool``.

    q, k, v and the score and mask keywords as given to :func:`nwattn.pool`; o (*batch, m, dv)
    and lse (*batch, m) are what it returned (``lse=True``); d_o = dL/dO, shaped like o.
    Returns (dq, dk, dv, d_param): dq, dk, dv shaped like q, k, v (summed over the batch axes
    that were broadcast), d_param the gradient of the score's parameter as a float (scale, or
    the one bandwidth) or a (d,) array (per-dimension bandwidths).
    """
    ctx = resolve(ctx)
    q, k, v = (A.float_input(x, name) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    (m, d), (n, _), (_, dv) = q.shape[-2:], k.shape[-2:], v.shape[-2:]
    masks = _MaskArgs(m, n, valid_lens, causal, leave_one_out, additive, keep)
    batch = A.broadcast_batch([("q", q.shape[:-2]), ("k", k.shape[:-2]),
                               ("v", v.shape[:-2])] + masks.batch_shapes())
    sc, alive = make_score(score, scale, bandwidth, bandwidths, d)
    mask, alive_mask = masks.build(batch)
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
    up = PoolUpstream(*oo.args, lse.ctypes.data, m, *do.args)
    h = ctx.handle
    check(C.nwattn_pool_backward(h, ctypes.byref(sc), mask, A.count(batch), m, n, d, dv,
                                 *ops[0].args, *ops[1].args, *ops[2].args, ctypes.byref(up),
                                 ctypes.byref(g)), h, "nwattn_pool_backward")
    dq, dk, dvv = (_unbroadcast(op.array, x.shape) for op, x in zip(grads, (q, k, v)))
    return dq, dk, dvv, (d_param if per_dim else float(d_param[0]))


def attention_backward(x_q, x_k, x_v, dy, *, w_q, w_k, w_v, w_o=None, b_q=None, b_k=None,
                       b_v=None, b_o=None, heads=1, score="dot", scale=None, bandwidth=None,
                       bandwidths=None, valid_lens=None, causal=False, leave_one_out=False,
                       additive=None, keep=None, ctx=None):
    """``nwattn_attention_backward``: the gradients of a loss through :func:`nwattn.attention`
    (same arguments; x_k and x_v must be given, pass x_q again for self-attention) from
    dy = dL/dY. Returns a dict with dx_q, dx_k, dx_v (shaped like the inputs, summed over
    broadcast batch axes), dw_q, dw_k, dw_v, db_q, db_k, db_v and, with w_o, dw_o and db_o,
    and d_score (the score's parameter: a float, or a (d,) array for per-dimension
    bandwidths)."""
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
    h = ctx.handle
    check(C.nwattn_attention_backward(h, ctypes.byref(params), ctypes.byref(sc), mask,
                                      A.count(batch), t_q, t_kv, *ops[0].args, *ops[1].args,
                                      *ops[2].args, *dyo.args, ctypes.byref(g)), h,
          "nwattn_attention_backward")
    result = {n: _unbroadcast(op.array, x.shape) for n, op, x in
              zip(("dx_q", "dx_k", "dx_v"), dxs, xs)}
    result.update({n: a for n, a in out.items() if has_o or n not in ("dw_o", "db_o")})
    result["d_score"] = d_score if per_dim else float(d_score[0])
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


try:  # the torch layer; without torch the numpy functions above are the API
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

if torch is not None:  # pragma: no cover - CI installs torch; a plain install may lack it

    class _Refused(torch.autograd.Function):
        """A first gradient's stand-in under create_graph=True: the backward is the C library's,
        not a torch graph, so differentiating it again raises instead of quietly treating the
        gradient as a constant (torch's once_differentiable only does so when the upstream
        gradient itself requires grad)."""

        @staticmethod
        def forward(fctx, grad, *anchors):
            return grad.clone()

        @staticmethod
        def backward(fctx, *_):
            raise RuntimeError("nwattn.autograd: the library's backward cannot be "
                               "differentiated twice (a second derivative through it)")

    def _first_order(grads, inputs):
        """grads as they are, or (create_graph=True) tied to the inputs through _Refused."""
        anchors = [t for t in inputs if torch.is_tensor(t) and t.requires_grad]
        if not (torch.is_grad_enabled() and anchors):
            return grads
        return tuple(g if g is None else _Refused.apply(g, *anchors) for g in grads)

    _CPU = torch.device("cpu")

    def _np(t):
        """A float32 numpy view of a CPU float32 tensor (the common case: no torch call beyond
        detach and numpy, each a few µs), else a converted copy. Strided views stay views:
        the binding describes their memory as it is."""
        if t.dtype is torch.float32 and t.device == _CPU:
            return t.detach().numpy()
        return t.detach().to("cpu", torch.float32).numpy()

    def _like(a, ref):
        out = torch.from_numpy(np.ascontiguousarray(a))
        if ref.dtype is torch.float32 and ref.device == _CPU:
            return out
        return out.to(ref.device, ref.dtype)

    class PoolFunction(torch.autograd.Function):
        """O = nwattn.pool(q, k, v) with gradients for q, k, v and the score's parameter."""

        @staticmethod
        def forward(fctx, q, k, v, param, score, mask_kw):
            kw = _param_kw(score, param)
            o, lse = __import__("nwattn").pool(_np(q), _np(k), _np(v), score=score, lse=True,
                                               **kw, **mask_kw)
            fctx.save_for_backward(q, k, v, param)
            fctx.o, fctx.lse, fctx.score, fctx.mask_kw = o, lse, score, mask_kw
            return _like(o, q)

        @staticmethod
        def backward(fctx, d_o):
            q, k, v, param = fctx.saved_tensors
            kw = _param_kw(fctx.score, param)
            dq, dk, dv, dp = pool_backward(_np(q), _np(k), _np(v), fctx.o, fctx.lse, _np(d_o),
                                           score=fctx.score, **kw, **fctx.mask_kw)
            d_param = None if param is None else \
                _like(np.asarray(dp, np.float32).reshape(param.shape), param)
            return _first_order((_like(dq, q), _like(dk, k), _like(dv, v), d_param),
                                (q, k, v, param)) + (None, None)

    def _param_kw(score, param):
        if param is None:  # the library's default scale or bandwidth
            return {}
        value = _np(param)
        if score in ("dot", "cosine"):
            return {"scale": float(value.reshape(()))}
        if value.ndim == 0:
            return {"bandwidth": float(value)}
        return {"bandwidths": value.reshape(-1)}

    def pool(q, k, v, param=None, *, score="dot", **mask_kw):
        """Differentiable nwattn.pool. param: a tensor holding the scale (dot, cosine), the
        bandwidth (a 0-d tensor) or the per-dimension bandwidths ((d,) tensor); give it
        requires_grad=True to learn it (a learnable temperature, or d2l's w as h = 1/|w|).
        A plain number is a constant; None the library's default (1/sqrt(d), 1, 1)."""
        if param is not None and not torch.is_tensor(param):
            param = torch.tensor(param, dtype=torch.float64)
        return PoolFunction.apply(q, k, v, param, score, mask_kw)

    class NWPredictFunction(torch.autograd.Function):
        """yq = nwattn.nw_predict(xq, x, y, h) with the gradient for h (the data are constants)."""

        @staticmethod
        def forward(fctx, xq, x, y, h, kwargs):
            yq = __import__("nwattn").nw_predict(_np(xq), _np(x), _np(y), _np(h), **kwargs)
            fctx.save_for_backward(xq, x, y, h)
            fctx.kwargs = kwargs
            return _like(yq, h)

        @staticmethod
        def backward(fctx, dyq):
            xq, x, y, h = fctx.saved_tensors
            dh = nw_predict_backward(_np(xq), _np(x), _np(y), _np(h), _np(dyq), **fctx.kwargs)
            d_h = _like(np.asarray(dh, np.float32).reshape(h.shape), h)
            return (None, None, None) + _first_order((d_h,), (h,)) + (None,)

    _LAYER = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")

    class AttentionFunction(torch.autograd.Function):
        """Y = nwattn.attention(...) with gradients for the inputs, weights, biases and the
        score's scale (a learnable temperature) when it is given as a tensor."""

        @staticmethod
        def forward(fctx, x_q, x_k, x_v, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, scale, opts):
            tensors = (w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o)
            kw = {n: (None if t is None else _np(t)) for n, t in zip(_LAYER, tensors)}
            if scale is not None:
                kw["scale"] = float(_np(scale).reshape(()))
            y = __import__("nwattn").attention(_np(x_q), _np(x_k), _np(x_v), **kw, **opts)
            fctx.save_for_backward(x_q, x_k, x_v, *tensors, scale)
            fctx.opts = opts
            return _like(y, x_q)

        @staticmethod
        def backward(fctx, dy):
            x_q, x_k, x_v, *tensors, scale = fctx.saved_tensors
            kw = {n: (None if t is None else _np(t)) for n, t in zip(_LAYER, tensors)}
            if scale is not None:
                kw["scale"] = float(_np(scale).reshape(()))
            g = attention_backward(_np(x_q), _np(x_k), _np(x_v), _np(dy), **kw, **fctx.opts)
            grads = [_like(g["dx_q"], x_q), _like(g["dx_k"], x_k), _like(g["dx_v"], x_v)]
            for n, t in zip(_LAYER, tensors):
                grads.append(None if t is None else _like(g["d" + n].reshape(t.shape), t))
            grads.append(None if scale is None else
                         _like(np.asarray(g["d_score"], np.float32).reshape(scale.shape), scale))
            return _first_order(tuple(grads), (x_q, x_k, x_v, *tensors, scale)) + (None,)

    def attention(x_q, x_k=None, x_v=None, *, w_q, w_k, w_v, w_o=None, b_q=None, b_k=None,
                  b_v=None, b_o=None, scale=None, **opts):
        """Differentiable nwattn.attention (heads, score and mask keywords in opts); scale: a
        tensor for a learnable temperature of the scaled dot product (default 1/sqrt(d_k))."""
        x_k = x_q if x_k is None else x_k
        x_v = x_k if x_v is None else x_v
        return AttentionFunction.apply(x_q, x_k, x_v, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o,
                                       scale, opts)

    def nw_predict(xq, x, y, bandwidth, **kwargs):
        """Differentiable nwattn.nw_predict in its bandwidth tensor (only: xq, x and y are
        data, and data that require grad are refused rather than given no gradient)."""
        for t, name in ((xq, "xq"), (x, "x"), (y, "y")):
            if torch.is_tensor(t) and t.requires_grad and torch.is_grad_enabled():
                raise ValueError(f"nwattn.autograd.nw_predict: {name} requires grad, but the "
                                 "gradient flows to the bandwidth only; detach it")
        return NWPredictFunction.apply(xq, x, y, bandwidth, kwargs)

"""``nwattn.autograd``: ``torch.autograd.Function`` wrappers that train with the library's forward
and backward (the numpy gradient functions of ``_autograd.py``). Imported on first access of
``nwattn.autograd``, so that ``import nwattn`` does not pay for ``import torch`` (over a
second); without torch, ``nwattn.autograd`` is an AttributeError.

:func:`pool`, a differentiable ``nwattn_pool`` whose scale or bandwidth may be a learnable
tensor, :func:`attention`, the attention layer (d2l's and the seed's SelfAttention train with
it unchanged), and :func:`nw_predict`, a differentiable Nadaraya-Watson prediction in its
bandwidth. Tensors go through float32 numpy on the CPU (CPU float32 tensors as views); results
come back in the input's dtype and device. Second derivatives through the library raise.
"""
import numpy as np
import torch

from ._autograd import attention_backward, nw_predict_backward, pool_backward
from ._core import pool as _pool


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
    if not torch.is_grad_enabled():  # the usual backward: no graph of the gradients
        return grads
    anchors = [t for t in inputs if torch.is_tensor(t) and t.requires_grad]
    if not anchors:
        return grads
    return tuple(g if g is None else _Refused.apply(g, *anchors) for g in grads)

def _np(t):
    """A float32 numpy view of a CPU float32 tensor (the common case: numpy(), a few µs,
    after detach() only for a tensor that requires grad), else a converted copy. Strided views stay views:
    the binding describes their memory as it is."""
    if t.dtype is torch.float32 and t.is_cpu:
        return (t.detach() if t.requires_grad else t).numpy()
    return t.detach().to("cpu", torch.float32).numpy()

def _like(a, ref):
    out = torch.from_numpy(np.ascontiguousarray(a))
    if ref.dtype is torch.float32 and ref.is_cpu:
        return out
    return out.to(ref.device, ref.dtype)

class PoolFunction(torch.autograd.Function):
    """O = nwattn.pool(q, k, v) with gradients for q, k, v and the score's parameter.

    The step costs tens of µs at d2l's 50 × 50, so the backward reuses what the forward
    converted (the numpy views and the score keywords, with O and lse), makes dO contiguous
    (a loss's sum() gives an expanded one, which the compiled path does not take), and
    converts only the gradients that are asked for."""

    @staticmethod
    def forward(fctx, q, k, v, param, additive, score, mask_kw):
        kw = _param_kw(score, param)
        if additive is not None:  # a tensor: its gradient is dS (learned attention biases)
            kw["additive"] = _np(additive)
        qa = _np(q)  # self-attention and d2l pass one tensor twice: one view of it
        ka = qa if k is q else _np(k)
        arrays = (qa, ka, ka if v is k else qa if v is q else _np(v))
        o, lse = _pool(*arrays, score=score, lse=True, **kw, **mask_kw)
        fctx.save_for_backward(q, k, v, param, additive)  # torch's check of in-place changes
        fctx.arrays, fctx.kw = arrays, {**kw, **mask_kw}
        fctx.o, fctx.lse, fctx.score = o, lse, score
        return _like(o, q)

    @staticmethod
    def backward(fctx, d_o):
        q, k, v, param, additive = fctx.saved_tensors
        d_o = _np(d_o)
        if not d_o.flags.c_contiguous:
            d_o = np.ascontiguousarray(d_o)
        need = fctx.needs_input_grad
        want_ds = additive is not None and need[4]
        dq, dk, dv, dp, *ds = pool_backward(*fctx.arrays, fctx.o, fctx.lse, d_o,
                                            score=fctx.score, additive_grad=want_ds, **fctx.kw)
        d_param = None if param is None or not need[3] else \
            _like(np.asarray(dp, np.float32).reshape(param.shape), param)
        d_add = _like(ds[0], additive) if want_ds else None
        grads = tuple(_like(g, t) if wanted else None
                      for g, t, wanted in zip((dq, dk, dv), (q, k, v), need))
        return _first_order(grads + (d_param, d_add), (q, k, v, param, additive)) + (None, None)

def _param_kw(score, param):
    if param is None:  # the library's default scale or bandwidth
        return {}
    value = _np(param)
    if score in ("dot", "cosine"):
        return {"scale": float(value.reshape(()))}
    if value.ndim == 0:
        return {"bandwidth": float(value)}
    return {"bandwidths": value.reshape(-1)}

def pool(q, k, v, param=None, *, score="dot", additive=None, **mask_kw):
    """Differentiable nwattn.pool. param: a tensor holding the scale (dot, cosine), the
    bandwidth (a 0-d tensor) or the per-dimension bandwidths ((d,) tensor); give it
    requires_grad=True to learn it (a learnable temperature, or d2l's w as h = 1/|w|).
    A plain number is a constant; None the library's default (1/sqrt(d), 1, 1).
    additive: the additive mask; a tensor with requires_grad=True is learned (attention
    biases: its .grad is dS, summed over the batch axes it is broadcast along; -inf entries
    mask their keys and get exactly 0)."""
    if param is not None and not torch.is_tensor(param):
        param = torch.tensor(param, dtype=torch.float64)
    if additive is not None and not torch.is_tensor(additive):
        mask_kw["additive"] = additive  # numpy or nested lists: a constant
        additive = None
    return PoolFunction.apply(q, k, v, param, additive, score, mask_kw)

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
    score's parameter when it is given as a tensor: the scale of dot and cosine heads (a
    learnable temperature), the bandwidth or per-dimension bandwidths of Gaussian and Laplace
    heads (param_name says which keyword it is)."""

    @staticmethod
    def forward(fctx, x_q, x_k, x_v, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, param, additive,
                param_name, opts, grad_enabled):
        tensors = (w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o)
        kw = {n: (None if t is None else _np(t)) for n, t in zip(_LAYER, tensors)}
        kw.update(_named_param(param_name, param))
        if additive is not None:  # a tensor: a learned attention bias, shared by the heads
            kw["additive"] = _np(additive)
        # The activations stay for the backward (nwattn_attention_save): no second forward;
        # nothing kept where no gradient is wanted (no_grad, inference).
        fctx.activations = None
        if grad_enabled and any(fctx.needs_input_grad):
            y, fctx.activations = __import__("nwattn").attention(
                _np(x_q), _np(x_k), _np(x_v), **kw, **opts, save=True)
        else:
            y = __import__("nwattn").attention(_np(x_q), _np(x_k), _np(x_v), **kw, **opts)
        fctx.save_for_backward(x_q, x_k, x_v, *tensors, param, additive)
        fctx.opts, fctx.param_name = opts, param_name
        return _like(y, x_q)

    @staticmethod
    def backward(fctx, dy):
        x_q, x_k, x_v, *tensors, param, additive = fctx.saved_tensors
        kw = {n: (None if t is None else _np(t)) for n, t in zip(_LAYER, tensors)}
        kw.update(_named_param(fctx.param_name, param))
        want_ds = additive is not None and fctx.needs_input_grad[12]
        if additive is not None:
            kw["additive"] = _np(additive)
        g = attention_backward(_np(x_q), _np(x_k), _np(x_v), _np(dy), additive_grad=want_ds,
                               saved=fctx.activations, **kw, **fctx.opts)
        grads = [_like(g["dx_q"], x_q), _like(g["dx_k"], x_k), _like(g["dx_v"], x_v)]
        for n, t in zip(_LAYER, tensors):
            grads.append(None if t is None else _like(g["d" + n].reshape(t.shape), t))
        grads.append(None if param is None else
                     _like(np.asarray(g["d_score"], np.float32).reshape(param.shape), param))
        grads.append(_like(g["d_additive"], additive) if want_ds else None)
        return _first_order(tuple(grads), (x_q, x_k, x_v, *tensors, param, additive)) + \
            (None, None, None)

def _named_param(name, param):
    """The score keyword for the parameter tensor: scale and bandwidth are one number (any
    shape of one element, e.g. d2l's (1,) w), bandwidths a vector of d_head."""
    if param is None:
        return {}
    value = _np(param)
    if name == "bandwidths":
        return {name: value.reshape(-1)}
    if value.size != 1:
        raise ValueError(f"nwattn.autograd.attention: {name} has {value.size} elements, "
                         "expected one (per-dimension bandwidths are bandwidths=)")
    return {name: float(value.reshape(()))}

def attention(x_q, x_k=None, x_v=None, *, w_q, w_k, w_v, w_o=None, b_q=None, b_k=None,
              b_v=None, b_o=None, scale=None, bandwidth=None, bandwidths=None, additive=None,
              **opts):
    """Differentiable nwattn.attention (heads, score and mask keywords in opts). The score's
    parameter, at most one of: scale (dot and cosine heads, default 1/sqrt(d_k) and 1),
    bandwidth or bandwidths ((d_k/heads,), Gaussian and Laplace heads). A tensor is learned
    with the layer (a learnable temperature, a learnable kernel width; its .grad sums every
    head and item), a plain number is a constant. additive: the additive mask (all heads share
    it); a tensor that requires grad is learned (attention biases, .grad summed over the heads
    and the batch axes it is broadcast along)."""
    given = [(n, t) for n, t in (("scale", scale), ("bandwidth", bandwidth),
                                 ("bandwidths", bandwidths)) if t is not None]
    if len(given) > 1:
        raise ValueError("nwattn.autograd.attention: give at most one of scale, bandwidth "
                         "and bandwidths (the score has one parameter)")
    name, param = given[0] if given else (None, None)
    if param is not None and not torch.is_tensor(param):
        opts = {**opts, name: param}  # a constant
        name, param = None, None
    if additive is not None and not torch.is_tensor(additive):
        opts = {**opts, "additive": additive}  # numpy or nested lists: a constant
        additive = None
    x_k = x_q if x_k is None else x_k
    x_v = x_k if x_v is None else x_v
    return AttentionFunction.apply(x_q, x_k, x_v, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o,
                                   param, additive, name, opts, torch.is_grad_enabled())

def nw_predict(xq, x, y, bandwidth, **kwargs):
    """Differentiable nwattn.nw_predict in its bandwidth tensor (only: xq, x and y are
    data, and data that require grad are refused rather than given no gradient)."""
    for t, name in ((xq, "xq"), (x, "x"), (y, "y")):
        if torch.is_tensor(t) and t.requires_grad and torch.is_grad_enabled():
            raise ValueError(f"nwattn.autograd.nw_predict: {name} requires grad, but the "
                             "gradient flows to the bandwidth only; detach it")
    return NWPredictFunction.apply(xq, x, y, bandwidth, kwargs)

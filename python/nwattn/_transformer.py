"""The transformer module: positional encoding, self-, cross- and multi-head attention, and
partial pooling states (pooling over shards of the keys, merged in any order)."""
import ctypes

import numpy as np

from . import _arrays as A
from ._capi import AttentionParams, C, PoolState as _PoolStateStruct, size
from ._context import handle_of
from ._core import _MaskArgs, make_score
from ._errors import check


def positional_encoding(t, d, *, first=0, out=None, ctx=None):
    """``nwattn_positional_encoding``: d2l's sinusoidal encoding of positions first .. first+t-1,
    a (t, d) array: P[i, 2j] = sin(p / 10000^(2j/d)), P[i, 2j+1] = cos(p / 10000^(2j/d))."""
    h = handle_of(ctx)
    t, d, first = size(t, "t"), size(d, "d"), size(first, "first")
    po = A.output_operand(out, (t, d), "out")
    check(C.nwattn_positional_encoding(h, t, d, first, po.ptr, po.ld), h,
          "nwattn_positional_encoding")
    return po.array


def _dense(x, name, shape=None, ndim=2):
    """A weight or bias: dense row-major float32 (copied if it is not), of the given shape."""
    if x is None:
        return None
    arr = np.ascontiguousarray(A.float_input(x, name, min_ndim=ndim))
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim}-D, got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"{name}: shape {arr.shape}, expected {tuple(shape)}")
    return arr


def attention(x_q, x_k=None, x_v=None, *, w_q, w_k, w_v, w_o=None, b_q=None, b_k=None,
              b_v=None, b_o=None, heads=1, score="dot", scale=None, bandwidth=None,
              bandwidths=None, valid_lens=None, causal=False, leave_one_out=False,
              additive=None, keep=None, out=None, weights=None, save=False, ctx=None):
    """``nwattn_attention``: an attention layer with nn.Linear-style weights (y = x·Wᵀ + b).

    x_q (*batch, t_q, d_q_in); x_k (*batch, t_kv, d_k_in) defaults to x_q (self-attention);
    x_v (*batch, t_kv, d_v_in) defaults to x_k. w_q (d_qk, d_q_in), w_k (d_qk, d_k_in),
    w_v (d_v, d_v_in), optional w_o (d_out, d_v) and biases b_q, b_k (d_qk), b_v (d_v),
    b_o (d_out). ``heads`` splits d_qk and d_v; head h pools with softmax(score(Q_h, K_h) +
    mask) and the heads are concatenated, then projected by w_o if given. score: as in
    :func:`nwattn.pool` with d = d_qk / heads (default: scaled dot product 1/sqrt(d_qk/heads)).
    Mask keywords as in :func:`nwattn.softmax`, with m = t_q and n = t_kv, shared by the heads.
    weights: True or a C-contiguous (*batch, heads, t_q, t_kv) array for the per-head weights.
    save=True (``nwattn_attention_save``; not with weights): also the forward's activations,
    a 1-D float32 array to pass to :func:`nwattn.attention_backward` as ``saved`` with the
    same arguments, which then does not run the forward again.
    Returns: Y (*batch, t_q, d_out or d_v), or (Y, weights), or (Y, saved).
    """
    if save and weights is not None and weights is not False:
        raise ValueError("save=True and weights: ask for the weights in a separate call")
    h = handle_of(ctx)
    x_q = A.float_input(x_q, "x_q")
    x_k = x_q if x_k is None else A.float_input(x_k, "x_k")
    x_v = x_k if x_v is None else A.float_input(x_v, "x_v")
    t_q, d_q_in = x_q.shape[-2:]
    t_kv, d_k_in = x_k.shape[-2:]
    t_v, d_v_in = x_v.shape[-2:]
    if t_v != t_kv:
        raise ValueError(f"x_k has {t_kv} positions but x_v has {t_v}")
    w_q = _dense(w_q, "w_q")
    d_qk = w_q.shape[0]
    w_q = _dense(w_q, "w_q", (d_qk, d_q_in))
    w_k = _dense(w_k, "w_k", (d_qk, d_k_in))
    w_v = _dense(w_v, "w_v")
    d_v = w_v.shape[0]
    w_v = _dense(w_v, "w_v", (d_v, d_v_in))
    w_o = _dense(w_o, "w_o")
    d_out = d_v if w_o is None else w_o.shape[0]
    if w_o is not None:
        w_o = _dense(w_o, "w_o", (d_out, d_v))
    b_q, b_k = _dense(b_q, "b_q", (d_qk,), 1), _dense(b_k, "b_k", (d_qk,), 1)
    b_v = _dense(b_v, "b_v", (d_v,), 1)
    if b_o is not None and w_o is None:
        raise ValueError("b_o needs w_o")
    b_o = _dense(b_o, "b_o", (d_out,), 1)
    heads = size(heads, "heads")  # 0 and heads not dividing d_qk, d_v: C refuses them

    def ptr(a):
        return None if a is None else a.ctypes.data

    params = AttentionParams(heads, d_q_in, d_k_in, d_v_in, d_qk, d_v, d_out, ptr(w_q),
                             ptr(w_k), ptr(w_v), ptr(w_o), ptr(b_q), ptr(b_k), ptr(b_v),
                             ptr(b_o))
    masks = _MaskArgs(t_q, t_kv, valid_lens, causal, leave_one_out, additive, keep)
    batch = A.broadcast_batch([("x_q", x_q.shape[:-2]), ("x_k", x_k.shape[:-2]),
                               ("x_v", x_v.shape[:-2])] + masks.batch_shapes())
    d_head = d_qk // heads if heads else 0
    sc, alive = make_score(score, scale, bandwidth, bandwidths, d_head)
    mask, alive_mask = masks.build(batch)
    xq, xk, xv = (A.input_operand(x, batch, n) for x, n in ((x_q, "x_q"), (x_k, "x_k"),
                                                           (x_v, "x_v")))
    yo = A.output_operand(out, batch + (t_q, d_out), "out")
    wo = None
    if weights is not None and weights is not False:
        shape = batch + (heads, t_q, t_kv)
        if weights is True:
            w_arr = np.empty(shape, A.F32)
        else:
            w_arr = weights
            if not isinstance(w_arr, np.ndarray) or not w_arr.flags.c_contiguous:
                raise ValueError("weights: give a C-contiguous float32 array (or True)")
        flat = A.output_operand(w_arr.reshape(batch + (heads * t_q, t_kv)) if
                                w_arr.shape == shape else w_arr, batch + (heads * t_q, t_kv),
                                "weights")
        flat.array = w_arr
        wo = flat
    if save:
        floats = ctypes.c_size_t(0)
        check(C.nwattn_attention_saved_floats(h, ctypes.byref(params), A.count(batch), t_q,
                                              t_kv, ctypes.byref(floats)), h,
              "nwattn_attention_saved_floats")
        saved = np.empty(floats.value, A.F32)
        check(C.nwattn_attention_save(h, ctypes.byref(params), ctypes.byref(sc), mask,
                                      A.count(batch), t_q, t_kv, *xq.args, *xk.args, *xv.args,
                                      *yo.args, saved.ctypes.data if saved.size else None,
                                      saved.size), h, "nwattn_attention_save")
        return yo.array, saved
    check(C.nwattn_attention(h, ctypes.byref(params), ctypes.byref(sc), mask, A.count(batch),
                             t_q, t_kv, *xq.args, *xk.args, *xv.args, *yo.args,
                             *(wo.args if wo else (None, 0, 0))), h, "nwattn_attention")
    return (yo.array, wo.array) if wo else yo.array


class PoolState:
    """Partial pooling state of queries over a subset of the keys (``nwattn_pool_state``):
    ``acc`` (*batch, m, dv), ``max`` and ``sum`` (*batch, m), float32. An empty state (sum 0,
    max -inf, acc 0) is the identity of :func:`merge_states`."""

    __slots__ = ("acc", "max", "sum")

    def __init__(self, acc, max, sum):
        self.acc, self.max, self.sum = acc, max, sum

    @classmethod
    def empty(cls, batch_shape, m, dv):
        shape = tuple(batch_shape) + (m,)
        return cls(np.zeros(shape + (dv,), A.F32), np.full(shape, -np.inf, A.F32),
                   np.zeros(shape, A.F32))

    @property
    def shape(self):
        """(batch shape, m, dv)"""
        return self.acc.shape[:-2], self.acc.shape[-2], self.acc.shape[-1]

    def _struct(self, name, written=True):
        """The nwattn_pool_state and the operands it points to (keep them alive for the call).
        A state C only reads (written=False) may be read-only or of any layout: it is passed
        as an input, copied if need be; one C writes must be describable and writeable."""
        batch, m, dv = self.shape
        if written:
            acc = A.output_operand(self.acc, batch + (m, dv), f"{name}.acc")
            mx = A.vector_output(self.max, batch + (m,), f"{name}.max")
            sm = A.vector_output(self.sum, batch + (m,), f"{name}.sum")
        else:
            acc = A.input_operand(A.float_input(self.acc, f"{name}.acc"), batch, f"{name}.acc")
            mx = A.vector_input(self.max, batch + (m,), f"{name}.max")
            sm = A.vector_input(self.sum, batch + (m,), f"{name}.sum")
            if A.count(batch) > 1 and mx.stride != sm.stride:  # make both dense
                mx = A.vector_input(np.ascontiguousarray(mx.array), batch + (m,), f"{name}.max")
                sm = A.vector_input(np.ascontiguousarray(sm.array), batch + (m,), f"{name}.sum")
        if A.count(batch) > 1 and mx.stride != sm.stride:
            raise ValueError(f"{name}: max and sum must have the same batch stride")
        return _PoolStateStruct(acc.ptr, acc.ld, acc.stride, mx.ptr, sm.ptr, mx.stride), \
            (acc, mx, sm)

    def __repr__(self):
        batch, m, dv = self.shape
        return f"<nwattn.PoolState batch={batch} m={m} dv={dv}>"


def pool_partial(q, k, v, *, key_offset=0, score="dot", scale=None, bandwidth=None,
                 bandwidths=None, valid_lens=None, causal=False, leave_one_out=False,
                 additive=None, keep=None, state=None, ctx=None):
    """``nwattn_pool_partial``: the state of queries q (*batch, m, d) pooled over keys
    key_offset .. key_offset+n-1 of a larger problem; k (*batch, n, d) and v (*batch, n, dv)
    hold those keys. Causal, leave-one-out and valid lengths count whole-problem keys;
    additive and keep are the shard's columns ((*batch, m, n), e.g. ``mask[..., a:b]``).
    state: a :class:`PoolState` to write (default: a new one). Returns the state."""
    h = handle_of(ctx)
    q, k, v = (A.float_input(x, name) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    (m, d), (n, dk), (nv, dv) = q.shape[-2:], k.shape[-2:], v.shape[-2:]
    if dk != d:
        raise ValueError(f"q has d = {d} features but k has {dk}")
    if nv != n:
        raise ValueError(f"k has n = {n} keys but v has {nv} values")
    key_offset = size(key_offset, "key_offset")
    masks = _MaskArgs(m, n, valid_lens, causal, leave_one_out, additive, keep)
    # Valid lengths count whole-problem keys, so they may exceed this shard's n.
    batch = A.broadcast_batch([("q", q.shape[:-2]), ("k", k.shape[:-2]),
                               ("v", v.shape[:-2])] + masks.batch_shapes())
    sc, alive = make_score(score, scale, bandwidth, bandwidths, d)
    mask, alive_mask = masks.build(batch)
    qo, ko, vo = (A.input_operand(x, batch, name) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    if state is None:
        state = PoolState.empty(batch, m, dv)
    elif state.shape != (batch, m, dv):
        raise ValueError(f"state: shape {state.shape}, expected {(batch, m, dv)}")
    st, alive = state._struct("state")
    check(C.nwattn_pool_partial(h, ctypes.byref(sc), mask, A.count(batch), m, n, d, dv,
                                key_offset, *qo.args, *ko.args, *vo.args, ctypes.byref(st)),
          h, "nwattn_pool_partial")
    return state


def merge_states(into, other, *, ctx=None):
    """``nwattn_pool_state_merge``: into = into merged with other (disjoint key subsets);
    returns into."""
    h = handle_of(ctx)
    if into.shape != other.shape:
        raise ValueError(f"states of different shapes: {into.shape} and {other.shape}")
    batch, m, dv = into.shape
    a, alive_a = into._struct("into")  # the operands stay alive until the call returns
    b, alive_b = other._struct("other", written=False)
    check(C.nwattn_pool_state_merge(h, A.count(batch), m, dv, ctypes.byref(a),
                                    ctypes.byref(b)), h, "nwattn_pool_state_merge")
    return into


def finish_state(state, *, out=None, lse=None, ctx=None):
    """``nwattn_pool_state_finish``: O = acc / sum (*batch, m, dv), and with ``lse`` (True or
    an array (*batch, m)) also max + log(sum). ``out=state.acc`` finishes in place.
    Returns O, or (O, lse)."""
    h = handle_of(ctx)
    batch, m, dv = state.shape
    st, alive = state._struct("state", written=False)
    oo = A.output_operand(out, batch + (m, dv), "out")
    lo = None
    if lse is not None and lse is not False:
        lo = A.vector_output(None if lse is True else lse, batch + (m,), "lse")
    check(C.nwattn_pool_state_finish(h, A.count(batch), m, dv, ctypes.byref(st), *oo.args,
                                     lo.ptr if lo else None, lo.stride if lo else 0), h,
          "nwattn_pool_state_finish")
    return (oo.array, lo.array) if lo else oo.array

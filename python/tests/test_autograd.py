"""The backward functions (nwattn.pool_backward, nwattn.nw_predict_backward) against central
finite differences of the forward in float64 numpy (npref-style definitions written here), and
the torch layer where torch is installed."""
import numpy as np
import pytest

import nwattn


def _forward(q, k, v, score, param, valid_lens=None):
    """softmax(score + mask) · V in float64: the definition."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    if score == "dot":
        s = param * q @ np.swapaxes(k, -1, -2)
    elif score == "cosine":
        qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
        kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
        s = param * qn @ np.swapaxes(kn, -1, -2)
    else:
        h = np.asarray(param, np.float64)
        diff = (q[..., :, None, :] - k[..., None, :, :]) / h
        t = (diff ** 2).sum(-1)
        s = -t / 2 if score == "gaussian" else -np.sqrt(t)
    if valid_lens is not None:
        n = k.shape[-2]
        lens = np.asarray(valid_lens).reshape(-1, 1, 1)
        s = np.where(np.arange(n)[None, None, :] < lens, s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return w @ v


def _fd(f, x, step=1e-3):
    g = np.zeros_like(x, np.float64)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + step
        hi = f()
        x[i] = old - step
        lo = f()
        x[i] = old
        g[i] = (hi - lo) / (2 * step)
    return g


@pytest.mark.parametrize("score, param", [("dot", 0.6), ("cosine", 2.0), ("gaussian", 0.9),
                                          ("laplace", 1.3), ("gaussian", "vector")])
def test_pool_backward_against_finite_differences(score, param):
    rng = np.random.default_rng(5)
    q = rng.uniform(-1, 1, (2, 4, 3))
    k = rng.uniform(-1, 1, (2, 6, 3))
    v = rng.uniform(-1, 1, (2, 6, 2))
    d_o = rng.uniform(-1, 1, (2, 4, 2))
    lens = np.array([6, 3])
    p = rng.uniform(0.7, 1.4, 3) if param == "vector" else np.array(param, np.float64)
    kw = {"scale": float(p)} if score in ("dot", "cosine") else (
        {"bandwidths": p} if p.ndim else {"bandwidth": float(p)})
    o, lse = nwattn.pool(q, k, v, score=score, valid_lens=lens, lse=True, **kw)
    dq, dk, dv, dp = nwattn.pool_backward(q, k, v, o, lse, d_o, score=score, valid_lens=lens,
                                          **kw)

    def loss():
        return float((_forward(q, k, v, score, p, lens) * d_o).sum())

    for got, x in ((dq, q), (dk, k), (dv, v), (np.asarray(dp), p)):
        want = _fd(loss, x)
        assert np.abs(got - want).max() <= 1e-4 * max(np.abs(want).max(), 1.0)
    assert np.all(dk[1, 3:] == 0) and np.all(dv[1, 3:] == 0)  # beyond the valid length


def test_pool_backward_broadcast_keys_are_summed():
    rng = np.random.default_rng(1)
    q = rng.uniform(-1, 1, (3, 4, 2)).astype(np.float32)
    k = rng.uniform(-1, 1, (5, 2)).astype(np.float32)  # one key set for every item
    v = rng.uniform(-1, 1, (5, 2)).astype(np.float32)
    o, lse = nwattn.pool(q, k, v, lse=True)
    d_o = np.ones_like(o)
    dq, dk, dv, _ = nwattn.pool_backward(q, k, v, o, lse, d_o)
    assert dk.shape == k.shape and dv.shape == v.shape
    total = sum(nwattn.pool_backward(q[b], k, v, o[b], lse[b], d_o[b])[1] for b in range(3))
    np.testing.assert_allclose(dk, total, rtol=1e-5, atol=1e-6)


def test_nw_predict_backward_against_finite_differences():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 4, 30)
    y = np.sin(x) + rng.normal(0, 0.1, 30)
    xq = rng.uniform(0.5, 3.5, 9)
    dyq = rng.uniform(-1, 1, 9)
    ctx = nwattn.Context("reference")
    for kernel in ("gaussian", "laplace", "tricube"):
        h = 0.6
        got = nwattn.nw_predict_backward(xq, x, y, h, dyq, kernel=kernel, ctx=ctx)
        step = 1e-3

        def loss(hh):
            return float((nwattn.nw_predict(xq, x, y, hh, kernel=kernel, ctx=ctx) * dyq)
                         .astype(np.float64).sum())

        want = (loss(h + step) - loss(h - step)) / (2 * step)
        assert abs(got - want) <= 2e-3 * max(abs(want), 1e-2)


def test_nw_predict_backward_one_bandwidth_for_several_dimensions_sums_them():
    """One h for d = 2 features is h_1 = h_2 = h: dL/dh = dL/dh_1 + dL/dh_2, for a scalar and
    for a one-element array (returned with its shape)."""
    rng = np.random.default_rng(6)
    x, xq = rng.uniform(0, 2, (30, 2)), rng.uniform(0, 2, (9, 2))
    y, dyq = rng.uniform(-1, 1, 30), rng.uniform(-1, 1, 9)
    per_dim = nwattn.nw_predict_backward(xq, x, y, [0.4, 0.4], dyq)
    one = nwattn.nw_predict_backward(xq, x, y, 0.4, dyq)
    assert isinstance(one, float) and abs(per_dim[1]) > 1e-3
    assert one == pytest.approx(float(per_dim.sum()), rel=1e-5)
    arr = nwattn.nw_predict_backward(xq, x, y, np.array([0.4]), dyq)
    assert arr.shape == (1,) and arr[0] == pytest.approx(one, rel=1e-6)


def _layer(x, w_q, w_k, w_v, w_o, b_q, b_o, heads, causal):
    """Multi-head attention in float64: projections, softmax per head, output projection."""
    q, k, v = x @ w_q.T + b_q, x @ w_k.T, x @ w_v.T
    t, dqk = q.shape[-2:]
    dh, dvh = dqk // heads, v.shape[-1] // heads
    outs = []
    for h in range(heads):
        s = q[..., h * dh:(h + 1) * dh] @ np.swapaxes(k[..., h * dh:(h + 1) * dh], -1, -2)
        s = s / np.sqrt(dh)
        if causal:
            s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        outs.append(w @ v[..., h * dvh:(h + 1) * dvh])
    return np.concatenate(outs, -1) @ w_o.T + b_o


def test_attention_backward_against_finite_differences():
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (2, 5, 4))
    w_q, w_k, w_v = (rng.uniform(-1, 1, (6, 4)) for _ in range(3))
    w_o, b_q, b_o = rng.uniform(-1, 1, (3, 6)), rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 3)
    dy = rng.uniform(-1, 1, (2, 5, 3))
    g = nwattn.attention_backward(x, x, x, dy, w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q,
                                  b_o=b_o, heads=2, causal=True)

    def loss():
        return float((_layer(x, w_q, w_k, w_v, w_o, b_q, b_o, 2, True) * dy).sum())

    dx = g["dx_q"] + g["dx_k"] + g["dx_v"]  # self-attention: one X passed three times
    for got, p in ((dx, x), (g["dw_q"], w_q), (g["dw_k"], w_k), (g["dw_v"], w_v),
                   (g["dw_o"], w_o), (g["db_q"], b_q), (g["db_o"], b_o)):
        want = _fd(loss, p)
        assert np.abs(got - want).max() <= 1e-4 * max(np.abs(want).max(), 1.0)
    # the keys' bias cancels in the softmax: its gradient is 0 up to float rounding
    assert np.abs(g["db_k"]).max() <= 1e-6 * np.abs(g["dw_k"]).max()


@pytest.mark.parametrize("causal, with_o", [(False, True), (True, True), (True, False)])
def test_attention_saved_activations_give_the_same_bits(causal, with_o):
    """attention(save=True) then attention_backward(saved=...): Y and every gradient bit for
    bit those of the forward and the backward that runs the forward again; broadcast keys."""
    rng = np.random.default_rng(8)
    x = rng.uniform(-1, 1, (2, 5, 4)).astype(np.float32)
    kv = rng.uniform(-1, 1, (1, 6, 3)).astype(np.float32)  # one key sequence for both items
    w_q = rng.uniform(-1, 1, (6, 4)).astype(np.float32)
    w_k, w_v = (rng.uniform(-1, 1, (6, 3)).astype(np.float32) for _ in range(2))
    kw = dict(w_q=w_q, w_k=w_k, w_v=w_v, b_q=rng.uniform(-1, 1, 6).astype(np.float32),
              heads=2, causal=causal)
    if with_o:
        kw.update(w_o=rng.uniform(-1, 1, (3, 6)).astype(np.float32),
                  b_o=rng.uniform(-1, 1, 3).astype(np.float32))
    y = nwattn.attention(x, kv, kv, **kw)
    y2, saved = nwattn.attention(x, kv, kv, save=True, **kw)
    assert saved.dtype == np.float32 and saved.ndim == 1
    np.testing.assert_array_equal(y, y2)
    dy = rng.uniform(-1, 1, y.shape).astype(np.float32)
    g = nwattn.attention_backward(x, kv, kv, dy, **kw)
    g2 = nwattn.attention_backward(x, kv, kv, dy, saved=saved, **kw)
    assert g.keys() == g2.keys()
    for name in g:
        np.testing.assert_array_equal(g[name], g2[name], err_msg=name)
    with pytest.raises(nwattn.NWAttnError, match="saved_floats"):
        nwattn.attention_backward(x, kv, kv, dy, saved=saved[:-1], **kw)
    with pytest.raises(ValueError, match="weights"):
        nwattn.attention(x, kv, kv, save=True, weights=True, **kw)


@pytest.mark.parametrize("score, param", [("gaussian", 0.8), ("laplace", "vector"),
                                          ("cosine", 2.0)])
def test_attention_backward_d_score_against_finite_differences(score, param):
    """d_score, the gradient of every head's bandwidth (or per-dimension bandwidths, or the
    cosine scale) summed over heads and items: what makes the kernel width learnable."""
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (2, 4, 3))
    w_q, w_k, w_v = (rng.uniform(-1, 1, (4, 3)) for _ in range(3))
    dy = rng.uniform(-1, 1, (2, 4, 4))
    p = rng.uniform(0.7, 1.4, 2) if param == "vector" else np.array(param, np.float64)
    kw = {"scale": float(p)} if score == "cosine" else (
        {"bandwidths": p} if p.ndim else {"bandwidth": float(p)})
    g = nwattn.attention_backward(x, x, x, dy, w_q=w_q, w_k=w_k, w_v=w_v, heads=2,
                                  score=score, **kw)

    def loss():
        q, k, v = x @ w_q.T, x @ w_k.T, x @ w_v.T
        heads = [_forward(q[..., 2 * h:2 * h + 2], k[..., 2 * h:2 * h + 2],
                          v[..., 2 * h:2 * h + 2], score, p) for h in range(2)]
        return float((np.concatenate(heads, -1) * dy).sum())

    want = _fd(loss, p)
    got = np.asarray(g["d_score"])
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * max(np.abs(want).max(), 1.0)


def test_bad_input_is_refused():
    q = np.zeros((2, 3), np.float32)
    with pytest.raises(nwattn.NWAttnError):
        nwattn.pool_backward(q, q, q, q, np.zeros(2, np.float32), q, score="gaussian",
                             bandwidth=-1.0)


def test_torch_pool_learns_a_bandwidth():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.uniform(0, 5, (50, 1)), dtype=torch.float32)
    y = torch.sin(x)
    h = torch.tensor(2.0, requires_grad=True)
    out = nwattn.autograd.pool(x, x, y, h, score="gaussian", leave_one_out=True)
    ((out - y) ** 2).sum().backward()
    assert h.grad is not None and torch.isfinite(h.grad)

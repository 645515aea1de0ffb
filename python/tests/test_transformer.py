"""The transformer module against numpy: positional encoding, attention layers (self, cross,
multi-head, masks, weights), partial states (any split of the keys, merged in any order),
threads and the fused backend."""
import numpy as np
import pytest

import nwattn
import npref


def tol(ctx):
    return 2e-6 if ctx.backend == nwattn.Backend.REFERENCE else 5e-5


def close(got, want, ctx, scale=1.0):
    t = tol(ctx)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=t, atol=t * scale)


@pytest.fixture(params=["auto", "reference", "blas", "fused"])
def tctx(request):
    with nwattn.Context(request.param) as c:
        yield c


def rand(rng, *shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


# ---- positional encoding --------------------------------------------------------------------

@pytest.mark.parametrize("t, d, first", [(1, 1, 0), (7, 6, 0), (5, 7, 3), (50, 32, 100)])
def test_positional_encoding_closed_form(tctx, t, d, first):
    p = (first + np.arange(t, dtype=np.float64))[:, None]
    j = np.arange(d) // 2
    angle = p / 10000.0 ** (2 * j / d)
    want = np.where(np.arange(d) % 2 == 0, np.sin(angle), np.cos(angle))
    got = nwattn.positional_encoding(t, d, first=first, ctx=tctx)
    assert got.shape == (t, d) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_positional_encoding_into_a_slice():
    big = np.zeros((4, 10), np.float32)
    nwattn.positional_encoding(4, 6, out=big[:, 2:8])
    assert np.all(big[:, :2] == 0) and np.all(big[:, 8:] == 0)
    np.testing.assert_allclose(big[:, 2], np.sin(np.arange(4)), rtol=1e-6, atol=1e-7)


# ---- attention layers -----------------------------------------------------------------------

def mha_oracle(x_q, x_k, x_v, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, heads, ok=None):
    f = lambda a: None if a is None else np.asarray(a, np.float64)  # noqa: E731
    x_q, x_k, x_v, w_q, w_k, w_v, w_o = map(f, (x_q, x_k, x_v, w_q, w_k, w_v, w_o))
    q = x_q @ w_q.T + (0 if b_q is None else b_q)
    k = x_k @ w_k.T + (0 if b_k is None else b_k)
    v = x_v @ w_v.T + (0 if b_v is None else b_v)
    dh, dvh = q.shape[-1] // heads, v.shape[-1] // heads
    outs, weights = [], []
    for h in range(heads):
        qh, kh, vh = q[..., h * dh:(h + 1) * dh], k[..., h * dh:(h + 1) * dh], \
            v[..., h * dvh:(h + 1) * dvh]
        w, _ = npref.softmax(npref.scores(qh, kh, "dot"), ok)
        outs.append(w @ vh)
        weights.append(w)
    y = np.concatenate(outs, axis=-1)
    if w_o is not None:
        y = y @ w_o.T + (0 if b_o is None else b_o)
    return y, np.stack(weights, axis=-3)


@pytest.mark.parametrize("heads, batch, t_q, t_kv, d_in, d_qk, d_v, d_out, bias", [
    (1, (), 5, 5, 4, 3, 2, None, False),     # the seed's SelfAttention(d_model, d_k, d_v)
    (2, (3,), 6, 6, 8, 8, 8, 8, True),       # nn.MultiheadAttention(8, 2)
    (4, (2,), 3, 7, 5, 8, 12, 6, True),      # cross-attention, different widths
])
def test_attention_matches_numpy(tctx, rng, heads, batch, t_q, t_kv, d_in, d_qk, d_v, d_out,
                                 bias):
    x_q = rand(rng, *batch, t_q, d_in)
    x_kv = x_q if t_kv == t_q else rand(rng, *batch, t_kv, d_in)
    w_q, w_k, w_v = rand(rng, d_qk, d_in), rand(rng, d_qk, d_in), rand(rng, d_v, d_in)
    w_o = None if d_out is None else rand(rng, d_out, d_v)
    b = (lambda n: rand(rng, n)) if bias else (lambda n: None)
    b_q, b_k, b_v = b(d_qk), b(d_qk), b(d_v)
    b_o = None if w_o is None else b(d_out)
    y, w = nwattn.attention(x_q, x_kv, w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k,
                            b_v=b_v, b_o=b_o, heads=heads, weights=True, ctx=tctx)
    want_y, want_w = mha_oracle(x_q, x_kv, x_kv, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, heads)
    assert y.shape == batch + (t_q, d_v if d_out is None else d_out)
    assert w.shape == batch + (heads, t_q, t_kv)
    close(y, want_y, tctx, scale=d_in)
    close(w, want_w, tctx, scale=d_in)


def test_attention_causal_and_valid_lens(tctx, rng):
    x = rand(rng, 2, 6, 4)
    w_q, w_k, w_v = rand(rng, 4, 4), rand(rng, 4, 4), rand(rng, 4, 4)
    y, w = nwattn.attention(x, w_q=w_q, w_k=w_k, w_v=w_v, heads=2, causal=True,
                            valid_lens=[4, 6], weights=True, ctx=tctx)
    ok = npref.keep_matrix((2,), 6, 6, valid_lens=[4, 6], causal=True)
    want_y, want_w = mha_oracle(x, x, x, w_q, w_k, w_v, None, None, None, None, None, 2, ok)
    close(y, want_y, tctx, scale=4)
    close(w, want_w, tctx, scale=4)
    assert np.all(w[~np.broadcast_to(ok[:, None], w.shape)] == 0)  # every head


def test_attention_errors_and_checks(rng):
    x = rand(rng, 5, 4)
    w = rand(rng, 6, 4)
    with pytest.raises(nwattn.NWAttnError) as info:
        nwattn.attention(x, w_q=w, w_k=w, w_v=w, heads=4)  # 4 does not divide 6
    assert info.value.function == "nwattn_attention"
    with pytest.raises(ValueError, match="w_k"):
        nwattn.attention(x, w_q=w, w_k=rand(rng, 6, 3), w_v=w)
    with pytest.raises(ValueError, match="b_o needs w_o"):
        nwattn.attention(x, w_q=w, w_k=w, w_v=w, b_o=np.zeros(6))


# ---- partial states -------------------------------------------------------------------------

@pytest.mark.parametrize("cuts", [(0, 9), (0, 4, 9), (0, 1, 2, 7, 9), (0, 0, 9)])
def test_partial_states_merge_to_the_pooling(tctx, rng, cuts):
    m, n, d, dv = 6, 9, 3, 2
    q, k, v = rand(rng, 2, m, d), rand(rng, 2, n, d), rand(rng, 2, n, dv)
    keep = rng.random((2, m, n)) > 0.2
    kwargs = dict(score="gaussian", bandwidth=0.7, causal=True, valid_lens=[7, 9])
    want_o, want_lse = nwattn.pool(q, k, v, keep=keep, lse=True,
                                   ctx=nwattn.Context("reference"), **kwargs)
    states = [nwattn.pool_partial(q, k[:, a:b], v[:, a:b], key_offset=a, keep=keep[..., a:b],
                                  ctx=tctx, **kwargs)
              for a, b in zip(cuts[:-1], cuts[1:])]
    total = nwattn.PoolState.empty((2,), m, dv)
    for s in reversed(states):  # any order
        nwattn.merge_states(total, s, ctx=tctx)
    o, lse = nwattn.finish_state(total, lse=True, ctx=tctx)
    np.testing.assert_allclose(o, want_o, rtol=1e-4, atol=1e-5)
    finite = np.isfinite(want_lse)
    assert np.array_equal(finite, np.isfinite(lse))
    np.testing.assert_allclose(lse[finite], want_lse[finite], rtol=1e-4, atol=1e-5)
    # finishing in place
    o2 = nwattn.finish_state(total, out=total.acc, ctx=tctx)
    assert o2 is total.acc
    np.testing.assert_allclose(o2, o, rtol=1e-6)


def test_partial_state_shapes_are_checked(rng):
    q, k, v = rand(rng, 3, 2), rand(rng, 4, 2), rand(rng, 4, 1)
    with pytest.raises(ValueError, match="state"):
        nwattn.pool_partial(q, k, v, state=nwattn.PoolState.empty((), 3, 2))
    with pytest.raises(ValueError, match="different shapes"):
        nwattn.merge_states(nwattn.PoolState.empty((), 3, 1), nwattn.PoolState.empty((), 2, 1))


# ---- threads and the fused backend ----------------------------------------------------------

def test_threads_round_trip_and_limits():
    with nwattn.Context("fused", threads=2) as ctx:
        assert ctx.threads == 2 and ctx.backend == nwattn.Backend.FUSED
        ctx.threads = nwattn.MAX_THREADS
        with pytest.raises(nwattn.NWAttnError) as info:
            ctx.threads = 0
        assert info.value.status == nwattn.Status.ERR_BAD_PARAMETER
        with pytest.raises(nwattn.NWAttnError):
            ctx.threads = nwattn.MAX_THREADS + 1
        assert ctx.threads == nwattn.MAX_THREADS


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fused_with_threads_matches_reference(rng, threads):
    q, k, v = rand(rng, 2, 130, 8), rand(rng, 2, 300, 8), rand(rng, 2, 300, 5)
    want = nwattn.pool(q, k, v, causal=True, ctx=nwattn.Context("reference"))
    with nwattn.Context("fused", threads=threads) as ctx:
        got = nwattn.pool(q, k, v, causal=True, ctx=ctx)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

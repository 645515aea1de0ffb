"""Every core wrapper against the numpy oracle (npref), on every backend."""
import numpy as np
import pytest

import nwattn
import npref

SHAPES = [  # (batch shape, m, n, d, dv): awkward sizes on purpose
    ((), 1, 1, 1, 1),
    ((), 7, 5, 3, 2),
    ((3,), 4, 9, 1, 1),
    ((2,), 1, 13, 5, 3),
    ((2, 3), 5, 4, 2, 6),
    ((1,), 33, 17, 8, 1),
]


def tol(ctx):
    return 2e-6 if ctx.backend == nwattn.Backend.REFERENCE else 5e-5


def close(got, want, ctx, scale=1.0):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    t = tol(ctx)
    np.testing.assert_allclose(got, want, rtol=t, atol=t * scale)


def data(rng, shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(np.float32)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["dot", "gaussian", "laplace", "cosine"])
def test_scores(ctx, rng, shape, kind):
    b, m, n, d, _ = shape
    q, k = data(rng, b + (m, d)), data(rng, b + (n, d))
    params = {"dot": {"scale": 0.7}, "gaussian": {"bandwidth": 0.8},
              "laplace": {"bandwidth": 1.3}, "cosine": {"scale": 2.5}}[kind]
    got = nwattn.scores(q, k, score=kind, ctx=ctx, **params)
    assert got.dtype == np.float32 and got.shape == b + (m, n)
    close(got, npref.scores(q, k, kind, **params), ctx, scale=d)


def test_scores_defaults(ctx, rng):
    q, k = data(rng, (4, 9)), data(rng, (6, 9))
    close(nwattn.scores(q, k, ctx=ctx), npref.scores(q, k, "dot", scale=1 / 3), ctx)
    close(nwattn.scores(q, k, score="gaussian", ctx=ctx), npref.scores(q, k, "gaussian"), ctx,
          scale=9)
    close(nwattn.scores(q, k, score=nwattn.ScoreKind.LAPLACE, ctx=ctx),
          npref.scores(q, k, "laplace"), ctx, scale=3)


def test_cosine_pool_and_zero_norm_rows(ctx, rng):
    q, k, v = data(rng, (6, 4)), data(rng, (7, 4)), data(rng, (7, 3))
    q[2] = 0.0  # no direction: uniform weights
    k[5] = 0.0  # scores 0 against every query
    got = nwattn.pool(q, k, v, score="cosine", scale=3.0, ctx=ctx)
    close(got, npref.pool(q, k, v, kind="cosine", scale=3.0)[0], ctx)
    s = nwattn.scores(q, k, score="cosine", ctx=ctx)
    assert np.all(s[2] == 0.0) and np.all(s[:, 5] == 0.0)
    with pytest.raises(ValueError, match="bandwidth"):
        nwattn.pool(q, k, v, score="cosine", bandwidth=1.0, ctx=ctx)


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_scores_per_dimension_bandwidths(ctx, rng, kind):
    q, k = data(rng, (5, 3)), data(rng, (4, 3))
    h = np.array([0.5, 1.0, 2.0])
    close(nwattn.scores(q, k, score=kind, bandwidths=h, ctx=ctx),
          npref.scores(q, k, kind, bandwidths=h), ctx, scale=10)


@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_plain(ctx, rng, shape):
    b, m, n, _, _ = shape
    s = data(rng, b + (m, n), -5, 5)
    w, lse = nwattn.softmax(s, lse=True, ctx=ctx)
    want_w, want_lse = npref.softmax(s)
    close(w, want_w, ctx)
    close(lse, want_lse, ctx, scale=5)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)


def test_softmax_masks(ctx, rng):
    b, m, n = (3,), 6, 6
    s = data(rng, b + (m, n), -3, 3)
    lens = np.array([0, 3, 6])
    row_lens = rng.integers(0, n + 1, size=b + (m,))
    additive = data(rng, (m, n), -1, 1)
    additive[2, 4] = -np.inf
    keep = rng.random(b + (m, n)) > 0.3
    cases = [
        (dict(valid_lens=lens), dict(valid_lens=lens), None),
        (dict(valid_lens=row_lens), dict(valid_lens=row_lens, per_row=True), None),
        (dict(causal=True), dict(causal=True), None),
        (dict(leave_one_out=True), dict(leave_one_out=True), None),
        (dict(keep=keep), dict(keep=keep), None),
        (dict(additive=additive), {}, additive),
        (dict(valid_lens=lens, causal=True, leave_one_out=True, keep=keep, additive=additive),
         dict(valid_lens=lens, causal=True, leave_one_out=True, keep=keep), additive),
    ]
    for kwargs, okargs, add in cases:
        w, lse = nwattn.softmax(s, lse=True, ctx=ctx, **kwargs)
        ok = npref.keep_matrix(b, m, n, **okargs)
        want_w, want_lse = npref.softmax(s, ok, add)
        close(w, want_w, ctx)
        assert np.all(w[~np.broadcast_to(ok, w.shape)] == 0.0), kwargs  # exactly zero
        assert np.array_equal(np.isneginf(lse), np.isneginf(want_lse)), kwargs
        finite = np.isfinite(want_lse)
        close(lse[finite], want_lse[finite], ctx, scale=5)
        assert not np.isnan(w).any() and not np.isnan(lse).any()


def test_softmax_fully_masked_rows_are_zero(ctx):
    s = np.zeros((2, 3, 4), np.float32)
    w, lse = nwattn.softmax(s, valid_lens=[0, 4], lse=True, ctx=ctx)
    assert np.all(w[0] == 0) and np.all(np.isneginf(lse[0]))
    np.testing.assert_allclose(w[1], 0.25)


def test_softmax_in_place(ctx, rng):
    s = data(rng, (2, 5, 7), -4, 4)
    want, _ = npref.softmax(s)
    got = nwattn.softmax(s, out=s, ctx=ctx)
    assert got is s
    close(s, want, ctx)


def test_softmax_is_stable_for_huge_scores(ctx):
    s = np.array([[1e30, 1e30 - 1e24, -1e30], [-1e38, -1e38, -1e38]], np.float32)
    w = nwattn.softmax(s, ctx=ctx)
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w.sum(1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("shape", [((), 1, 1, 1), ((), 4, 6, 5), ((3,), 1, 8, 1),
                                   ((2,), 7, 1, 3), ((2, 2), 3, 5, 4), ((4,), 9, 1, 1)])
def test_bmm(ctx, rng, shape):
    b, m, n, k = shape
    a, bb = data(rng, b + (m, k)), data(rng, b + (k, n))
    close(nwattn.bmm(a, bb, ctx=ctx), np.asarray(a, np.float64) @ bb, ctx, scale=k)


def test_bmm_is_d2l_bmm(ctx):
    # d2l: torch.bmm(ones(2,1,4), ones(2,4,6)).shape == (2,1,6); weights 0.1 × arange(20)
    assert nwattn.bmm(np.ones((2, 1, 4)), np.ones((2, 4, 6)), ctx=ctx).shape == (2, 1, 6)
    weights = np.ones((2, 10)) * 0.1
    values = np.arange(20.0).reshape(2, 10)
    got = nwattn.bmm(weights[:, None, :], values[:, :, None], ctx=ctx)
    np.testing.assert_allclose(got.ravel(), [4.5, 14.5], rtol=1e-6)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["dot", "gaussian", "laplace"])
def test_pool(ctx, rng, shape, kind):
    b, m, n, d, dv = shape
    q, k, v = data(rng, b + (m, d)), data(rng, b + (n, d)), data(rng, b + (n, dv))
    params = {} if kind == "dot" else {"bandwidth": 0.9}
    o, w, lse = nwattn.pool(q, k, v, score=kind, weights=True, lse=True, ctx=ctx, **params)
    want_o, want_w, want_lse = npref.pool(q, k, v, kind=kind, **params)
    close(o, want_o, ctx)
    close(w, want_w, ctx)
    close(lse, want_lse, ctx, scale=d)
    close(nwattn.pool(q, k, v, score=kind, ctx=ctx, **params), want_o, ctx)


def test_pool_return_combinations(ctx, rng):
    q, k, v = data(rng, (3, 2)), data(rng, (4, 2)), data(rng, (4, 1))
    o = nwattn.pool(q, k, v, ctx=ctx)
    assert isinstance(o, np.ndarray)
    o2, w = nwattn.pool(q, k, v, weights=True, ctx=ctx)
    o3, lse = nwattn.pool(q, k, v, lse=True, ctx=ctx)
    assert w.shape == (3, 4) and lse.shape == (3,)
    np.testing.assert_array_equal(o, o2)
    np.testing.assert_array_equal(o, o3)
    o4 = np.empty((3, 1), np.float32)
    w4 = np.empty((3, 4), np.float32)
    l4 = np.empty(3, np.float32)
    r = nwattn.pool(q, k, v, out=o4, weights=w4, lse=l4, ctx=ctx)
    assert r[0] is o4 and r[1] is w4 and r[2] is l4


def test_pool_masks(ctx, rng):
    m = n = 8
    q = k = data(rng, (2, m, 3))
    v = data(rng, (2, n, 2))
    lens = np.array([5, 8])
    keep = rng.random((m, n)) > 0.2
    additive = data(rng, (2, m, n), -1, 1)
    o, w = nwattn.pool(q, k, v, score="gaussian", valid_lens=lens, leave_one_out=True,
                       causal=True, keep=keep, additive=additive, weights=True, ctx=ctx)
    ok = npref.keep_matrix((2,), m, n, valid_lens=lens, causal=True, leave_one_out=True,
                           keep=keep)
    want_o, want_w, _ = npref.pool(q, k, v, ok, additive, kind="gaussian")
    close(o, want_o, ctx)
    close(w, want_w, ctx)
    assert np.all(w[0, 0] == 0)  # row 0: causal keeps key 0, leave-one-out removes it


def test_pool_broadcasts_keys_and_values_over_query_batches(ctx, rng):
    q = data(rng, (4, 3, 2))
    k, v = data(rng, (5, 2)), data(rng, (5, 3))
    o = nwattn.pool(q, k, v, ctx=ctx)
    for i in range(4):
        close(o[i], npref.pool(q[i], k, v)[0], ctx)


@pytest.mark.parametrize("shape", [((), 1, 1, 1), ((), 6, 5, 2), ((3,), 2, 7, 1), ((2, 2), 4, 3, 3)])
def test_average_pool(ctx, rng, shape):
    b, m, n, dv = shape
    v = data(rng, b + (n, dv))
    got = nwattn.average_pool(v, m, ctx=ctx)
    want = np.broadcast_to(np.asarray(v, np.float64).mean(axis=-2, keepdims=True), b + (m, dv))
    close(got, want, ctx)


def test_average_pool_masks(ctx, rng):
    m = n = 6
    v = data(rng, (2, n, 3))
    lens = [2, 6]
    got = nwattn.average_pool(v, m, valid_lens=lens, leave_one_out=True, ctx=ctx)
    ok = npref.keep_matrix((2,), m, n, valid_lens=lens, leave_one_out=True)
    close(got, npref.average_pool(v, m, ok), ctx)
    out = np.full((2, m, 3), 9.0, np.float32)
    assert nwattn.average_pool(v, valid_lens=lens, leave_one_out=True, out=out, ctx=ctx) is out
    close(out, npref.average_pool(v, m, ok), ctx)


def test_empty_problems(ctx):
    assert nwattn.pool(np.zeros((0, 2)), np.zeros((3, 2)), np.zeros((3, 4)),
                       ctx=ctx).shape == (0, 4)
    assert nwattn.pool(np.zeros((0, 5, 2)), np.zeros((3, 2)), np.zeros((3, 4)),
                       ctx=ctx).shape == (0, 5, 4)
    # n == 0: every row fully masked: zero output, lse = -inf
    o, lse = nwattn.pool(np.ones((2, 2)), np.zeros((0, 2)), np.zeros((0, 3)), lse=True, ctx=ctx)
    assert np.all(o == 0) and np.all(np.isneginf(lse))
    assert nwattn.bmm(np.zeros((2, 0)), np.zeros((0, 3)), ctx=ctx).tolist() == [[0.0] * 3] * 2


def test_default_context_is_used_without_ctx(rng):
    q, k, v = data(rng, (3, 2)), data(rng, (4, 2)), data(rng, (4, 1))
    ctx = nwattn.default_context()
    assert ctx is nwattn.default_context()
    np.testing.assert_allclose(nwattn.pool(q, k, v), npref.pool(q, k, v)[0], rtol=1e-4, atol=1e-5)


# ---- The seeds' formulas, as the articles write them ---------------------------------------

def d2l_data(rng):
    x_train = np.sort(rng.random(50) * 5).astype(np.float32)
    y_train = (npref.d2l_f(x_train) + rng.normal(0.0, 0.5, 50)).astype(np.float32)
    x_test = np.arange(0, 5, 0.1, dtype=np.float32)
    return x_train, y_train, x_test


def test_d2l_average_pooling(ctx, rng):
    x_train, y_train, x_test = d2l_data(rng)
    y_hat = nwattn.average_pool(y_train[:, None], len(x_test), ctx=ctx)[:, 0]
    close(y_hat, np.repeat(np.mean(y_train, dtype=np.float64), len(x_test)), ctx)


def test_d2l_nonparametric_pooling(ctx, rng):
    x_train, y_train, x_test = d2l_data(rng)
    y_hat, w = nwattn.pool(x_test[:, None], x_train[:, None], y_train[:, None],
                           score="gaussian", bandwidth=1.0, weights=True, ctx=ctx)
    want_y, want_w = npref.d2l_nonparametric(x_test, x_train, y_train)
    close(y_hat[:, 0], want_y, ctx)
    close(w, want_w, ctx)


@pytest.mark.parametrize("w_param", [0.3, 1.0, 4.7, -2.5])
def test_d2l_parametric_forward_is_gaussian_with_bandwidth_one_over_w(ctx, rng, w_param):
    x_train, y_train, x_test = d2l_data(rng)
    y_hat, w = nwattn.pool(x_test[:, None], x_train[:, None], y_train[:, None],
                           score="gaussian", bandwidth=1 / abs(w_param), weights=True, ctx=ctx)
    want_y, want_w = npref.d2l_parametric(x_test, x_train, y_train, w_param)
    close(y_hat[:, 0], want_y, ctx)
    close(w, want_w, ctx)


@pytest.mark.parametrize("h", [0.05, 0.5, 10.0])
def test_seed1_bandwidths(ctx, rng, h):
    x_train = (rng.random(80) * 10).astype(np.float32)
    y_train = (np.sin(x_train) + 0.2 * rng.standard_normal(80)).astype(np.float32)
    x_grid = np.linspace(-1, 11, 200, dtype=np.float32)
    y_pred, w = nwattn.pool(x_grid[:, None], x_train[:, None], y_train[:, None],
                            score="gaussian", bandwidth=h, weights=True, ctx=ctx)
    want_y, want_w = npref.seed1_nadaraya_watson(x_grid, x_train, y_train, h)
    if ctx.backend == nwattn.Backend.REFERENCE or h >= 0.5:
        close(y_pred[:, 0], want_y, ctx)
        close(w, want_w, ctx)
    else:
        # h = 0.05 with BLAS: scores of size (x/h)^2 ~ 1e4 carry float32 rounding ~1e-3, which
        # the header documents; the weights are then right to that relative error.
        np.testing.assert_allclose(y_pred[:, 0], want_y, atol=2e-2)
    assert np.isfinite(y_pred).all()  # exp(-diff^2 / 0.005) underflows, the softmax does not

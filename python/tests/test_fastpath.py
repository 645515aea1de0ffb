"""The compiled fast path (nwattn._fast) against the pure-Python path, in one process: the same
results bit for bit (they make the same C call), the same errors, and a fallback to the pure
path for everything that is not plain. Skipped where the extension is not built; the whole
suite also runs with NWATTN_EXTENSION=off (CTest's python_binding_pure)."""
import os

import numpy as np
import pytest

import nwattn
from nwattn import _autograd, _core, _fastpath, _regression

pytestmark = pytest.mark.skipif(_fastpath.ext is None,
                                reason=f"no compiled fast path: {_fastpath.reason}")


def test_the_extension_ctest_names_is_the_one_in_use():
    setting = os.environ.get(_fastpath.ENV_VAR, "")
    if setting and setting.lower() not in ("off", "0"):
        assert _fastpath.path == setting


@pytest.fixture
def pure(monkeypatch):
    """Runs a call on the pure-Python path."""
    def run(fn, *args, **kwargs):
        with monkeypatch.context() as mp:
            mp.setattr(_core, "_fast", None)
            mp.setattr(_regression, "_fast", None)
            mp.setattr(_autograd, "_fast", None)
            return fn(*args, **kwargs)
    return run


def same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
        return
    assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


SIZES = [1, 2, 7, 50]


@pytest.mark.parametrize("score, kw", [("gaussian", {"bandwidth": 0.7}), ("laplace", {}),
                                       ("dot", {}), ("cosine", {"scale": 2.0}),
                                       (nwattn.ScoreKind.GAUSSIAN, {}), (0, {"scale": 3})])
def test_pool_matches_the_pure_path(rng, pure, ctx, score, kw):
    for _ in range(6):
        m, n, d, dv = (int(rng.choice(SIZES)) for _ in range(4))
        batch = [(), (3,), (1,)][int(rng.integers(3))]
        q, k, v = f32(rng, *batch, m, d), f32(rng, *batch, n, d), f32(rng, *batch, n, dv)
        if batch and rng.integers(2):
            k, v = k[0], v[0]  # shared keys: batch stride 0
        for extra in ({}, {"weights": True}, {"lse": True}, {"weights": True, "lse": True},
                      {"causal": True}):
            args = dict(score=score, ctx=ctx, **kw, **extra)
            same(nwattn.pool(q, k, v, **args), pure(nwattn.pool, q, k, v, **args))


def test_pool_leave_one_out_and_default_context(rng, pure):
    q = f32(rng, 9, 2)
    args = dict(score="gaussian", leave_one_out=True)
    same(nwattn.pool(q, q, q, **args), pure(nwattn.pool, q, q, q, **args))


def test_outputs_given_are_written_and_returned(rng, ctx):
    q, k, v = f32(rng, 5, 3), f32(rng, 8, 3), f32(rng, 8, 2)
    out, w, lse = np.empty((5, 2), np.float32), np.empty((5, 8), np.float32), \
        np.empty(5, np.float32)
    r = nwattn.pool(q, k, v, out=out, weights=w, lse=lse, ctx=ctx)
    assert r[0] is out and r[1] is w and r[2] is lse
    same(r, nwattn.pool(q, k, v, weights=True, lse=True, ctx=ctx))
    s = f32(rng, 4, 6)
    want = nwattn.softmax(s, ctx=ctx)
    assert nwattn.softmax(s, out=s, ctx=ctx) is s  # in place
    same(s, want)


@pytest.mark.parametrize("fn, args", [
    ("softmax", lambda r: (f32(r, 3, 4, 5),)),
    ("softmax", lambda r: (f32(r, 1, 1),)),
    ("bmm", lambda r: (f32(r, 2, 3, 4), f32(r, 2, 4, 5))),
    ("bmm", lambda r: (f32(r, 3, 4), f32(r, 4, 1))),
    ("bmm", lambda r: (f32(r, 2, 3, 4), f32(r, 4, 5))),
    ("scores", lambda r: (f32(r, 7, 1), f32(r, 50, 1))),
    ("scores", lambda r: (f32(r, 2, 7, 3), f32(r, 2, 5, 3))),
])
def test_softmax_bmm_scores_match_the_pure_path(rng, pure, ctx, fn, args):
    a = args(rng)
    f = getattr(nwattn, fn)
    same(f(*a, ctx=ctx), pure(f, *a, ctx=ctx))
    if fn == "softmax":
        same(f(*a, lse=True, causal=True, ctx=ctx), pure(f, *a, lse=True, causal=True, ctx=ctx))


@pytest.mark.parametrize("kw", [{}, {"kernel": "epanechnikov", "empty": "nan"},
                                {"kernel": nwattn.Kernel.TRICUBE, "degree": "linear"},
                                {"kernel": 4, "empty": 2}, {"weights": True},
                                {"row_flags": True, "degree": 1},
                                {"weights": True, "row_flags": True}])
def test_nw_predict_matches_the_pure_path(rng, pure, ctx, kw):
    for xs, ys in (((20,), (20,)), ((20, 1), (20, 3)), ((20, 2), (20,))):
        x, y = f32(rng, *xs), f32(rng, *ys)
        xq = f32(rng, 7, *xs[1:])
        d = 1 if len(xs) == 1 else xs[1]
        for h in (0.8, 2, np.full(d, 0.9, np.float32), np.float32(0.5), [0.6] * d):
            same(nwattn.nw_predict(xq, x, y, h, ctx=ctx, **kw),
                 pure(nwattn.nw_predict, xq, x, y, h, ctx=ctx, **kw))


def test_nw_predict_out(rng, ctx):
    x, y = f32(rng, 30), f32(rng, 30)
    out = np.empty(11, np.float32)
    assert nwattn.nw_predict(x[:11], x, y, 0.5, out=out, ctx=ctx) is out
    same(out, nwattn.nw_predict(x[:11], x, y, 0.5, ctx=ctx))


# Not plain: these take the pure path (a copy, a conversion, broadcasting, an error message).
FALLBACKS = [
    lambda r: nwattn.pool(f32(r, 4, 2).astype(np.float64), f32(r, 5, 2), f32(r, 5, 1)),
    lambda r: nwattn.pool(f32(r, 2, 4).T, f32(r, 5, 2), f32(r, 5, 1)),
    lambda r: nwattn.pool(f32(r, 2, 2, 4, 2), f32(r, 5, 2), f32(r, 5, 1)),
    lambda r: nwattn.pool(f32(r, 4, 2), f32(r, 5, 2), f32(r, 5, 1), score="GAUSSIAN"),
    lambda r: nwattn.pool(f32(r, 4, 2), f32(r, 5, 2), f32(r, 5, 1), score="gaussian",
                          bandwidths=[0.5, 2.0]),
    lambda r: nwattn.pool(f32(r, 4, 2), f32(r, 5, 2), f32(r, 5, 1), valid_lens=3),
    lambda r: nwattn.pool(f32(r, 3, 4, 2), f32(r, 2, 5, 2), f32(r, 5, 1)),
    lambda r: nwattn.pool(f32(r, 4, 2).tolist(), f32(r, 5, 2), f32(r, 5, 1)),
    lambda r: nwattn.softmax(f32(r, 4, 6)[:, ::2]),
    lambda r: nwattn.softmax(f32(r, 4, 6), keep=np.ones((4, 6), bool)),
    lambda r: nwattn.bmm(f32(r, 3, 4), f32(r, 4, 2).astype(np.float16)),
    lambda r: nwattn.nw_predict(f32(r, 5), f32(r, 9), f32(r, 9), "0.5"),
    lambda r: nwattn.nw_predict(f32(r, 5), f32(r, 9), f32(r, 9), 0.5, kernel="Gaussian"),
    lambda r: nwattn.nw_predict(f32(r, 5), f32(r, 9), f32(r, 9), None),
    lambda r: nwattn.nw_predict(f32(r, 5, 70), f32(r, 9, 70), f32(r, 9), 9.0),
]


@pytest.mark.parametrize("i", range(len(FALLBACKS)))
def test_what_is_not_plain_gives_what_the_pure_path_gives(pure, i):
    def outcome(run):
        try:
            return run(lambda: FALLBACKS[i](np.random.default_rng(i)))
        except Exception as exc:  # the same exception, the same message
            return type(exc), str(exc)
    fast = outcome(lambda f: f())
    slow = outcome(lambda f: pure(f))
    if isinstance(fast, tuple) and isinstance(fast[0], type):
        assert fast == slow
    else:
        same(fast, slow)


@pytest.mark.parametrize("call", [
    lambda ctx: nwattn.pool(np.zeros((2, 1), np.float32), np.zeros((3, 1), np.float32),
                            np.zeros((3, 1), np.float32), score="gaussian", bandwidth=-1.0,
                            ctx=ctx),
    lambda ctx: nwattn.pool(np.zeros((2, 1), np.float32), np.zeros((3, 1), np.float32),
                            np.zeros((3, 1), np.float32), score=9, ctx=ctx),
    lambda ctx: nwattn.nw_predict(np.zeros(2, np.float32), np.zeros(3, np.float32),
                                  np.zeros(3, np.float32), 0.0, ctx=ctx),
    lambda ctx: (lambda a: nwattn.bmm(a, a, out=a, ctx=ctx))(np.ones((3, 3), np.float32)),
])
def test_c_errors_are_raised_as_on_the_pure_path(pure, ctx, call):
    with pytest.raises(nwattn.NWAttnError) as fast:
        call(ctx)
    with pytest.raises(nwattn.NWAttnError) as slow:
        pure(call, ctx)
    assert (fast.value.status, str(fast.value), fast.value.function) == \
        (slow.value.status, str(slow.value), slow.value.function)
    assert ctx.last_error == str(fast.value)


def test_closed_and_foreign_contexts(rng):
    q = f32(rng, 3, 1)
    c = nwattn.Context()
    c.close()
    with pytest.raises(ValueError, match="closed"):
        nwattn.pool(q, q, q, ctx=c)
    with pytest.raises(TypeError, match="ctx"):
        nwattn.bmm(q, q.T, ctx=object())


def test_no_reference_is_leaked_or_stolen(rng):
    import sys
    q, k, v = f32(rng, 5, 2), f32(rng, 6, 2), f32(rng, 6, 3)
    out, w = np.empty((5, 3), np.float32), np.empty((5, 6), np.float32)
    ctx = nwattn.Context()
    objects = (q, k, v, out, w, ctx, ctx._handle)
    before = [sys.getrefcount(o) for o in objects]
    for _ in range(50):
        nwattn.pool(q, k, v, out=out, weights=w, lse=True, ctx=ctx)
        r = nwattn.pool(q, k, v, weights=True, ctx=ctx)
        assert sys.getrefcount(r[0]) == sys.getrefcount(r[1])
        nwattn.nw_predict(q[:, 0], k[:, 0], v[:, 0], 0.5, weights=w, row_flags=True, ctx=ctx)
        nwattn.bmm(q, k.T.copy(), ctx=ctx)
        nwattn.softmax(w, out=w, ctx=ctx)
        with pytest.raises(nwattn.NWAttnError):
            nwattn.pool(q, k, v, out=out, score="gaussian", bandwidth=-1.0, ctx=ctx)
        with pytest.raises(nwattn.NWAttnError):
            nwattn.bmm(out, out[:3], out=out, ctx=ctx)
    del r
    assert [sys.getrefcount(o) for o in objects] == before


def test_plain_arguments_do_take_the_compiled_path(rng):
    """Otherwise the comparisons above would compare the pure path with itself."""
    ext = _fastpath.ext
    q, k, v = f32(rng, 5, 2), f32(rng, 6, 2), f32(rng, 6, 3)
    s = f32(rng, 2, 5, 6)
    x = f32(rng, 6)
    none = NotImplemented
    assert ext.pool(q, k, v, "gaussian", None, 0.5, None, None, False, False, None, None, None,
                    True, True, None) is not none
    assert ext.softmax(s, None, True, False, None, None, None, True, None) is not none
    assert ext.bmm(s, f32(rng, 6, 4), None, None) is not none
    assert ext.scores(q, k, "dot", None, None, None, None, None) is not none
    assert ext.nw_predict(x, x, x, 0.5, "gaussian", "constant", "nearest", True, True, None,
                          None) is not none
    # and what is not plain does not
    assert ext.pool(q.astype(np.float64), k, v, "dot", None, None, None, None, False, False,
                    None, None, None, None, None, None) is none
    assert ext.softmax(s, 3, False, False, None, None, None, None, None) is none


def same_grads(a, b):
    """pool_backward's (dq, dk, dv, d_param): d_param a float or a (d,) array on both paths."""
    same(a[:3], b[:3])
    assert type(a[3]) is type(b[3])
    if isinstance(a[3], float):
        assert a[3] == b[3] or (a[3] != a[3] and b[3] != b[3])
    else:
        same(a[3], b[3])


@pytest.mark.parametrize("score, kw", [("gaussian", {"bandwidth": 0.7}), ("laplace", {}),
                                       ("dot", {}), ("cosine", {"scale": 2.0}),
                                       ("gaussian", {"bandwidths": True}),
                                       ("laplace", {"bandwidths": True}), (0, {"scale": 3})])
def test_pool_backward_matches_the_pure_path(rng, pure, ctx, score, kw):
    for _ in range(6):
        m, n, d, dv = (int(rng.choice(SIZES)) for _ in range(4))
        batch = [(), (3,), (1,)][int(rng.integers(3))]
        q, k, v = f32(rng, *batch, m, d), f32(rng, *batch, n, d), f32(rng, *batch, n, dv)
        args = dict(kw)
        if args.get("bandwidths") is True:
            args["bandwidths"] = (0.5 + rng.random(d)).astype(np.float32)
        for extra in ({}, {"causal": True}, {"leave_one_out": True}):
            o, lse = nwattn.pool(q, k, v, score=score, lse=True, ctx=ctx, **args, **extra)
            d_o = f32(rng, *o.shape)
            call = dict(score=score, ctx=ctx, **args, **extra)
            same_grads(nwattn.pool_backward(q, k, v, o, lse, d_o, **call),
                       pure(nwattn.pool_backward, q, k, v, o, lse, d_o, **call))


BACKWARD_FALLBACKS = [  # broadcast batch axes, a strided array, float64, a list, a mask array
    lambda r, o, lse, do: (f32(r, 2, 4, 2), f32(r, 5, 2), f32(r, 5, 3), o, lse, do),
    lambda r, o, lse, do: (f32(r, 2, 2, 4).transpose(0, 2, 1), f32(r, 2, 5, 2),
                           f32(r, 2, 5, 3), o, lse, do),
    lambda r, o, lse, do: (f32(r, 2, 4, 2).astype(np.float64), f32(r, 2, 5, 2),
                           f32(r, 2, 5, 3), o, lse, do),
    lambda r, o, lse, do: (f32(r, 2, 4, 2), f32(r, 2, 5, 2), f32(r, 2, 5, 3), o,
                           lse.tolist(), do),
    lambda r, o, lse, do: (f32(r, 2, 4, 2), f32(r, 2, 5, 2), f32(r, 2, 5, 3), o, lse[0], do),
]


@pytest.mark.parametrize("i", range(len(BACKWARD_FALLBACKS)))
def test_pool_backward_what_is_not_plain_gives_what_the_pure_path_gives(pure, i):
    r = np.random.default_rng(i)
    o, lse, do = f32(r, 2, 4, 3), f32(r, 2, 4), f32(r, 2, 4, 3)
    args = BACKWARD_FALLBACKS[i](r, o, lse, do)
    assert _fastpath.ext.pool_backward(*args, "dot", None, None, None, None, False, False,
                                       None, None, None) is NotImplemented
    same_grads(nwattn.pool_backward(*args), pure(nwattn.pool_backward, *args))


def test_pool_backward_errors_and_references_as_on_the_pure_path(rng, pure):
    import sys
    import weakref
    q, k, v = f32(rng, 5, 2), f32(rng, 6, 2), f32(rng, 6, 3)
    ctx = nwattn.Context()
    o, lse = nwattn.pool(q, k, v, lse=True, ctx=ctx)
    objects = (q, k, v, o, lse, ctx, ctx._handle)
    before = [sys.getrefcount(x) for x in objects]
    for _ in range(50):
        g = nwattn.pool_backward(q, k, v, o, lse, o, ctx=ctx)
        alive = [weakref.ref(x) for x in g[:3]]
        del g  # the gradients had no other owner
        assert [a() for a in alive] == [None] * 3
        g = nwattn.pool_backward(q, k, v, o, lse, o, score="gaussian", bandwidths=np.abs(q[0]) + 0.5,
                                 ctx=ctx)
        alive = [weakref.ref(x) for x in g]
        del g
        assert [a() for a in alive] == [None] * 4
        with pytest.raises(nwattn.NWAttnError):
            nwattn.pool_backward(q, k, v, o, lse, o, score="gaussian", bandwidth=-1.0,
                                 ctx=ctx)
    assert [sys.getrefcount(x) for x in objects] == before
    call = (q, k, v, o, lse, o)
    with pytest.raises(nwattn.NWAttnError) as fast:
        nwattn.pool_backward(*call, score="laplace", bandwidth=0.0, ctx=ctx)
    with pytest.raises(nwattn.NWAttnError) as slow:
        pure(nwattn.pool_backward, *call, score="laplace", bandwidth=0.0, ctx=ctx)
    assert (fast.value.status, str(fast.value), fast.value.function) == \
        (slow.value.status, str(slow.value), slow.value.function)


def test_pool_backward_plain_arguments_take_the_compiled_path(rng):
    ext = _fastpath.ext
    q, k, v = f32(rng, 3, 5, 2), f32(rng, 3, 6, 2), f32(rng, 3, 6, 4)
    o, lse = nwattn.pool(q, k, v, score="gaussian", lse=True)
    bws = np.array([0.5, 2.0], np.float32)
    r = ext.pool_backward(q, k, v, o, lse, o, "gaussian", None, None, bws, None, False, True,
                          None, None, None)
    assert r is not NotImplemented and r[3].shape == (2,)
    r = ext.pool_backward(q[0], k[0], v[0], o[0], lse[0], o[0], "dot", None, None, None, None,
                          True, False, None, None, None)
    assert r is not NotImplemented and isinstance(r[3], float)
    assert ext.pool_backward(q, k, v, o, lse, o, "dot", None, None, None, 3, False, False,
                             None, None, None) is NotImplemented


def test_per_feature_bandwidths_match_the_pure_path(rng, pure, ctx):
    for d in (1, 2, 7):
        q, k, v = f32(rng, 3, 5, d), f32(rng, 3, 6, d), f32(rng, 3, 6, 2)
        bws = (0.5 + rng.random(d)).astype(np.float32)
        for score in ("gaussian", "laplace"):
            args = dict(score=score, bandwidths=bws, ctx=ctx)
            assert _fastpath.ext.scores(q, k, score, None, None, bws, None, ctx) \
                is not NotImplemented
            same(nwattn.pool(q, k, v, lse=True, **args),
                 pure(nwattn.pool, q, k, v, lse=True, **args))
            same(nwattn.scores(q, k, **args), pure(nwattn.scores, q, k, **args))
        assert _fastpath.ext.scores(q, k, "gaussian", None, None, bws[:d - 1], None,
                                    ctx) is NotImplemented

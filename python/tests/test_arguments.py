"""Issue 15's binding findings: every integer and enum argument is range-checked before it reaches
ctypes (which keeps only the low bits), every array the binding allocates for C to fill is sized
from what C writes, and the errors name the argument."""
import numpy as np
import pytest

import nwattn

SIZE_OUT_OF_RANGE = [2 ** 64, 2 ** 64 + 2, 2 ** 65 + 1, -1]
ENUM_OUT_OF_RANGE = [2 ** 40, 2 ** 33, 2 ** 31, -2 ** 31 - 1, -2 ** 40]


def _f32(*shape):
    return np.random.default_rng(7).random(shape, dtype=np.float32)


X, Y = np.linspace(0, 5, 40, dtype=np.float32), np.sin(np.linspace(0, 5, 40)).astype(np.float32)
Q, K, V = _f32(4, 3), _f32(5, 3), _f32(5, 2)
W6 = _f32(6, 6)
MX = np.column_stack([X[:12], np.arange(12) % 3]).astype(np.float32)  # columns 'c', 'u'


def _set_threads(value):
    with nwattn.Context() as ctx:
        ctx.threads = value


def _set_state(value):
    nwattn.Rng(1).state = value


# (argument name, a call that passes `value` as that argument)
SIZE_ARGUMENTS = [
    ("t", lambda v: nwattn.positional_encoding(v, 4)),
    ("d", lambda v: nwattn.positional_encoding(3, v)),
    ("first", lambda v: nwattn.positional_encoding(3, 4, first=v)),
    ("m", lambda v: nwattn.average_pool(V, v)),
    ("threads", lambda v: nwattn.Context(threads=v)),
    ("threads", _set_threads),
    ("heads", lambda v: nwattn.attention(_f32(3, 6), w_q=W6, w_k=W6, w_v=W6, heads=v)),
    ("key_offset", lambda v: nwattn.pool_partial(Q, K, V, key_offset=v)),
    ("grid_points", lambda v: nwattn.select_bandwidth(X, Y, grid_points=v)),
    ("max_evaluations", lambda v: nwattn.select_bandwidth(X, Y, max_evaluations=v)),
    ("epochs", lambda v: nwattn.wmodel_train(X, Y, 1.0, learning_rate=0.1, epochs=v)),
    ("n", lambda v: nwattn.dataset_generate("d2l", v, nwattn.Rng(1))),
    ("seed", lambda v: nwattn.Rng(v)),
    ("state", _set_state),
]

ENUM_ARGUMENTS = [
    ("score", lambda v: nwattn.pool(Q, K, V, score=v)),
    ("score", lambda v: nwattn.scores(Q, K, score=v)),
    ("backend", lambda v: nwattn.Context(v)),
    ("kernel", lambda v: nwattn.nw_predict(X, X, Y, 1.0, kernel=v)),
    ("degree", lambda v: nwattn.nw_predict(X, X, Y, 1.0, degree=v)),
    ("empty", lambda v: nwattn.nw_predict(X, X, Y, 1.0, empty=v)),
    ("kernel", lambda v: nwattn.nw_cv(X, Y, 1.0, kernel=v)),
    ("rule", lambda v: nwattn.bandwidth_rule_of_thumb(X, v)),
    ("dataset", lambda v: nwattn.dataset_truth(v, X)),
    ("dataset", lambda v: nwattn.dataset_generate(v, 3, nwattn.Rng(1))),
    ("reg_type", lambda v: nwattn.mixed_predict(MX, MX, Y[:12], [0.5, 0.3], "cu", reg_type=v)),
    ("reg_type", lambda v: nwattn.mixed_cv(MX, Y[:12], [[0.5, 0.3]], "cu", reg_type=v)),
    ("status", lambda v: nwattn.status_name(v)),
]


@pytest.mark.parametrize("value", SIZE_OUT_OF_RANGE)
@pytest.mark.parametrize("name, call", SIZE_ARGUMENTS, ids=[f"{n}{i}" for i, (n, _) in
                                                          enumerate(SIZE_ARGUMENTS)])
def test_size_arguments_out_of_range_are_refused_by_name(name, call, value):
    with pytest.raises(ValueError, match=rf"\b{name}\b.*out of range|\b{name}\b.*>="):
        call(value)


@pytest.mark.parametrize("value", ENUM_OUT_OF_RANGE)
@pytest.mark.parametrize("name, call", ENUM_ARGUMENTS, ids=[f"{n}{i}" for i, (n, _) in
                                                          enumerate(ENUM_ARGUMENTS)])
def test_enum_arguments_out_of_int_range_are_refused_by_name(name, call, value):
    with pytest.raises(ValueError, match=rf"\b{name}\b.*out of range"):
        call(value)


@pytest.mark.parametrize("name, call", ENUM_ARGUMENTS[:-1])
def test_enum_numbers_in_int_range_naming_no_member_are_the_c_librarys_to_refuse(name, call):
    with pytest.raises(nwattn.NWAttnError) as err:
        call(2 ** 31 - 1)
    assert err.value.status == nwattn.Status.ERR_BAD_ENUM


@pytest.mark.parametrize("name, call", SIZE_ARGUMENTS + ENUM_ARGUMENTS,
                         ids=[n for n, _ in SIZE_ARGUMENTS + ENUM_ARGUMENTS])
def test_integer_arguments_refuse_floats(name, call):
    with pytest.raises(TypeError, match=rf"\b{name}\b.*integer"):
        call(2.5)


def test_integer_arguments_take_numpy_integers_and_int_enums():
    p = nwattn.positional_encoding(np.int64(3), np.uint8(4), first=np.int32(2))
    assert np.array_equal(p, nwattn.positional_encoding(3, 4, first=2))
    o = nwattn.pool(Q, K, V, score=nwattn.ScoreKind.GAUSSIAN)
    assert np.array_equal(o, nwattn.pool(Q, K, V, score=np.int64(1)))


def test_select_bandwidth_grid_points_zero_takes_the_default_and_the_curve_has_its_size():
    # Zero means "the default" (16) in C, which writes that many entries into the curve.
    default = nwattn.cv_options_default()["grid_points"]
    sel = nwattn.select_bandwidth(X, Y, grid_points=0)
    assert sel.curve_scales.shape == (default,) and sel.curve_cv.shape == (default,)
    assert np.all(np.isfinite(sel.curve_scales)) and np.all(np.isfinite(sel.curve_cv))
    assert np.array_equal(sel.bandwidths, nwattn.select_bandwidth(X, Y).bandwidths)


def test_select_bandwidth_curve_is_sized_from_the_grid_it_asks_for():
    sel = nwattn.select_bandwidth(X, Y, grid_points=5, max_evaluations=40)
    assert sel.curve_scales.shape == (5,) and sel.curve_cv.shape == (5,)
    assert np.all(np.diff(sel.curve_scales) > 0)


def test_nw_predict_wrong_number_of_bandwidths_names_the_argument():
    x2 = _f32(30, 2)
    with pytest.raises(ValueError, match=r"bandwidth: 3 values.*d = 2"):
        nwattn.nw_predict(x2, x2, x2[:, 0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"bandwidth: .*shape \(2, 2\)"):
        nwattn.nw_predict(x2, x2, x2[:, 0], np.ones((2, 2)))
    # one value for every dimension, or one per dimension, both work
    one = nwattn.nw_predict(x2, x2, x2[:, 0], 0.5)
    assert np.array_equal(one, nwattn.nw_predict(x2, x2, x2[:, 0], [0.5, 0.5]))
    assert np.array_equal(one, nwattn.nw_predict(x2, x2, x2[:, 0], [0.5]))


def test_select_bandwidth_wrong_number_of_starts_names_the_argument():
    x2 = _f32(30, 2)
    with pytest.raises(ValueError, match=r"start: 3 values.*d = 2"):
        nwattn.select_bandwidth(x2, x2[:, 0], start=[1.0, 1.0, 1.0])


def _unaligned(a):
    """A float32 copy of a whose data start one byte past an aligned address."""
    raw = np.empty(a.nbytes + 1, np.uint8)
    out = raw[1:].view(np.float32).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned
    return out


def test_unaligned_float32_inputs_are_copied_not_refused():
    want = nwattn.pool(Q, K, V, score="gaussian")
    got = nwattn.pool(_unaligned(Q), _unaligned(K), _unaligned(V), score="gaussian")
    assert np.array_equal(got, want)
    s = _f32(3, 7)
    assert np.array_equal(nwattn.softmax(_unaligned(s)), nwattn.softmax(s))
    assert np.array_equal(nwattn.bmm(_unaligned(Q), _unaligned(K.T.copy())), nwattn.bmm(Q, K.T))
    assert np.array_equal(nwattn.nw_predict(_unaligned(X), X, _unaligned(Y), 0.4),
                          nwattn.nw_predict(X, X, Y, 0.4))


def test_unaligned_output_is_refused_with_the_reason():
    out = _unaligned(np.zeros((4, 2), np.float32))
    with pytest.raises(ValueError, match=r"out: .*not aligned"):
        nwattn.pool(Q, K, V, out=out)


def _read_only(state):
    for a in (state.acc, state.max, state.sum):
        a.flags.writeable = False
    return state


def test_merge_states_reads_a_read_only_other_state():
    a = nwattn.pool_partial(Q, K[:2], V[:2], score="gaussian")
    b = _read_only(nwattn.pool_partial(Q, K[2:], V[2:], key_offset=2, score="gaussian"))
    nwattn.merge_states(a, b)
    np.testing.assert_allclose(nwattn.finish_state(a), nwattn.pool(Q, K, V, score="gaussian"),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"into\.acc: the array is read-only"):
        nwattn.merge_states(b, a)


def test_finish_state_reads_a_read_only_state():
    st = _read_only(nwattn.pool_partial(Q, K, V, score="gaussian"))
    o, lse = nwattn.finish_state(st, lse=True)
    want, want_lse = nwattn.pool(Q, K, V, score="gaussian", lse=True)
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-5, atol=1e-6)

"""Layouts and dtypes: zero copy where the C API can describe the memory, conversions where
documented, refusals otherwise; never a silent misread."""
import numpy as np
import pytest

import nwattn
import npref
from nwattn import _arrays


def oracle_pool(q, k, v):
    return npref.pool(q, k, v, kind="gaussian")[0]


@pytest.fixture
def qkv(rng):
    q = rng.uniform(-1, 1, (6, 3)).astype(np.float32)
    k = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    v = rng.uniform(-1, 1, (5, 2)).astype(np.float32)
    return q, k, v


def check_pool(q, k, v, **kw):
    got = nwattn.pool(q, k, v, score="gaussian", **kw)
    np.testing.assert_allclose(got, oracle_pool(q, k, v), rtol=5e-5, atol=5e-6)
    return got


# ---- what the layout helper accepts as is ---------------------------------------------------

@pytest.mark.parametrize("make, expected", [
    (lambda a: a, (6, 0)),                                 # C-contiguous (4, 6)
    (lambda a: a[:, 1:4], (6, 0)),                         # column slice: ld 6
    (lambda a: a[::2], (12, 0)),                           # every other row: ld 12
    (lambda a: a[:, 2:3], (6, 0)),                         # a column of a matrix
    (lambda a: a[0][:, None], (1, 0)),                     # 1-D as a column: ld 1
    (lambda a: a[None].repeat(3, 0), (6, 24)),             # a batch
    (lambda a: np.broadcast_to(a, (5, 4, 6)), (6, 0)),     # broadcast batch: stride 0
    (lambda a: a.reshape(2, 2, 1, 6), (6, 6)),             # batch axes (2, 2): one stride
    (lambda a: a.reshape(2, 2, 6)[:, :, None, 1:3], (2, 6)),  # one-row items, sliced
])
def test_layouts_passed_without_copy(make, expected):
    arr = make(np.arange(24, dtype=np.float32).reshape(4, 6))
    assert _arrays._layout(arr) == expected


@pytest.mark.parametrize("make", [
    lambda a: a.T,                                   # column-major
    lambda a: a[:, ::2],                             # elements of a row not adjacent
    lambda a: a[::-1],                               # negative row step
    lambda a: np.broadcast_to(a[:1], (4, 6)),        # broadcast rows: ld 0
    lambda a: np.stack([a, a], 0)[:, :, :3][..., ::-1],  # reversed columns
    lambda a: np.stack([a, a, a, a]).reshape(2, 2, 4, 6).transpose(1, 0, 2, 3),  # batch axes not
])                                                       # one progression
def test_layouts_that_need_a_copy(make):
    assert _arrays._layout(make(np.arange(24, dtype=np.float32).reshape(4, 6))) is None


def test_unaligned_and_byteswapped_need_a_copy():
    raw = np.zeros(4 * 6 * 4 + 1, np.uint8)
    unaligned = raw[1:].view(np.float32).reshape(4, 6)
    assert not unaligned.flags.aligned
    assert _arrays._layout(unaligned) is None
    assert _arrays._layout(np.zeros((2, 3), ">f4")) is None or np.little_endian is False


# ---- zero copy, observed through the library's aliasing check -------------------------------
# An output that shares an element with an input is refused with NWATTN_ERR_ALIASING, which
# the C library can only notice if it saw the caller's memory: that proves the input was not
# copied.

def test_contiguous_input_is_not_copied(qkv):
    q, k, v = qkv
    buf = np.zeros((6, 3), np.float32)
    with pytest.raises(nwattn.NWAttnError) as err:
        nwattn.pool(buf, k, v[:, :1].copy(), out=buf[:, :1])
    assert err.value.status == nwattn.Status.ERR_ALIASING


def test_strided_float32_input_is_not_copied(rng):
    big = rng.uniform(-1, 1, (8, 10)).astype(np.float32)
    q = big[:, 2:5]  # ld 10, no copy
    k = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    v = rng.uniform(-1, 1, (4, 2)).astype(np.float32)
    with pytest.raises(nwattn.NWAttnError, match="ALIASING"):  # column 4 is q's and out's
        nwattn.pool(q, k, v, out=big[:, 4:6])
    got = check_pool(q, k, v)  # and it is read right
    again = nwattn.pool(q, k, v, score="gaussian", out=big[:, 6:8].copy())
    np.testing.assert_array_equal(again, got)


def test_out_array_is_written_in_place(qkv):
    q, k, v = qkv
    big = np.full((6, 7), 5.0, np.float32)
    got = nwattn.pool(q, k, v, score="gaussian", out=big[:, 2:4])
    assert np.shares_memory(got, big)
    np.testing.assert_allclose(big[:, 2:4], oracle_pool(q, k, v), rtol=5e-5, atol=5e-6)
    assert np.all(big[:, :2] == 5.0) and np.all(big[:, 4:] == 5.0)  # nothing else touched


# ---- inputs that are converted --------------------------------------------------------------

@pytest.mark.parametrize("transform", [
    lambda a: np.asfortranarray(a),
    lambda a: np.ascontiguousarray(a.T).T,
    lambda a: np.repeat(a, 2, axis=1)[:, ::2],
    lambda a: a[::-1][::-1],
    lambda a: np.ascontiguousarray(a[::-1])[::-1],
])
def test_noncontiguous_inputs_are_read_right(qkv, transform):
    q, k, v = qkv
    check_pool(transform(q), transform(k), transform(v))


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64, np.uint8, ">f4",
                                   ">f8"])
def test_other_real_dtypes_are_converted(dtype):
    q = np.array([[0.0], [1.0], [2.0]], dtype=dtype)
    k = np.array([[0.0], [2.0], [3.0], [4.0]], dtype=dtype)
    v = np.array([[1.0], [2.0], [3.0], [4.0]], dtype=dtype)
    got = nwattn.pool(q, k, v, score="gaussian")
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, oracle_pool(q.astype(np.float32), k.astype(np.float32),
                                                v.astype(np.float32)), rtol=5e-5)


def test_float64_is_rounded_to_float32():
    q = np.array([[1 + 2.0 ** -30]])  # rounds to 1.0 in float32
    s = nwattn.scores(q, np.array([[1.0]]), score="gaussian")
    assert s[0, 0] == 0.0


def test_lists_are_accepted():
    got = nwattn.bmm([[1, 2], [3, 4]], [[1], [1]])
    np.testing.assert_array_equal(got, [[3.0], [7.0]])


@pytest.mark.parametrize("bad", [
    np.ones((2, 2), complex), np.ones((2, 2), bool), np.array([[object()]]),
    np.array([["a", "b"]]), np.ones((2, 2), "datetime64[s]")])
def test_non_real_inputs_are_refused(bad):
    with pytest.raises(TypeError, match="not a real number type"):
        nwattn.bmm(bad, np.ones((bad.shape[-1], 1)))


def test_vectors_are_refused_as_matrices():
    with pytest.raises(ValueError, match=r"expected a matrix"):
        nwattn.pool(np.ones(3), np.ones((3, 1)), np.ones((3, 1)))


# ---- outputs are never converted ------------------------------------------------------------

@pytest.mark.parametrize("out, error, match", [
    (np.zeros((6, 2)), TypeError, "float32"),                      # float64
    (np.zeros((6, 2), ">f4"), TypeError, "float32"),               # byte-swapped
    (np.zeros((2, 6), np.float32).T, ValueError, "layout"),        # column-major
    (np.zeros((6, 4), np.float32)[:, ::2], ValueError, "layout"),  # strided elements
    (np.zeros((6, 3), np.float32), ValueError, "shape"),           # wrong shape
    (np.zeros((1, 6, 2), np.float32), ValueError, "shape"),        # no broadcasting of outputs
    ([[0.0] * 2] * 6, TypeError, "ndarray"),                       # not an array
])
def test_bad_out_arrays_are_refused(qkv, out, error, match):
    q, k, v = qkv
    with pytest.raises(error, match=match):
        nwattn.pool(q, k, v, out=out)


def test_read_only_out_is_refused(qkv):
    q, k, v = qkv
    out = np.zeros((6, 2), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        nwattn.pool(q, k, v, out=out)


def test_lse_must_have_adjacent_rows(qkv):
    q, k, v = qkv
    with pytest.raises(ValueError, match="layout"):
        nwattn.pool(q, k, v, lse=np.zeros(12, np.float32)[::2])
    lse = np.zeros((2, 8), np.float32)[:, 1:7]  # batch stride 8, rows adjacent: fine
    nwattn.pool(np.stack([q, q]), k, v, lse=lse)
    assert np.all(lse != 0)


# ---- batched shapes -------------------------------------------------------------------------

def test_batch_axes_broadcast_like_numpy(rng):
    q = rng.uniform(-1, 1, (2, 1, 4, 3)).astype(np.float32)
    k = rng.uniform(-1, 1, (3, 5, 3)).astype(np.float32)
    v = rng.uniform(-1, 1, (1, 5, 2)).astype(np.float32)
    got = nwattn.pool(q, k, v)
    assert got.shape == (2, 3, 4, 2)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], npref.pool(q[i, 0], k[j], v[0])[0],
                                       rtol=5e-5, atol=5e-6)


def test_batch_shapes_that_do_not_broadcast_are_refused():
    with pytest.raises(ValueError, match="batch shapes do not broadcast"):
        nwattn.pool(np.ones((2, 3, 1)), np.ones((3, 4, 1)), np.ones((4, 1)))


@pytest.mark.parametrize("q, k, v, match", [
    ((3, 2), (4, 3), (4, 1), "features"),
    ((3, 2), (4, 2), (5, 1), "keys"),
])
def test_mismatched_matrix_shapes_are_refused(q, k, v, match):
    with pytest.raises(ValueError, match=match):
        nwattn.pool(np.ones(q), np.ones(k), np.ones(v))


def test_valid_lens_shapes():
    s = np.zeros((2, 3, 4), np.float32)
    per_item = nwattn.softmax(s, valid_lens=[1, 2])
    np.testing.assert_allclose(per_item[0, :, 0], 1.0)
    np.testing.assert_allclose(per_item[1, :, :2], 0.5)
    per_row = nwattn.softmax(s, valid_lens=[[1, 2, 4], [4, 4, 1]])
    np.testing.assert_allclose(per_row[0, 2], 0.25)
    np.testing.assert_allclose(per_row[1, 2, 0], 1.0)
    scalar = nwattn.softmax(s, valid_lens=2)  # one length broadcast to every item
    np.testing.assert_allclose(scalar[..., :2], 0.5)
    with pytest.raises(ValueError, match="valid_lens"):
        nwattn.softmax(s, valid_lens=[1, 2, 3])
    with pytest.raises(TypeError, match="integer"):
        nwattn.softmax(s, valid_lens=[1.0, 2.0])
    with pytest.raises(ValueError, match=">= 0"):
        nwattn.softmax(s, valid_lens=[-1, 2])


def test_keep_accepts_bool_and_integers():
    s = np.zeros((2, 3), np.float32)
    a = nwattn.softmax(s, keep=[[True, False, True], [False, False, True]])
    b = nwattn.softmax(s, keep=np.array([[5, 0, -1], [0, 0, 1]]))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, [[0.5, 0, 0.5], [0, 0, 1]])
    with pytest.raises(TypeError):
        nwattn.softmax(s, keep=np.ones((2, 3)))
    with pytest.raises(ValueError, match="matrix shape"):
        nwattn.softmax(s, keep=np.ones((3, 2), bool))

"""Every C status comes back as NWAttnError carrying the C library's message, and a failed call
leaves its outputs untouched."""
import numpy as np
import pytest

import nwattn
from nwattn import Status


def q_k_v(m=3, n=4, d=2, dv=1):
    return (np.ones((m, d), np.float32), np.ones((n, d), np.float32),
            np.ones((n, dv), np.float32))


@pytest.mark.parametrize("call, status, text", [
    (lambda: nwattn.pool(*q_k_v(d=0)), Status.ERR_BAD_DIMENSION, "d"),
    (lambda: nwattn.scores(np.ones((2, 0)), np.ones((3, 0))), Status.ERR_BAD_DIMENSION, "d"),
    (lambda: nwattn.pool(*q_k_v(), score="gaussian", bandwidth=0.0), Status.ERR_BAD_PARAMETER,
     "bandwidth"),
    (lambda: nwattn.pool(*q_k_v(), score="laplace", bandwidth=float("nan")),
     Status.ERR_BAD_PARAMETER, "bandwidth"),
    (lambda: nwattn.pool(*q_k_v(), score="gaussian", bandwidth=1e39),  # inf as a float
     Status.ERR_BAD_PARAMETER, "bandwidth"),
    (lambda: nwattn.pool(*q_k_v(), score="gaussian", bandwidths=[1.0, -1.0]),
     Status.ERR_BAD_PARAMETER, "bandwidths[1]"),
    (lambda: nwattn.scores(np.ones((2, 2)), np.ones((2, 2)), scale=float("inf")),
     Status.ERR_BAD_PARAMETER, "scale"),
    (lambda: nwattn.pool(*q_k_v(), score=7), Status.ERR_BAD_ENUM, "score kind"),
    (lambda: nwattn.pool(*q_k_v(), valid_lens=5), Status.ERR_BAD_MASK, "valid_lens"),
    (lambda: nwattn.softmax(np.ones((2, 3)), valid_lens=[1, 4]), Status.ERR_BAD_MASK,
     "exceeds n = 3"),
])
def test_c_statuses_raise_nwattnerror_with_the_c_message(call, status, text):
    with pytest.raises(nwattn.NWAttnError) as info:
        call()
    err = info.value
    assert err.status == status
    assert err.name == "NWATTN_" + status.name
    assert str(err).startswith(err.name + ": ")  # the C library's message, verbatim
    assert text in str(err)
    assert err.message == str(err)
    assert err.function.startswith("nwattn_")


def test_message_is_the_contexts_last_error():
    with nwattn.Context() as ctx:
        with pytest.raises(nwattn.NWAttnError) as info:
            nwattn.pool(*q_k_v(d=0), ctx=ctx)
        assert ctx.last_error == str(info.value)
        nwattn.pool(*q_k_v(), ctx=ctx)
        assert ctx.last_error == ""


@pytest.mark.parametrize("backend", ["auto", "reference", "blas"])
def test_outputs_untouched_on_error(backend):
    q, k, v = q_k_v()
    out = np.full((3, 1), 42.0, np.float32)
    weights = np.full((3, 4), 42.0, np.float32)
    lse = np.full(3, 42.0, np.float32)
    with nwattn.Context(backend) as ctx:
        with pytest.raises(nwattn.NWAttnError):
            nwattn.pool(q, k, v, score="gaussian", bandwidth=-1.0, out=out, weights=weights,
                        lse=lse, ctx=ctx)
        with pytest.raises(nwattn.NWAttnError):
            nwattn.pool(q, k, v, valid_lens=9, out=out, weights=weights, lse=lse, ctx=ctx)
        with pytest.raises(nwattn.NWAttnError):
            nwattn.softmax(np.ones((3, 4)), valid_lens=[1, 2, 5], out=weights, ctx=ctx)
    assert np.all(out == 42.0) and np.all(weights == 42.0) and np.all(lse == 42.0)


def test_aliasing_output_is_refused():
    a = np.ones((4, 4), np.float32)
    with pytest.raises(nwattn.NWAttnError) as info:
        nwattn.bmm(a, np.ones((4, 4), np.float32), out=a)
    assert info.value.status == Status.ERR_ALIASING
    assert "overlaps" in str(info.value)


def test_overlapping_outputs_are_refused():
    q, k, v = q_k_v(m=2, n=2, dv=2)
    buf = np.zeros((2, 2), np.float32)
    with pytest.raises(nwattn.NWAttnError, match="overlaps output"):
        nwattn.pool(q, k, v, out=buf, weights=buf)


def test_python_side_argument_errors_are_python_exceptions():
    q, k, v = q_k_v()
    with pytest.raises(ValueError, match="unknown score"):
        nwattn.pool(q, k, v, score="angular")
    with pytest.raises(ValueError, match="did you mean score='gaussian'"):
        nwattn.pool(q, k, v, bandwidth=0.5)
    with pytest.raises(ValueError, match="scale applies"):
        nwattn.pool(q, k, v, score="gaussian", scale=2.0)
    with pytest.raises(ValueError, match="not both"):
        nwattn.pool(q, k, v, score="gaussian", bandwidth=1.0, bandwidths=[1.0, 1.0])
    with pytest.raises(ValueError, match="one per feature"):
        nwattn.pool(q, k, v, score="gaussian", bandwidths=[1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="give m"):
        nwattn.average_pool(v)
    with pytest.raises(TypeError, match="ctx"):
        nwattn.pool(q, k, v, ctx="not a context")


def test_status_helpers_match_the_c_library():
    assert nwattn.status_name(Status.ERR_ALLOC) == "NWATTN_ERR_ALLOC"
    assert nwattn.status_name(999) == "NWATTN_ERR_UNKNOWN"
    for status in Status:
        assert nwattn.status_name(status) == "NWATTN_" + status.name
        assert nwattn.status_describe(status)


def test_unknown_status_is_kept_as_an_int():
    err = nwattn.NWAttnError(999, "made up")
    assert err.status == 999 and not isinstance(err.status, Status)
    assert err.name == "NWATTN_ERR_UNKNOWN"

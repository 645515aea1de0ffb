"""Independent numpy implementations of the formulas, in float64: the tests' oracle.

Written from the definitions (the header and the two seed articles), sharing no code with the
package: scores, masked softmax, pooling, average pooling.
"""
import numpy as np


def scores(q, k, kind="dot", scale=None, bandwidth=1.0, bandwidths=None):
    q = np.asarray(q, np.float64)
    k = np.asarray(k, np.float64)
    d = q.shape[-1]
    if kind == "dot":
        scale = 1.0 / np.sqrt(d) if scale is None else scale
        return scale * (q @ np.swapaxes(k, -1, -2))
    if kind == "cosine":  # a zero-norm row scores 0 against everything
        scale = 1.0 if scale is None else scale
        nq = np.linalg.norm(q, axis=-1, keepdims=True)
        nk = np.linalg.norm(k, axis=-1, keepdims=True)
        qh = np.divide(q, nq, out=np.zeros_like(q), where=nq > 0)
        kh = np.divide(k, nk, out=np.zeros_like(k), where=nk > 0)
        return scale * (qh @ np.swapaxes(kh, -1, -2))
    h = np.asarray(bandwidths if bandwidths is not None else bandwidth, np.float64)
    diff = (q[..., :, None, :] - k[..., None, :, :]) / h  # (..., m, n, d)
    sq = np.sum(diff * diff, axis=-1)
    if kind == "gaussian":
        return -sq / 2.0
    if kind == "laplace":
        return -np.sqrt(sq)
    raise ValueError(kind)


def keep_matrix(batch_shape, m, n, valid_lens=None, causal=False, leave_one_out=False,
                keep=None, per_row=False):
    """The boolean (*batch, m, n) matrix of unmasked keys."""
    ok = np.ones(tuple(batch_shape) + (m, n), bool)
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    if causal:
        ok &= j <= i
    if leave_one_out:
        ok &= j != i
    if valid_lens is not None:
        lens = np.asarray(valid_lens)
        lens = lens[..., :, None] if per_row else lens[..., None, None]
        ok &= j < lens
    if keep is not None:
        ok &= np.asarray(keep, bool)
    return ok


def softmax(s, ok=None, additive=None):
    """Row softmax of s + additive over the keys ok keeps; zeros and lse -inf when none."""
    s = np.asarray(s, np.float64)
    if additive is not None:
        s = s + np.asarray(additive, np.float64)
    if ok is None:
        ok = np.ones(s.shape, bool)
    ok = np.broadcast_to(ok, s.shape) & (s != -np.inf)
    masked = np.where(ok, s, -np.inf)
    top = np.max(masked, axis=-1, keepdims=True, initial=-np.inf)
    safe_top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(ok, np.exp(masked - safe_top), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    with np.errstate(divide="ignore"):
        lse = np.where(total[..., 0] > 0, np.log(total[..., 0]) + safe_top[..., 0], -np.inf)
    return w, lse


def pool(q, k, v, ok=None, additive=None, **score):
    w, lse = softmax(scores(q, k, **score), ok, additive)
    return w @ np.asarray(v, np.float64), w, lse


def average_pool(v, m, ok=None, additive=None):
    v = np.asarray(v, np.float64)
    n = v.shape[-2]
    zeros = np.zeros(v.shape[:-2] + (m, n))
    w, _ = softmax(zeros, ok, additive)
    return w @ v


# ---- The seeds' formulas, written the way the articles write them -------------------------

def d2l_f(x):
    """d2l: y = 2 sin(x) + x^0.8."""
    return 2 * np.sin(x) + x ** 0.8


def d2l_nonparametric(x_test, x_train, y_train):
    """d2l: softmax(-(X_repeat - x_train)^2 / 2) @ y_train, written out with exp and sums."""
    diff = np.asarray(x_test, np.float64)[:, None] - np.asarray(x_train, np.float64)[None, :]
    e = np.exp(-diff ** 2 / 2)
    w = e / e.sum(axis=1, keepdims=True)
    return w @ np.asarray(y_train, np.float64), w


def d2l_parametric(x_test, x_train, y_train, w):
    """d2l's NWKernelRegression forward: softmax(-((q - k) w)^2 / 2) @ values."""
    diff = (np.asarray(x_test, np.float64)[:, None] - np.asarray(x_train, np.float64)[None, :])
    e = np.exp(-((diff * w) ** 2) / 2)
    a = e / e.sum(axis=1, keepdims=True)
    return a @ np.asarray(y_train, np.float64), a


def seed1_nadaraya_watson(x_query, x_train, y_train, h):
    """Seed 1: weights = exp(-(diff^2) / (2 h h)), normalised; y = weights · y_train."""
    diff = np.asarray(x_query, np.float64)[:, None] - np.asarray(x_train, np.float64)[None, :]
    weights = np.exp(-(diff ** 2) / (2 * h * h))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return (weights * np.asarray(y_train, np.float64)[None, :]).sum(axis=-1), weights

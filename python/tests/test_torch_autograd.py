"""nwattn.autograd (the torch layer) against torch's own autograd of the spelled-out
computation in float64, which is the truth here.

Tolerance: nwattn.h states the backward's fast paths agree with REFERENCE to 2e-4 of each
gradient's largest entry (the float32 lse, exponential and GEMM rounding); the inputs are
rounded to float32 on the way in (relative 2^-24, far below that). So every gradient is
checked to TOL = 5e-4 of its largest entry: 2.5 times the stated bound, and still ~100 times
smaller than any mistake in a chain rule (a missing factor, a wrong sign, a transposed
product) would make it. Skipped where torch is not importable.
"""
import math

import numpy as np
import pytest

import nwattn

torch = pytest.importorskip("torch")
AG = nwattn.autograd
TOL = 5e-4
F64 = torch.float64


def _close(got, want, tol=TOL):
    assert got is not None and want is not None
    assert got.shape == want.shape
    scale = max(float(want.abs().max()), 1e-12)
    err = float((got.to(F64) - want).abs().max())
    assert err <= tol * scale, f"max error {err:.3g} > {tol} * {scale:.3g}"


def _scores(q, k, score, param):
    """score(q, k) as in nwattn.h, spelled out in torch."""
    if score == "dot":
        return param * q @ k.transpose(-1, -2)
    if score == "cosine":
        qn = q / q.norm(dim=-1, keepdim=True)
        kn = k / k.norm(dim=-1, keepdim=True)
        return param * qn @ kn.transpose(-1, -2)
    diff = (q.unsqueeze(-2) - k.unsqueeze(-3)) / param  # param: () or (d,)
    t = (diff ** 2).sum(-1)
    return -t / 2 if score == "gaussian" else -t.sqrt()


def _spelled_pool(q, k, v, score, param, keep=None):
    s = _scores(q, k, score, param)
    if keep is not None:
        s = s.masked_fill(~keep, -math.inf)
    return torch.softmax(s, dim=-1) @ v


def _leaves(rng, *shapes, grad=True):
    return [torch.tensor(rng.uniform(-1, 1, s), dtype=F64, requires_grad=grad)
            for s in shapes]


def _grads(out, upstream, leaves):
    return torch.autograd.grad(out, leaves, upstream, allow_unused=True)


PARAMS = [("dot", 0.7), ("cosine", 2.5), ("gaussian", 0.8), ("laplace", 1.3),
          ("gaussian", "vector"), ("laplace", "vector")]


@pytest.mark.parametrize("score, param", PARAMS)
def test_pool_gradients_match_torch_for_every_score(score, param, ctx):
    """ctx: the AUTO, REFERENCE and BLAS backends (conftest), each against torch."""
    rng = np.random.default_rng(11)
    m, n, d, dv = 5, 7, 3, 4
    q, k, v = _leaves(rng, (2, m, d), (2, n, d), (2, n, dv))
    p = torch.tensor(rng.uniform(0.6, 1.5, d) if param == "vector" else param, dtype=F64,
                     requires_grad=True)
    up = torch.tensor(rng.uniform(-1, 1, (2, m, dv)), dtype=F64)
    got = _grads(AG.pool(q, k, v, p, score=score, ctx=ctx), up, [q, k, v, p])
    want = _grads(_spelled_pool(q, k, v, score, p), up, [q, k, v, p])
    for g, w in zip(got, want):
        _close(g, w)
    assert AG.pool(q, k, v, p, score=score, ctx=ctx).dtype == F64


def _keep_matrix(m, n, batch, valid_lens=None, causal=False, leave_one_out=False):
    keep = torch.ones(batch, m, n, dtype=torch.bool)
    j = torch.arange(n)
    i = torch.arange(m).unsqueeze(-1)
    if valid_lens is not None:
        keep &= j < torch.as_tensor(valid_lens).reshape(-1, 1, 1)
    if causal:
        keep &= j <= i
    if leave_one_out:
        keep &= j != i
    return keep


@pytest.mark.parametrize("masks", [{"valid_lens": [6, 2]}, {"causal": True},
                                   {"leave_one_out": True},
                                   {"valid_lens": [4, 6], "leave_one_out": True}])
@pytest.mark.parametrize("score", ["dot", "gaussian"])
def test_pool_gradients_match_torch_with_masks(masks, score):
    rng = np.random.default_rng(12)
    m = n = 6
    q, k, v = _leaves(rng, (2, m, 3), (2, n, 3), (2, n, 2))
    p = torch.tensor(0.9, dtype=F64, requires_grad=True)
    up = torch.tensor(rng.uniform(-1, 1, (2, m, 2)), dtype=F64)
    keep = _keep_matrix(m, n, 2, **masks)
    got = _grads(AG.pool(q, k, v, p, score=score, **masks), up, [q, k, v, p])
    want = _grads(_spelled_pool(q, k, v, score, p, keep), up, [q, k, v, p])
    for g, w in zip(got, want):
        _close(g, w)
    if "valid_lens" in masks:  # keys beyond the length get exactly zero
        dead = masks["valid_lens"][1]
        assert torch.all(got[1][1, dead:] == 0) and torch.all(got[2][1, dead:] == 0)


def test_pool_keep_and_additive_masks_as_tensors():
    rng = np.random.default_rng(13)
    q, k, v = _leaves(rng, (3, 4, 2), (3, 5, 2), (3, 5, 3))
    keep = torch.tensor(rng.uniform(size=(3, 4, 5)) > 0.3)
    keep[..., 0] = True  # every row keeps a key
    bias = torch.tensor(rng.uniform(-1, 1, (4, 5)), dtype=F64)  # broadcast over the batch
    p = torch.tensor(0.5, dtype=F64, requires_grad=True)
    up = torch.tensor(rng.uniform(-1, 1, (3, 4, 3)), dtype=F64)
    got = _grads(AG.pool(q, k, v, p, keep=keep, additive=bias), up, [q, k, v, p])
    s = (_scores(q, k, "dot", p) + bias).masked_fill(~keep, -math.inf)
    want = _grads(torch.softmax(s, -1) @ v, up, [q, k, v, p])
    for g, w in zip(got, want):
        _close(g, w)


def test_pool_broadcast_batch_shapes_sum_the_shared_gradients():
    rng = np.random.default_rng(14)
    q, = _leaves(rng, (2, 3, 4, 2))           # batch (2, 3)
    k, v = _leaves(rng, (3, 6, 2), (1, 6, 5))  # batch (3,) and (1,): broadcast
    p = torch.tensor([0.8, 1.2], dtype=F64, requires_grad=True)
    up = torch.tensor(rng.uniform(-1, 1, (2, 3, 4, 5)), dtype=F64)
    got = _grads(AG.pool(q, k, v, p, score="gaussian"), up, [q, k, v, p])
    want = _grads(_spelled_pool(q, k, v, "gaussian", p), up, [q, k, v, p])
    for g, w in zip(got, want):
        _close(g, w)


def test_pool_non_contiguous_inputs_and_upstream():
    rng = np.random.default_rng(15)
    base_q, base_k, base_v = _leaves(rng, (4, 2, 3), (2, 10, 4), (3, 9, 2))
    q = base_q.transpose(0, 1)  # (2, 4, 3), permuted strides
    k = base_k[:, ::2, 1:]      # (2, 5, 3), every other row, a column slice
    v = base_v[:2, ::2]         # (2, 5, 2)
    assert not (q.is_contiguous() or k.is_contiguous() or v.is_contiguous())
    p = torch.tensor(0.6, dtype=F64, requires_grad=True)
    up = torch.tensor(rng.uniform(-1, 1, (2, 2, 4)), dtype=F64).transpose(1, 2)
    leaves = [base_q, base_k, base_v, p]
    got = _grads(AG.pool(q, k, v, p), up, leaves)
    want = _grads(_spelled_pool(q, k, v, "dot", p), up, leaves)
    for g, w in zip(got, want):
        _close(g, w)


def test_pool_only_some_inputs_require_grad():
    rng = np.random.default_rng(16)
    q, k, v = _leaves(rng, (5, 2), (6, 2), (6, 3), grad=False)
    k.requires_grad_(True)
    h = torch.tensor(0.7, dtype=F64)  # a constant bandwidth
    out = AG.pool(q, k, v, h, score="laplace")
    out.sum().backward()
    want, = torch.autograd.grad(_spelled_pool(q, k, v, "laplace", h).sum(), [k])
    _close(k.grad, want)
    assert q.grad is None and v.grad is None and h.grad is None


def test_pool_param_may_be_a_number_or_default():
    rng = np.random.default_rng(17)
    q, k, v = _leaves(rng, (4, 3), (5, 3), (5, 2))
    up = torch.tensor(rng.uniform(-1, 1, (4, 2)), dtype=F64)
    for score, param, spelled in (("dot", None, 1 / math.sqrt(3)), ("dot", 0.4, 0.4),
                                  ("gaussian", None, 1.0), ("gaussian", 0.5, 0.5),
                                  ("cosine", None, 1.0)):
        got = _grads(AG.pool(q, k, v, param, score=score), up, [q, k, v])
        want = _grads(_spelled_pool(q, k, v, score, spelled), up, [q, k, v])
        for g, w in zip(got, want):
            _close(g, w)


def test_pool_float32_learnable_w_shaped_like_d2l():
    """d2l's w is a (1,) parameter; h = 1/|w| is then a (1,) tensor, one bandwidth for d = 1."""
    rng = np.random.default_rng(18)
    q, k, v = (torch.tensor(rng.uniform(0, 5, s), dtype=torch.float32)
               for s in ((6, 1), (8, 1), (8, 1)))
    w = torch.tensor([1.7], requires_grad=True)
    AG.pool(q, k, v, 1 / w.abs(), score="gaussian").sum().backward()
    w64 = w.detach().to(F64).requires_grad_(True)
    _spelled_pool(q.to(F64), k.to(F64), v.to(F64), "gaussian", 1 / w64.abs()).sum().backward()
    assert w.grad.dtype == torch.float32 and w.grad.shape == (1,)
    _close(w.grad, w64.grad)


def test_gradcheck_of_pool_and_nw_predict():
    """torch.autograd.gradcheck against its own finite differences: the library computes in
    float32, so the step is 1e-3 (float32 rounding of a loss ~1 over 1e-3 is ~1e-4) and the
    tolerances are those of float32 arithmetic, not gradcheck's float64 defaults."""
    rng = np.random.default_rng(19)
    q, k, v = _leaves(rng, (3, 2), (4, 2), (4, 2))
    h = torch.tensor([0.9, 1.1], dtype=F64, requires_grad=True)
    tol = {"eps": 1e-3, "atol": 2e-3, "rtol": 2e-2}
    assert torch.autograd.gradcheck(lambda a, b, c, p: AG.pool(a, b, c, p, score="gaussian"),
                                    (q, k, v, h), **tol)
    x = torch.tensor(rng.uniform(0, 1, (12, 1)), dtype=F64)
    y = torch.sin(3 * x)
    xq = torch.tensor(rng.uniform(0, 1, (5, 1)), dtype=F64)
    bw = torch.tensor(0.3, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda b: AG.nw_predict(xq, x, y, b), (bw,), **tol)


def _spelled_attention(x_q, x_k, x_v, w_q, w_k, w_v, w_o=None, b_q=None, b_k=None, b_v=None,
                       b_o=None, heads=1, scale=None, causal=False, score="dot", param=None,
                       additive=None):
    def proj(x, w, b):
        y = x @ w.transpose(0, 1)
        return y if b is None else y + b

    qp, kp, vp = proj(x_q, w_q, b_q), proj(x_k, w_k, b_k), proj(x_v, w_v, b_v)

    def split(t):
        return t.reshape(*t.shape[:-1], heads, -1).transpose(-2, -3)

    qh, kh, vh = split(qp), split(kp), split(vp)
    d_head = qh.shape[-1]
    if score == "dot":
        s = (1 / math.sqrt(d_head) if scale is None else scale) * qh @ kh.transpose(-1, -2)
    else:
        s = _scores(qh, kh, score, param)
    if additive is not None:  # one mask for every head
        s = s + additive.unsqueeze(-3)
    if causal:
        t_q, t_kv = s.shape[-2:]
        s = s.masked_fill(torch.arange(t_kv) > torch.arange(t_q).unsqueeze(-1), -math.inf)
    c = (torch.softmax(s, -1) @ vh).transpose(-2, -3)
    c = c.reshape(*c.shape[:-2], -1)
    return c if w_o is None else proj(c, w_o, b_o)


def test_attention_gradients_match_torch_cross_attention_with_everything(ctx):
    rng = np.random.default_rng(21)
    x_q, x_k, x_v = _leaves(rng, (2, 5, 6), (2, 7, 4), (2, 7, 3))
    w_q, w_k, w_v, w_o = _leaves(rng, (8, 6), (8, 4), (4, 3), (5, 4))
    b_q, b_k, b_v, b_o = _leaves(rng, (8,), (8,), (4,), (5,))
    scale = torch.tensor(0.45, dtype=F64, requires_grad=True)
    kw = dict(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o)
    leaves = [x_q, x_k, x_v, *kw.values(), scale]
    up = torch.tensor(rng.uniform(-1, 1, (2, 5, 5)), dtype=F64)
    got = _grads(AG.attention(x_q, x_k, x_v, heads=2, scale=scale, ctx=ctx, **kw), up, leaves)
    want = _grads(_spelled_attention(x_q, x_k, x_v, heads=2, scale=scale, **kw), up, leaves)
    for name, g, w in zip(["x_q", "x_k", "x_v", *kw, "scale"], got, want):
        if name == "b_k":  # cancels in the softmax: 0 up to rounding on both sides
            assert float(g.abs().max()) <= 1e-5 * float(got[4].abs().max())
            continue
        _close(g, w)


@pytest.mark.parametrize("score, name, value", [("gaussian", "bandwidth", 0.9),
                                                ("laplace", "bandwidth", [1.4]),
                                                ("gaussian", "bandwidths", [0.7, 1.2, 1.0]),
                                                ("laplace", "bandwidths", [1.1, 0.8, 1.3]),
                                                ("cosine", "scale", 3.0)])
def test_attention_learns_the_bandwidth_or_scale_of_its_heads(score, name, value, ctx):
    """The score's parameter of every head (Gaussian/Laplace bandwidth, per-dimension
    bandwidths, the cosine scale) is a differentiable input of the layer."""
    rng = np.random.default_rng(26)
    x, = _leaves(rng, (2, 5, 4))
    w_q, w_k, w_v, w_o = _leaves(rng, (6, 4), (6, 4), (4, 4), (3, 4))
    param = torch.tensor(value, dtype=F64, requires_grad=True)
    up = torch.tensor(rng.uniform(-1, 1, (2, 5, 3)), dtype=F64)
    kw = dict(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o)
    leaves = [x, w_q, w_k, w_v, w_o, param]
    got = _grads(AG.attention(x, heads=2, score=score, ctx=ctx, **{name: param}, **kw), up,
                 leaves)
    want = _grads(_spelled_attention(x, x, x, heads=2, score=score, param=param, **kw), up,
                  leaves)
    for g, w in zip(got, want):
        _close(g, w)
    assert got[-1].shape == param.shape
    number = np.array(value) if name == "bandwidths" else float(np.reshape(value, -1)[0])
    const = AG.attention(x, heads=2, score=score, **{name: number}, **kw)  # a constant
    _close(const.detach(), _spelled_attention(x, x, x, heads=2, score=score,
                                              param=param.detach(), **kw).detach(), 1e-5)
    with pytest.raises(ValueError, match="at most one"):
        AG.attention(x, score=score, scale=1.0, bandwidth=param, **kw)


def test_attention_self_attention_sums_the_three_uses_of_x():
    rng = np.random.default_rng(22)
    x, = _leaves(rng, (3, 6, 8))
    w_q, w_k, w_v = _leaves(rng, (4, 8), (4, 8), (6, 8))
    up = torch.tensor(rng.uniform(-1, 1, (3, 6, 6)), dtype=F64)
    got = _grads(AG.attention(x, w_q=w_q, w_k=w_k, w_v=w_v, heads=2, causal=True), up,
                 [x, w_q, w_k, w_v])
    want = _grads(_spelled_attention(x, x, x, w_q, w_k, w_v, heads=2, causal=True), up,
                  [x, w_q, w_k, w_v])
    for g, w in zip(got, want):
        _close(g, w)


def test_attention_only_weights_require_grad_and_non_contiguous_input():
    rng = np.random.default_rng(23)
    x = torch.tensor(rng.uniform(-1, 1, (5, 2, 4)), dtype=F64).transpose(0, 1)  # (2, 5, 4)
    w_q, w_k, w_v = _leaves(rng, (4, 4), (4, 4), (4, 4))
    w_k.requires_grad_(False)
    AG.attention(x, w_q=w_q, w_k=w_k, w_v=w_v).sum().backward()
    gq, gv = torch.autograd.grad(_spelled_attention(x, x, x, w_q, w_k, w_v).sum(), [w_q, w_v])
    _close(w_q.grad, gq)
    _close(w_v.grad, gv)
    assert w_k.grad is None and x.grad is None


def test_nw_predict_gradient_matches_torch():
    rng = np.random.default_rng(24)
    x = torch.tensor(rng.uniform(0, 2, (30, 2)), dtype=F64)
    y = torch.tensor(rng.uniform(-1, 1, (30, 3)), dtype=F64)
    xq = torch.tensor(rng.uniform(0, 2, (9, 2)), dtype=F64)
    up = torch.tensor(rng.uniform(-1, 1, (9, 3)), dtype=F64)
    for h0 in (0.4, [0.3, 0.7]):
        h = torch.tensor(h0, dtype=F64, requires_grad=True)
        got, = _grads(AG.nw_predict(xq, x, y, h), up, [h])
        want, = _grads(_spelled_pool(xq, x, y, "gaussian", h), up, [h])
        _close(got, want)


# --- the seeds' models train unchanged ------------------------------------------------------

def _d2l_data():
    g = torch.Generator().manual_seed(0)
    n_train = 50
    x_train, _ = torch.sort(torch.rand(n_train, generator=g) * 5)
    y_train = 2 * torch.sin(x_train) + x_train ** 0.8 + torch.normal(
        0.0, 0.5, (n_train,), generator=g)
    x_tile = x_train.repeat((n_train, 1))
    y_tile = y_train.repeat((n_train, 1))
    off_diag = (1 - torch.eye(n_train)).type(torch.bool)
    keys = x_tile[off_diag].reshape((n_train, -1))
    values = y_tile[off_diag].reshape((n_train, -1))
    return x_train, y_train, keys, values


class _D2LTorch(torch.nn.Module):
    """d2l's NWKernelRegression, as in the seed."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([0.6]))

    def forward(self, queries, keys, values):
        queries = queries.repeat_interleave(keys.shape[1]).reshape((-1, keys.shape[1]))
        self.attention_weights = torch.softmax(-((queries - keys) * self.w) ** 2 / 2, dim=1)
        return torch.bmm(self.attention_weights.unsqueeze(1), values.unsqueeze(-1)).reshape(-1)


class _D2LLibrary(_D2LTorch):
    """The same model, its forward through the library: w scales the distance, h = 1/|w|."""

    def forward(self, queries, keys, values):
        out = AG.pool(queries.reshape(-1, 1, 1), keys.unsqueeze(-1), values.unsqueeze(-1),
                      1 / self.w.abs(), score="gaussian")
        return out.reshape(-1)


def _train_d2l(net):
    x_train, y_train, keys, values = _d2l_data()
    loss = torch.nn.MSELoss(reduction="none")
    trainer = torch.optim.SGD(net.parameters(), lr=0.5)
    losses = []
    for _ in range(5):  # the seed's loop, unchanged
        trainer.zero_grad()
        ll = loss(net(x_train, keys, values), y_train)
        ll.sum().backward()
        trainer.step()
        losses.append(float(ll.sum()))
    return losses, float(net.w)


def test_d2l_nw_kernel_regression_trains_the_same():
    want, w_want = _train_d2l(_D2LTorch())
    got, w_got = _train_d2l(_D2LLibrary())
    assert want[-1] < want[0]  # it does learn
    np.testing.assert_allclose(got, want, rtol=1e-3)
    assert abs(w_got - w_want) <= 1e-3 * abs(w_want)


class _SeedSelfAttention(torch.nn.Module):
    """seed 1's SelfAttention(d_model, d_k, d_v), as written there."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.W_Q = torch.nn.Linear(d_model, d_k, bias=False)
        self.W_K = torch.nn.Linear(d_model, d_k, bias=False)
        self.W_V = torch.nn.Linear(d_model, d_v, bias=False)
        self.d_k = d_k

    def forward(self, x):
        Q, K, V = self.W_Q(x), self.W_K(x), self.W_V(x)
        weights = torch.softmax(Q @ K.T / math.sqrt(self.d_k), dim=-1)
        return weights @ V, weights


class _LibrarySelfAttention(_SeedSelfAttention):
    def forward(self, x):
        out = AG.attention(x, w_q=self.W_Q.weight, w_k=self.W_K.weight, w_v=self.W_V.weight)
        return out, None


def _train_self_attention(cls):
    torch.manual_seed(1)
    net = cls(8, 4, 3)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(10, 8, generator=g)
    target = torch.randn(10, 3, generator=g)
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        out, _ = net(x)
        loss = ((out - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def test_seed_self_attention_trains_the_same():
    want = _train_self_attention(_SeedSelfAttention)
    got = _train_self_attention(_LibrarySelfAttention)
    assert want[-1] < 0.8 * want[0]
    np.testing.assert_allclose(got, want, rtol=2e-3)


def test_second_derivatives_are_refused_not_silently_zero():
    """The library's backward is not itself differentiable: a gradient penalty through it must
    raise, not treat the first gradient as a constant (which gives a wrong answer quietly)."""
    rng = np.random.default_rng(25)
    q, k, v = _leaves(rng, (3, 2), (4, 2), (4, 2))
    x, = _leaves(rng, (4, 3))
    w = _leaves(rng, (2, 3), (2, 3), (2, 3))
    h = torch.tensor(0.5, dtype=F64, requires_grad=True)
    xs = torch.tensor(rng.uniform(0, 1, (8, 1)), dtype=F64)
    for out, wrt in ((AG.pool(q, k, v), q),
                     (AG.attention(x, w_q=w[0], w_k=w[1], w_v=w[2]), x),
                     (AG.nw_predict(xs[:3], xs, torch.sin(xs), h), h)):
        g, = torch.autograd.grad(out.sum(), wrt, create_graph=True)
        with pytest.raises(RuntimeError, match="twice"):
            (g * wrt).sum().backward()


def test_nw_predict_refuses_data_that_require_grad():
    """Its gradient is dL/dh only: data that require grad would silently get none."""
    x = torch.rand(10, 1, requires_grad=True)
    h = torch.tensor(0.3, requires_grad=True)
    with pytest.raises(ValueError, match="bandwidth only"):
        AG.nw_predict(x.detach()[:3], x, torch.sin(x.detach()), h)
    AG.nw_predict(x.detach()[:3], x.detach(), torch.sin(x.detach()), h).sum().backward()
    assert h.grad is not None


def test_import_nwattn_does_not_import_torch():
    """torch takes over a second to import: only nwattn.autograd pays for it."""
    import os
    import subprocess
    import sys
    code = ("import sys, nwattn; a = 'torch' in sys.modules; nwattn.autograd.pool; "
            "print(a, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(nwattn.__path__[0])),
                         check=True).stdout.split()
    assert out == ["False", "True"]


def test_without_torch_nwattn_autograd_is_absent():
    import os
    import subprocess
    import sys
    code = ("import sys; sys.modules['torch'] = None; import nwattn; "
            "print(hasattr(nwattn, 'autograd'), callable(nwattn.pool_backward))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(nwattn.__path__[0])),
                         check=True).stdout.split()
    assert out == ["False", "True"]


def test_d2l_step_takes_the_compiled_path_and_agrees_with_the_pure_one(monkeypatch):
    """The step of issue 18's benchmark (d2l's 50 x 50 pooling, h = 1/|w|, loss sum(), whose
    dO is an expanded tensor): with the extension built, both library calls of the step take
    the compiled path (none returns NotImplemented), and the gradient is bit for bit the pure
    path's; without it, the pure path is all there is and the step still trains."""
    from nwattn import _autograd, _core, _fastpath
    rng = torch.Generator().manual_seed(7)
    x = torch.sort(torch.rand(50, generator=rng) * 5).values.reshape(50, 1)
    y = 2 * torch.sin(x) + x ** 0.8

    def step():
        w = torch.tensor([1.3], requires_grad=True)
        AG.pool(x, x, y, 1 / w.abs(), score="gaussian").sum().backward()
        return w.grad

    pure = monkeypatch.context()
    with pure as mp:
        mp.setattr(_core, "_fast", None)
        mp.setattr(_autograd, "_fast", None)
        want = step()
    assert want is not None and bool(torch.isfinite(want).all()) and float(want.abs()) > 0
    if _fastpath.ext is None:
        return
    taken = []

    class Recording:
        def __getattr__(self, name):
            def call(*args):
                r = getattr(_fastpath.ext, name)(*args)
                taken.append((name, r is not NotImplemented))
                return r
            return call

    with monkeypatch.context() as mp:
        mp.setattr(_core, "_fast", Recording())
        mp.setattr(_autograd, "_fast", Recording())
        got = step()
    assert taken == [("pool", True), ("pool_backward", True)]
    assert torch.equal(got, want)


# --- learned attention biases: the additive mask's gradient ---------------------------------

@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 5), (3, 4, 5), (2, 1, 4, 5)])
@pytest.mark.parametrize("score", ["dot", "laplace"])
def test_pool_additive_mask_learns_as_a_bias(shape, score, ctx):
    """A learnable additive mask (per item, or broadcast over some or all batch axes) gets
    torch's gradient; its -inf entries (masked keys) get exactly 0."""
    rng = np.random.default_rng(31)
    q, k, v = _leaves(rng, (2, 3, 4, 3), (2, 3, 5, 3), (2, 3, 5, 2))
    init = rng.uniform(-1, 1, shape)
    init[..., 1, 2] = -np.inf
    init[..., 3, 0] = -np.inf
    bias = torch.tensor(init, dtype=F64, requires_grad=True)
    p = torch.tensor(0.8, dtype=F64, requires_grad=True)
    up = torch.tensor(rng.uniform(-1, 1, (2, 3, 4, 2)), dtype=F64)
    leaves = [q, k, v, p, bias]
    got = _grads(AG.pool(q, k, v, p, score=score, additive=bias, ctx=ctx), up, leaves)
    want = _grads(torch.softmax(_scores(q, k, score, p) + bias, -1) @ v, up, leaves)
    for g, w in zip(got, want):
        _close(g, w)
    assert got[4].shape == bias.shape
    assert torch.all(got[4][..., 1, 2] == 0) and torch.all(got[4][..., 3, 0] == 0)


def test_pool_additive_gradient_with_fully_masked_rows_and_numpy():
    """A row whose keys are all masked gets dS = 0 (torch's spelled-out softmax would give
    NaN there); the numpy function returns the same dS as the torch layer."""
    rng = np.random.default_rng(32)
    q, k, v = _leaves(rng, (2, 4, 3), (2, 3, 3), (2, 3, 2))
    bias = torch.tensor(rng.uniform(-1, 1, (2, 4, 3)), dtype=F64, requires_grad=True)
    lens = np.array([3, 0])  # item 1: every row fully masked
    out = AG.pool(q, k, v, additive=bias, valid_lens=lens)
    up = torch.tensor(rng.uniform(-1, 1, (2, 4, 2)), dtype=F64)
    out.backward(up)
    assert torch.all(bias.grad[1] == 0)
    want, = torch.autograd.grad((torch.softmax(_scores(q[0], k[0], "dot", 1 / math.sqrt(3)) +
                                               bias[0], -1) @ v[0] * up[0]).sum(), [bias])
    _close(bias.grad[0], want[0])
    f = [x.detach().numpy().astype(np.float32) for x in (q, k, v, bias)]
    o, lse = nwattn.pool(*f[:3], additive=f[3], valid_lens=lens, lse=True)
    *_, ds = nwattn.pool_backward(*f[:3], o, lse, up.numpy().astype(np.float32),
                                  additive=f[3], valid_lens=lens, additive_grad=True)
    np.testing.assert_allclose(ds, bias.grad.numpy(), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="additive"):
        nwattn.pool_backward(*f[:3], o, lse, o, additive_grad=True)


@pytest.mark.parametrize("shape", [(2, 5, 5), (5, 5)])
def test_attention_additive_mask_learns_as_a_bias_shared_by_the_heads(shape, ctx):
    rng = np.random.default_rng(33)
    x, = _leaves(rng, (2, 5, 4))
    w_q, w_k, w_v = _leaves(rng, (4, 4), (4, 4), (4, 4))
    init = rng.uniform(-1, 1, shape)
    init[..., 0, 3] = -np.inf
    bias = torch.tensor(init, dtype=F64, requires_grad=True)
    up = torch.tensor(rng.uniform(-1, 1, (2, 5, 4)), dtype=F64)
    kw = dict(w_q=w_q, w_k=w_k, w_v=w_v)
    leaves = [x, w_q, bias]
    got = _grads(AG.attention(x, heads=2, additive=bias, ctx=ctx, **kw), up, leaves)
    want = _grads(_spelled_attention(x, x, x, heads=2, additive=bias, **kw), up, leaves)
    for g, w in zip(got, want):
        _close(g, w)
    assert torch.all(got[2][..., 0, 3] == 0)


def test_attention_keeps_its_activations_only_for_a_backward(monkeypatch):
    """The layer's Function keeps nwattn_attention_save's activations when a gradient will be
    asked for, and not under no_grad or without any input that requires grad; its gradients
    are the same bits as nwattn.attention_backward's, which runs the forward again."""
    from nwattn import _torch_layer
    kept = []
    forward = _torch_layer.AttentionFunction.forward

    def spy(fctx, *args):
        out = forward(fctx, *args)
        kept.append(fctx.activations is not None)
        return out

    monkeypatch.setattr(_torch_layer.AttentionFunction, "forward", staticmethod(spy))
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, 4, generator=gen)
    w = [torch.randn(6, 4, generator=gen, requires_grad=True) for _ in range(3)]
    dy = torch.randn(2, 5, 6, generator=gen)
    with torch.no_grad():
        y0 = AG.attention(x, w_q=w[0], w_k=w[1], w_v=w[2], heads=2, causal=True)
    y = AG.attention(x, w_q=w[0], w_k=w[1], w_v=w[2], heads=2, causal=True)
    AG.attention(x, w_q=w[0].detach(), w_k=w[1].detach(), w_v=w[2].detach(), heads=2)
    assert kept == [False, True, False]
    assert torch.equal(y0, y)
    y.backward(dy)
    xn = x.numpy()
    g = nwattn.attention_backward(xn, xn, xn, dy.numpy(), w_q=w[0].detach().numpy(),
                                  w_k=w[1].detach().numpy(), w_v=w[2].detach().numpy(),
                                  heads=2, causal=True)
    for t, name in zip(w, ("dw_q", "dw_k", "dw_v")):
        np.testing.assert_array_equal(t.grad.numpy(), g[name])

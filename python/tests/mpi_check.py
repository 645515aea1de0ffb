"""nwattn.mpi under mpiexec (ctest: mpi.python.npN): every rank compares the MPI calls with the
one-process nwattn.pool on the whole problem, for random shards (empty ones included), masks
and both layouts, and the regression calls with nwattn.nw_predict / nw_cv / select_bandwidth
for every kind of model; a bad argument on the last rank raises the same error on every rank.
Exit 77 (skipped) without mpi4py or numpy."""
import sys

try:
    import numpy as np
    from mpi4py import MPI
except ImportError as exc:
    print(f"skipped: {exc}")
    sys.exit(77)

import nwattn
import nwattn.mpi as nm

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failures = 0


def expect(ok, what):
    global failures
    ok = comm.allreduce(bool(ok), op=MPI.LAND)
    if not ok:
        failures += 1
        if rank == 0:
            print("FAIL:", what)


rng = np.random.default_rng(5)  # the same stream on every rank
for case in range(12):
    m, n, d, dv = rng.integers(1, 20), rng.integers(0, 60), rng.integers(1, 9), rng.integers(1, 4)
    q = rng.uniform(-1, 1, (m, d)).astype(np.float32)
    k = rng.uniform(-1, 1, (n, d)).astype(np.float32)
    v = rng.uniform(-1, 1, (n, dv)).astype(np.float32)
    cuts = np.sort(rng.integers(0, n + 1, size - 1))
    bounds = np.concatenate([[0], cuts, [n]]).astype(int)
    a, b = bounds[rank], bounds[rank + 1]
    causal, loo = bool(case % 2), bool(case % 3 == 0)
    ref = nwattn.Context(nwattn.Backend.REFERENCE)
    o1 = nwattn.pool(q, k, v, causal=causal, leave_one_out=loo, ctx=ref)
    for how in ("auto", "user_op", "max_then_sum"):
        o = nm.pool_sharded_keys(q, k[a:b], v[a:b], comm, causal=causal, leave_one_out=loo,
                                 reduction=how)
        expect(np.allclose(o, o1, atol=2e-5, rtol=0), f"case {case} {how}: sharded keys")
    # self-attention over the whole sequence of n rows (q = k)
    s1 = nwattn.pool(k, k, v, causal=causal, leave_one_out=loo, ctx=ref)
    o = nm.ring_attention(k[a:b], k[a:b], v[a:b], comm, causal=causal, leave_one_out=loo)
    expect(np.allclose(o, s1[a:b], atol=2e-5, rtol=0), f"case {case}: ring contiguous")
    (o0, c0), (o1_, c1) = nm.zigzag_chunks(n, size, rank)
    rows = np.r_[o0:o0 + c0, o1_:o1_ + c1].astype(int)
    o = nm.ring_attention(k[rows], k[rows], v[rows], comm, causal=causal, layout="zigzag")
    s2 = nwattn.pool(k, k, v, causal=causal, ctx=ref)
    expect(np.allclose(o, s2[rows], atol=2e-5, rtol=0), f"case {case}: ring zigzag")

    # heads split over the ranks: per-head pooling of the whole sequence
    heads, dh = size * (1 + case % 2), int(d)
    qh = rng.uniform(-1, 1, (n, heads * dh)).astype(np.float32)
    vh = rng.uniform(-1, 1, (n, heads * 2)).astype(np.float32)
    want = np.concatenate([nwattn.pool(qh[:, h * dh:(h + 1) * dh], qh[:, h * dh:(h + 1) * dh],
                                       vh[:, 2 * h:2 * h + 2], causal=causal, ctx=ref)
                           for h in range(heads)], axis=1) if n else np.zeros((0, 2 * heads))
    o = nm.ulysses_attention(qh[a:b], qh[a:b], vh[a:b], comm, heads, causal=causal)
    expect(np.allclose(o, want[a:b], atol=2e-5, rtol=0), f"case {case}: ulysses")

# regression on a sharded training set
x = rng.uniform(0, 5, 80).astype(np.float32)
y = np.sin(x).astype(np.float32) + rng.normal(0, 0.2, 80).astype(np.float32)
cuts = np.sort(rng.integers(0, 81, size - 1))
bounds = np.concatenate([[0], cuts, [80]]).astype(int)
a, b = bounds[rank], bounds[rank + 1]
ref = nwattn.Context(nwattn.Backend.REFERENCE)
xq = np.linspace(0, 5, 7, dtype=np.float32)
want = nwattn.nw_predict(xq, x, y, 0.4, ctx=ref)
got = nm.nw_predict(xq, x[a:b], y[a:b], 0.4, comm)
expect(np.allclose(got.ravel(), np.ravel(want), atol=2e-5, rtol=0), "nw_predict")
grid = np.array([0.1, 0.3, 1.0], np.float32)
want = nwattn.nw_cv(x, y, grid, ctx=ref)
want = want[0] if isinstance(want, tuple) else want
got = nm.nw_cv(x[a:b], y[a:b], grid, comm)
expect(np.allclose(got, want, rtol=1e-5), "nw_cv")
expect(comm.bcast(got.tobytes(), root=0) == got.tobytes(), "nw_cv: the same bits everywhere")
cv_g, grad = nm.nw_cv(x[a:b], y[a:b], grid, comm, gradient=True)
want_cv, want_grad = nwattn.nw_cv(x, y, grid, gradient=True, ctx=ref)[:2]
expect(np.allclose(grad.ravel(), np.ravel(want_grad), rtol=1e-4,
                   atol=1e-4 * np.max(np.abs(want_grad))), "nw_cv gradient")
expect(comm.bcast(grad.tobytes(), root=0) == grad.tobytes(), "nw_cv gradient: the same bits")
sel = nm.nw_select_bandwidth(x[a:b], y[a:b], comm, grid_points=8)
want_sel = nwattn.select_bandwidth(x, y, grid_points=8, ctx=ref)
expect(abs(np.log(sel.bandwidths[0] / want_sel.bandwidths[0])) < 0.02, "nw_select_bandwidth")
expect(comm.bcast(sel.bandwidths.tobytes(), root=0) == sel.bandwidths.tobytes(),
       "nw_select_bandwidth: the same bits everywhere")

# every model of the one-process calls: kernels, local linear, empty policies, weights, flags
x2 = rng.uniform(0, 4, (40, 2)).astype(np.float32)
y2 = (np.sin(x2[:, 0]) + rng.normal(0, 0.2, 40)).astype(np.float32)
xq2 = rng.uniform(-0.5, 4.5, (7, 2)).astype(np.float32)
cuts2 = np.sort(rng.integers(0, 41, size - 1))
bounds2 = np.concatenate([[0], cuts2, [40]]).astype(int)
a2, b2 = bounds2[rank], bounds2[rank + 1]
for kernel, degree, empty, h in (("epanechnikov", "linear", "nan", [0.3, 0.5]),
                                 ("tricube", "constant", "nearest", [0.2, 0.2]),
                                 ("uniform", "linear", "zero", [0.8, 1.2]),
                                 ("matern32", "linear", "nearest", [0.6, 0.9]),
                                 ("matern52", "constant", "nearest", [0.5, 0.5]),
                                 ("gaussian", "linear", "nearest", [0.7, 0.7])):
    what = f"nw_predict {kernel} {degree} {empty}"
    want, want_w, want_f = nwattn.nw_predict(xq2, x2, y2, h, kernel=kernel, degree=degree,
                                             empty=empty, weights=True, row_flags=True, ctx=ref)
    got, got_w, got_f = nm.nw_predict(xq2, x2[a2:b2], y2[a2:b2], h, comm, kernel=kernel,
                                      degree=degree, empty=empty, weights=True, row_flags=True)
    expect(np.allclose(got.ravel(), np.ravel(want), atol=1e-6, rtol=0, equal_nan=True), what)
    expect(np.allclose(got_w, want_w[:, a2:b2], atol=1e-6, rtol=0), what + ": weights")
    expect(np.array_equal(got_f, want_f), what + ": row flags")
    grid2 = np.array([h, [1.5 * h[0], h[1]]], np.float32)
    want_cv, want_g, want_fl = nwattn.nw_cv(x2, y2, grid2, kernel=kernel, degree=degree,
                                            gradient=True, flagged=True, ctx=ref)
    cv2, g2, fl2 = nm.nw_cv(x2[a2:b2], y2[a2:b2], grid2, comm, kernel=kernel, degree=degree,
                            gradient=True, flagged=True)
    finite = np.isfinite(want_cv)
    expect(np.array_equal(np.isfinite(cv2), finite) and
           np.allclose(cv2[finite], want_cv[finite], rtol=1e-9, atol=0), what + ": nw_cv")
    expect(np.allclose(g2, want_g, rtol=0, atol=1e-6 * max(np.max(np.abs(want_g)), 1e-30)),
           what + ": nw_cv gradient")
    expect(np.array_equal(fl2, want_fl), what + ": nw_cv flagged")
    expect(comm.bcast(g2.tobytes(), root=0) == g2.tobytes(), what + ": the same bits everywhere")
sel = nm.nw_select_bandwidth(x[a:b], y[a:b], comm, kernel="epanechnikov", degree="linear",
                             grid_points=8)
want_sel = nwattn.select_bandwidth(x, y, kernel="epanechnikov", degree="linear", grid_points=8,
                                   ctx=ref)
expect(abs(np.log(sel.bandwidths[0] / want_sel.bandwidths[0])) < 0.02,
       "nw_select_bandwidth epanechnikov linear")
expect(comm.bcast(sel.bandwidths.tobytes(), root=0) == sel.bandwidths.tobytes(),
       "nw_select_bandwidth epanechnikov linear: the same bits everywhere")

# a collective error: the last rank's q has the wrong width
q = np.ones((3, 2 if rank != size - 1 else 3), np.float32)
try:
    nm.pool_sharded_keys(q, np.ones((2, q.shape[1]), np.float32), np.ones((2, 1), np.float32),
                         comm)
    raised = None
except nwattn.NWAttnError as exc:
    raised = exc
msg = raised.message if raised else ""
if size > 1:  # one rank cannot disagree with itself
    expect(raised is not None and raised.status == nwattn.Status.ERR_BAD_DIMENSION and
           "disagree on d" in msg, "disagreeing d raises BAD_DIMENSION everywhere")
else:
    expect(raised is None, "one rank: the call succeeds")
expect(comm.bcast(msg, root=0) == msg, "the same message on every rank")
try:
    nm.pool_sharded_keys(q, q, q, "not a communicator")
    expect(False, "a non-communicator is refused")
except TypeError:
    pass
for bad in (lambda: nm.zigzag_chunks(-1, size, rank), lambda: nm.zigzag_chunks(10, 2 ** 40, 0),
            lambda: nm.pool_sharded_keys(q, q, q, comm, reduction="fastest"),
            lambda: nm.ulysses_attention(q, q, q, comm, -2)):
    try:
        bad()
        expect(False, "an out-of-range argument is refused")
    except ValueError:
        pass
if rank == 0:
    print(f"nwattn.mpi on {size} ranks: {'FAILED' if failures else 'ok'}")
sys.exit(1 if failures else 0)

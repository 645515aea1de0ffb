"""Context: creation, backends, working memory, deterministic and garbage-collected closing,
custom allocators, per-thread defaults."""
import ctypes
import ctypes.util
import gc
import threading
import weakref

import numpy as np
import pytest

import nwattn
from nwattn import Backend, Status


def test_backend_round_trip():
    with nwattn.Context() as ctx:
        assert ctx.backend == Backend.AUTO
        for value, expected in [("reference", Backend.REFERENCE), ("BLAS", Backend.BLAS),
                                (Backend.AUTO, Backend.AUTO), (1, Backend.REFERENCE)]:
            ctx.backend = value
            assert ctx.backend == expected
    assert nwattn.Context("blas").backend == Backend.BLAS


def test_tiles_and_describe(rng):
    x = rng.uniform(0, 5, (300, 1)).astype(np.float32)
    y = rng.uniform(-1, 1, (300, 1)).astype(np.float32)
    with nwattn.Context("fused") as ctx:
        assert ctx.tiles == (0, 0)
        line = ctx.describe()
        assert line.startswith("simd=") and "l1d=" in line and "override=0x0" in line
        want = nwattn.pool(x, x, y, score="gaussian", bandwidth=0.5, ctx=ctx)
        ctx.tiles = (3, 7)
        assert ctx.tiles == (3, 7) and "override=3x7" in ctx.describe()
        got = nwattn.pool(x, x, y, score="gaussian", bandwidth=0.5, ctx=ctx)
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)
        with pytest.raises(nwattn.NWAttnError, match="tiles"):
            ctx.tiles = (5000, 1)
        with pytest.raises((ValueError, OverflowError)):
            ctx.tiles = (2**64, 1)
        assert ctx.tiles == (3, 7)


def test_unknown_backend():
    with nwattn.Context() as ctx:
        with pytest.raises(ValueError, match="unknown backend"):
            ctx.backend = "gpu"
        with pytest.raises(nwattn.NWAttnError) as info:
            ctx.backend = 7  # a number goes to the C library, which refuses it
        assert info.value.status == Status.ERR_BAD_ENUM
        assert "unknown backend 7" in str(info.value)
        assert ctx.backend == Backend.AUTO


def test_workspace_grows_and_is_released():
    rng = np.random.default_rng(1)
    q = rng.random((64, 3), dtype=np.float32)
    with nwattn.Context() as ctx:
        assert ctx.workspace_bytes == 0
        nwattn.pool(q, q, q, score="gaussian", ctx=ctx)
        assert ctx.workspace_bytes > 0
        ctx.release_workspace()
        assert ctx.workspace_bytes == 0


def test_close_is_deterministic_and_idempotent():
    ctx = nwattn.Context()
    with ctx:
        assert not ctx.closed
    assert ctx.closed
    ctx.close()  # again: fine
    assert "closed" in repr(ctx)
    with pytest.raises(ValueError, match="closed"):
        nwattn.pool(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), ctx=ctx)
    with pytest.raises(ValueError, match="closed"):
        with ctx:
            pass


class CountingAllocator:
    """Allocates through libc and remembers what is outstanding."""

    def __init__(self, fail=False):
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
        self.libc = libc
        self.live = set()
        self.fail = fail
        self.calls = 0

    def alloc(self, nbytes):
        self.calls += 1
        if self.fail:
            return 0
        ptr = self.libc.malloc(nbytes)
        self.live.add(ptr)
        return ptr

    def free(self, ptr):
        self.live.remove(ptr)
        self.libc.free(ptr)


def test_context_closes_on_garbage_collection():
    allocator = CountingAllocator()
    ctx = nwattn.Context(allocator=allocator)
    q = np.ones((40, 2), np.float32)
    nwattn.pool(q, q, q, ctx=ctx)
    assert len(allocator.live) == 2  # the context and its working memory
    ref = weakref.ref(ctx)
    del ctx
    gc.collect()
    assert ref() is None
    assert allocator.live == set()  # nwattn_context_destroy freed both


def test_custom_allocator_is_used_and_released():
    allocator = CountingAllocator()
    with nwattn.Context(allocator=allocator) as ctx:
        q = np.ones((40, 2), np.float32)
        nwattn.pool(q, q, q, ctx=ctx)
        ctx.release_workspace()
        assert len(allocator.live) == 1
    assert allocator.live == set() and allocator.calls >= 2


def test_failing_allocator_gives_err_alloc():
    with pytest.raises(nwattn.NWAttnError) as info:
        nwattn.Context(allocator=CountingAllocator(fail=True))
    assert info.value.status == Status.ERR_ALLOC
    assert info.value.function == "nwattn_context_create"

    class FailLater(CountingAllocator):
        def alloc(self, nbytes):
            if self.calls >= 1:  # the context itself, then nothing
                raise MemoryError("no more")
            return super().alloc(nbytes)

    allocator = FailLater()
    with nwattn.Context(allocator=allocator) as ctx:
        q = np.ones((40, 2), np.float32)
        out = np.full((40, 2), 7.0, np.float32)
        with pytest.raises(nwattn.NWAttnError) as info:
            nwattn.pool(q, q, q, out=out, ctx=ctx)
        assert info.value.status == Status.ERR_ALLOC
        assert "working memory" in str(info.value)
        assert np.all(out == 7.0)
    assert allocator.live == set()


def test_each_thread_gets_its_own_default_context():
    seen = {}

    def work(name):
        ctx = nwattn.default_context()
        q = np.ones((5, 2), np.float32)
        for _ in range(20):
            nwattn.pool(q, q, q)
        seen[name] = ctx  # kept alive, so no two can share an address

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    handles = {ctx.handle for ctx in seen.values()}
    assert len(handles) == 3
    assert nwattn.default_context().handle not in handles


def test_threads_with_their_own_contexts_agree():
    rng = np.random.default_rng(3)
    q, k, v = (rng.random((50, 4), dtype=np.float32) for _ in range(3))
    want = nwattn.pool(q, k, v, score="gaussian")
    results = []

    def work():
        with nwattn.Context() as ctx:
            results.append(nwattn.pool(q, k, v, score="gaussian", ctx=ctx))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_array_equal(r, want)

"""Context: the caller-owned handle for settings and reusable working memory."""
import ctypes
import enum
import threading
import weakref

from . import _capi
from ._capi import C
from ._errors import check


class Backend(enum.IntEnum):
    """nwattn_backend"""

    AUTO = 0  # BLAS where it can express the problem, else reference
    REFERENCE = 1  # plain loops, double accumulation: the oracle
    BLAS = 2  # cblas_sgemm / sgemv / sgemm_batch, float softmax
    FUSED = 3  # tiled online softmax on cblas_sgemm tiles


class NwMethod(enum.IntEnum):
    """nwattn_nw_method: how the regression functions compute their rows"""

    AUTO = 0  # fast sums where they can run and are predicted cheaper, else direct
    DIRECT = 1  # each row visits its points (its window with d = 1)
    FASTSUM = 2  # 1-D fast kernel sums (Laplace family exact, Gaussian within nw_tolerance)


def _backend_value(backend):
    # an unknown number in int range is the C library's to refuse (NWATTN_ERR_BAD_ENUM)
    return _capi.enum_value(Backend, backend, "backend")


class Context:
    """A libnwattn context (``nwattn_context``): backend choice, threads, working memory, last
    error.

    ``Context(backend="auto", threads=1)`` creates one. Close it with :meth:`close` or a ``with`` block;
    otherwise it is closed when garbage collected. A context must not be used by two threads at
    once; the module functions use a per-thread default context when ``ctx`` is not given.

    ``allocator``, if given, is an object with ``alloc(nbytes) -> int`` (an address, 0 for
    failure) and ``free(address)``; the library gets all its working memory (and the context
    itself) from it. Exceptions raised inside it count as a failed allocation.
    """

    def __init__(self, backend=Backend.AUTO, *, threads=1, allocator=None):
        handle = _capi.ctx_p()
        if allocator is None:
            self._callbacks = None
            status = C.nwattn_context_create(ctypes.byref(handle))
        else:
            self._callbacks = _allocator_struct(allocator)
            status = C.nwattn_context_create_with_allocator(
                ctypes.byref(handle), ctypes.byref(self._callbacks))
        check(status, None, "nwattn_context_create")
        self._handle = handle.value  # None once closed: the one flag every call reads
        # The finalizer holds the callbacks too, so they outlive the C context in every order
        # of collection.
        self._finalizer = weakref.finalize(
            self, _destroy, self._handle, self._callbacks)
        if backend != Backend.AUTO:
            self.backend = backend
        if threads != 1:
            self.threads = threads

    @property
    def handle(self):
        """The ``nwattn_context *`` as an int; ValueError once closed."""
        handle = self._handle
        if handle is None:
            raise ValueError("nwattn: the context is closed")
        return handle

    @property
    def closed(self):
        return self._handle is None

    def close(self):
        """Frees the context and its working memory (``nwattn_context_destroy``). Idempotent."""
        self._handle = None
        self._finalizer()

    def __enter__(self):
        self.handle  # refuses a closed context
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def backend(self):
        """The backend (``nwattn_context_get_backend`` / ``_set_backend``): a :class:`Backend`;
        assign a Backend, its name ("auto", "reference", "blas") or its number."""
        return Backend(C.nwattn_context_get_backend(self.handle))

    @backend.setter
    def backend(self, value):
        handle = self.handle
        check(C.nwattn_context_set_backend(handle, _backend_value(value)), handle,
              "nwattn_context_set_backend")

    @property
    def nw_method(self):
        """How the regression rows are computed (``nwattn_context_get_nw_method`` /
        ``_set_nw_method``): a :class:`NwMethod`; assign one, its name or its number."""
        return NwMethod(C.nwattn_context_get_nw_method(self.handle))

    @nw_method.setter
    def nw_method(self, value):
        if isinstance(value, str):
            try:
                value = NwMethod[value.upper()]
            except KeyError:
                raise ValueError(f"unknown regression method {value!r}; expected one of "
                                 f"{', '.join(m.name.lower() for m in NwMethod)}") from None
        handle = self.handle
        check(C.nwattn_context_set_nw_method(handle, int(value)), handle,
              "nwattn_context_set_nw_method")

    @property
    def nw_tolerance(self):
        """The Gaussian fast sums' error bound (``nwattn_context_get_nw_tolerance`` /
        ``_set_nw_tolerance``; 1e-15 to 1e-2, default 1e-7)."""
        return C.nwattn_context_get_nw_tolerance(self.handle)

    @nw_tolerance.setter
    def nw_tolerance(self, value):
        handle = self.handle
        check(C.nwattn_context_set_nw_tolerance(handle, float(value)), handle,
              "nwattn_context_set_nw_tolerance")

    @property
    def tiles(self):
        """The fused path's tile override as ``(rows, keys)`` (``nwattn_context_get_tiles`` /
        ``_set_tiles``; 0 = derived from the caches, the default ``(0, 0)``)."""
        rows, keys = ctypes.c_size_t(), ctypes.c_size_t()
        handle = self.handle
        check(C.nwattn_context_get_tiles(handle, ctypes.byref(rows), ctypes.byref(keys)), handle,
              "nwattn_context_get_tiles")
        return rows.value, keys.value

    @tiles.setter
    def tiles(self, value):
        rows, keys = value
        rows, keys = _capi.size(rows, "tile rows"), _capi.size(keys, "tile keys")
        handle = self.handle
        check(C.nwattn_context_set_tiles(handle, rows, keys), handle, "nwattn_context_set_tiles")

    def describe(self):
        """One line on what the context runs on: vector kernels, caches, tile sizes
        (``nwattn_context_describe``)."""
        handle = self.handle
        size = C.nwattn_context_describe(handle, None, 0) + 1
        buf = ctypes.create_string_buffer(size)
        C.nwattn_context_describe(handle, buf, size)
        return buf.value.decode()

    @property
    def threads(self):
        """Worker threads for the fused pooling (``nwattn_context_get_threads`` /
        ``_set_threads``; 1 to ``MAX_THREADS``, default 1)."""
        return C.nwattn_context_get_threads(self.handle)

    @threads.setter
    def threads(self, value):
        value = _capi.size(value, "threads")  # 0 and > MAX_THREADS: C refuses them
        handle = self.handle
        check(C.nwattn_context_set_threads(handle, value), handle, "nwattn_context_set_threads")

    @property
    def workspace_bytes(self):
        """Bytes of working memory the context holds (``nwattn_context_workspace_bytes``)."""
        return C.nwattn_context_workspace_bytes(self.handle)

    def release_workspace(self):
        """Frees the working memory now (``nwattn_context_release_workspace``)."""
        C.nwattn_context_release_workspace(self.handle)

    @property
    def last_error(self):
        """The message of the last failed call ("" after a success)."""
        return C.nwattn_context_last_error(self.handle).decode()

    def __repr__(self):
        if self.closed:
            return "<nwattn.Context closed>"
        return f"<nwattn.Context backend={self.backend.name.lower()} threads={self.threads} " \
               f"workspace={self.workspace_bytes} bytes>"


def _destroy(handle, callbacks):
    C.nwattn_context_destroy(handle)


def _allocator_struct(allocator):
    def alloc(user, nbytes):
        try:
            return int(allocator.alloc(nbytes)) or None
        except Exception:  # the C side sees a failed allocation: NWATTN_ERR_ALLOC
            return None

    def free(user, ptr):
        try:
            allocator.free(ptr)
        except Exception:
            pass

    return _capi.Allocator(_capi.ALLOC_FN(alloc), _capi.FREE_FN(free), None)


_default = threading.local()


def default_context():
    """This thread's default context, created on first use."""
    ctx = getattr(_default, "ctx", None)
    if ctx is None or ctx._handle is None:
        ctx = _default.ctx = Context()
    return ctx


def default_handle():
    """This thread's default context's handle (what the compiled fast path calls for ctx=None)."""
    ctx = getattr(_default, "ctx", None)
    if ctx is None or ctx._handle is None:
        ctx = default_context()
    return ctx._handle


def handle_of(ctx):
    """The handle to call with: ctx's (TypeError/ValueError if it is not an open Context), or
    this thread's default context's. An explicit context costs no more than the default."""
    if ctx is None:
        return default_handle()
    if type(ctx) is not Context and not isinstance(ctx, Context):
        raise TypeError(f"ctx: expected nwattn.Context, got {type(ctx).__name__}")
    handle = ctx._handle
    if handle is None:
        raise ValueError("nwattn: the context is closed")
    return handle


def resolve(ctx):
    """The context to use for a call: ctx, or this thread's default one."""
    if ctx is None:
        return default_context()
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx: expected nwattn.Context, got {type(ctx).__name__}")
    return ctx

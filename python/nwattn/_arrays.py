"""How numpy arrays become the C API's (pointer, leading dimension, batch stride) operands.

A matrix argument is an array of shape ``(*batch, rows, cols)``. It is passed without a copy
when the C API can describe its memory: native float32, aligned, elements of a row adjacent,
rows a non-negative whole number of elements apart and at least a row long, and all batch axes
expressible as one non-negative stride (0 for numpy broadcasting). That covers C-contiguous
arrays, column slices ``x[..., :, a:b]``, row steps ``x[::2]``, broadcast batch axes and
``x[:, None]`` of a 1-D array.

Inputs that do not qualify are converted with a copy: other real dtypes (integers, float16,
float64, non-native byte order) are rounded to float32; other layouts (transposes, negative or
odd strides, broadcast rows) are made contiguous. Complex, boolean, object and other non-real
inputs are refused with TypeError. Outputs (``out=`` arrays) are never copied: one that is not
float32, not writeable or not describable is refused, so results never land in a hidden copy.
"""
import math

import numpy as np

F32 = np.dtype(np.float32)
SIZE_T = np.dtype(np.uintp)  # size_t on every platform numpy supports


def float_input(x, name, min_ndim=2):
    """x as an ndarray of native float32 (a view if it already is one), at least min_ndim-D."""
    if type(x) is np.ndarray and x.dtype is F32 and x.ndim >= min_ndim:
        return x  # the common case, first and cheapest
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu":
        raise TypeError(
            f"{name}: dtype {arr.dtype} is not a real number type "
            "(nwattn computes in float32; integers and floats are converted)"
        )
    if arr.dtype != F32:
        arr = arr.astype(F32)
    if arr.ndim < min_ndim:
        what = "a matrix (…, rows, cols)" if min_ndim == 2 else f"{min_ndim}-D"
        raise ValueError(f"{name}: expected {what}, got shape {arr.shape}")
    return arr


def keep_input(x, name):
    """A keep mask as uint8 (a view of a bool array; other integer arrays become x != 0)."""
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or arr.dtype == np.uint8:
        arr = arr.view(np.uint8)
    elif arr.dtype.kind in "iu":
        arr = (arr != 0).view(np.uint8)
    else:
        raise TypeError(f"{name}: dtype {arr.dtype} is not boolean or integer")
    if arr.ndim < 2:
        raise ValueError(f"{name}: expected a matrix (…, m, n), got shape {arr.shape}")
    return arr


def broadcast_batch(named_shapes):
    """The common batch shape of [(name, batch shape)], by numpy's broadcasting rules."""
    first = named_shapes[0][1]
    if all(shape == first for _, shape in named_shapes):
        return first  # the common case, without numpy's general (and slow) rules
    try:
        return np.broadcast_shapes(*(shape for _, shape in named_shapes))
    except ValueError:
        listed = ", ".join(f"{name} {shape}" for name, shape in named_shapes)
        raise ValueError(f"batch shapes do not broadcast: {listed}") from None


def count(batch_shape):
    return math.prod(batch_shape)


def _layout(arr):
    """(ld, stride) in elements if the C API can describe arr's memory as it is, else None."""
    item = arr.itemsize
    if not arr.flags.aligned or arr.dtype.byteorder not in "=|":
        return None
    rows, cols = arr.shape[-2:]
    if arr.size == 0:  # an empty problem: nothing is read or written, any layout will do
        return max(cols, 1), 0
    strides = arr.strides
    if cols > 1 and strides[-1] != item:
        return None
    ld = max(cols, 1)  # what the library sees when the row step does not matter
    if rows > 1:
        step = strides[-2]
        if step < 0 or step % item or step // item < max(cols, 1):
            return None
        ld = step // item
    # All batch axes of length > 1 must be one arithmetic progression of items.
    axes = [(n, s) for n, s in zip(arr.shape[:-2], strides[:-2]) if n != 1]
    stride = 0
    if axes:
        if axes[-1][1] < 0 or axes[-1][1] % item:
            return None
        stride = axes[-1][1] // item
        expected = axes[-1][1]
        for n, s in reversed(axes):
            if s != expected:
                return None
            expected = s * n
    return ld, stride


class Operand:
    """An array as the C API sees it: data pointer, leading dimension, batch stride."""

    __slots__ = ("array", "ld", "stride")

    def __init__(self, array, ld, stride):
        self.array = array  # keeps the memory alive for the duration of the call
        self.ld = ld
        self.stride = stride

    @property
    def ptr(self):
        return self.array.ctypes.data

    @property
    def args(self):
        return self.ptr, self.ld, self.stride


def _contiguous_layout(arr):
    """(ld, stride) of a C-contiguous aligned array, without looking at its strides."""
    rows, cols = arr.shape[-2:]
    return max(cols, 1), (rows * cols if arr.ndim > 2 else 0)


def input_operand(arr, batch_shape, name):
    """Broadcasts arr to batch_shape + its matrix shape; copies only if the layout needs it
    (a fresh copy is C-contiguous and aligned, whatever the input was: unaligned data too)."""
    batch_shape = tuple(batch_shape)
    if arr.shape[:-2] != batch_shape:
        arr = np.broadcast_to(arr, batch_shape + arr.shape[-2:])
    elif arr.flags.c_contiguous and arr.flags.aligned and arr.dtype.isnative:
        return Operand(arr, *_contiguous_layout(arr))
    layout = _layout(arr)
    if layout is None:
        arr = np.array(arr, order="C", copy=True)
        layout = _layout(arr)
    return Operand(arr, *layout)


def output_operand(out, shape, name):
    """A new float32 array of shape, or the caller's out= array checked as it is (never copied)."""
    shape = tuple(shape)
    if out is None:
        arr = np.empty(shape, dtype=F32)
        return Operand(arr, *_contiguous_layout(arr))
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name}: expected a numpy.ndarray, got {type(out).__name__}")
    if out.dtype != F32:
        raise TypeError(f"{name}: dtype {out.dtype}, expected native float32 (outputs are "
                        "never converted)")
    if out.shape != shape:
        raise ValueError(f"{name}: shape {out.shape}, expected {shape}")
    if not out.flags.writeable:
        raise ValueError(f"{name}: the array is read-only")
    if not out.flags.aligned:
        raise ValueError(f"{name}: the array is not aligned to 4 bytes (outputs are never "
                         "copied); use e.g. numpy.empty(shape, numpy.float32)")
    layout = _layout(out)
    if layout is None:
        raise ValueError(
            f"{name}: the layout (strides {out.strides}) cannot be passed to the C library "
            "without a copy; use an array whose rows have adjacent elements and whose batch "
            "axes have one stride, e.g. numpy.empty(shape, numpy.float32)"
        )
    return Operand(out, *layout)


def vector_input(x, shape, name):
    """A per-row input read by C (a state's max or sum, (*batch, m)): float32 with the m
    entries of an item adjacent, copied into that form if need be (read-only arrays too)."""
    arr = float_input(x, name, min_ndim=1)
    if arr.shape != tuple(shape):
        raise ValueError(f"{name}: shape {arr.shape}, expected {tuple(shape)}")
    op = input_operand(arr[..., None, :], (), name) if arr.ndim == 1 else \
        input_operand(arr[..., None, :], arr.shape[:-1], name)
    return op


def vector_output(out, shape, name):
    """A per-row output such as the log-sum-exp, shape (*batch, m): the C API takes only a batch
    stride for it, so the m entries of an item must be adjacent (seen as a 1×m matrix)."""
    shape = tuple(shape)
    if out is None:
        out = np.empty(shape, dtype=F32)
    elif not isinstance(out, np.ndarray):
        raise TypeError(f"{name}: expected a numpy.ndarray, got {type(out).__name__}")
    elif out.shape != shape:
        raise ValueError(f"{name}: shape {out.shape}, expected {shape}")
    op = output_operand(out[..., None, :], shape[:-1] + (1, shape[-1]), name)
    op.array = out
    return op

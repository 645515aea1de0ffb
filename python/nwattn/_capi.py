"""ctypes declarations of include/nwattn.h, and the converters every argument goes through.

ctypes rather than cffi: it is in the standard library, so the package stays pure Python with no
compiler, no build step and no extra dependency (Debian has no cffi for the system Python by
default), and ``pip install`` works offline. The price is that the prototypes below are written
by hand; tests/test_capi.py checks them against the header so they cannot drift silently. The
optional compiled fast path (python/ext/nwattn_fast.c, see _fastpath.py) takes the addresses
of the same functions from ``lib`` (``address(name)``), so both paths call the one library
that was loaded.

How to add a C function (other modules' blocks go at the end of this file):

    declare({"nwattn_new_thing": (status_t, (ctx_p, S, S, fptr, S))})   # then C.nwattn_new_thing

``declare`` sets restype/argtypes once, at import (never per call), records the prototype in
PROTOTYPES (test_capi.py compares PROTOTYPES with the header) and fails the import, naming the
function, when the loaded library lacks it.

ctypes truncates integers silently (2**64 + 2 becomes 2, 2**40 as an int becomes 0), so no
value from the user reaches a prototype or a struct field unconverted: ``size(value, name)``
for size_t, ``c_int_value(value, name)`` for int, ``uint64(value, name)`` for uint64_t, and
``enum_value(cls, value, name, aliases)`` for enums (names, members or numbers; numbers in int range that are not members go to C, which
refuses them with NWATTN_ERR_BAD_ENUM). Each accepts only true integers (operator.index: int,
numpy integers, IntEnum; not 2.0) and raises ValueError/TypeError naming the argument. Sizes
read from numpy shapes are in range by construction and need no conversion.
"""
import ctypes
import operator
from ctypes import c_char_p, c_double, c_float, c_int, c_size_t, c_uint, c_uint64, c_void_p

from ._loader import load

lib, library_path = load()

status_t = c_int  # nwattn_status: a C enum, int-sized
ctx_p = c_void_p  # nwattn_context *
fptr = c_void_p  # float * / const float * (numpy data addresses)


class Score(ctypes.Structure):
    """struct nwattn_score"""

    _fields_ = [
        ("kind", c_int),
        ("scale", c_float),
        ("bandwidth", c_float),
        ("bandwidths", c_void_p),
    ]


class Mask(ctypes.Structure):
    """struct nwattn_mask"""

    _fields_ = [
        ("flags", c_uint),
        ("valid_lens", c_void_p),
        ("additive", c_void_p),
        ("ld_additive", c_size_t),
        ("stride_additive", c_size_t),
        ("keep", c_void_p),
        ("ld_keep", c_size_t),
        ("stride_keep", c_size_t),
    ]


ALLOC_FN = ctypes.CFUNCTYPE(c_void_p, c_void_p, c_size_t)
FREE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)


class Allocator(ctypes.Structure):
    """struct nwattn_allocator"""

    _fields_ = [("alloc", ALLOC_FN), ("free", FREE_FN), ("user", c_void_p)]


class PoolState(ctypes.Structure):
    """struct nwattn_pool_state"""

    _fields_ = [
        ("acc", c_void_p),
        ("ld_acc", c_size_t),
        ("stride_acc", c_size_t),
        ("max", c_void_p),
        ("sum", c_void_p),
        ("stride_stats", c_size_t),
    ]


class AttentionParams(ctypes.Structure):
    """struct nwattn_attention_params"""

    _fields_ = [
        ("heads", c_size_t),
        ("d_q_in", c_size_t),
        ("d_k_in", c_size_t),
        ("d_v_in", c_size_t),
        ("d_qk", c_size_t),
        ("d_v", c_size_t),
        ("d_out", c_size_t),
        ("w_q", c_void_p),
        ("w_k", c_void_p),
        ("w_v", c_void_p),
        ("w_o", c_void_p),
        ("b_q", c_void_p),
        ("b_k", c_void_p),
        ("b_v", c_void_p),
        ("b_o", c_void_p),
    ]


class Regression(ctypes.Structure):
    """struct nwattn_regression"""

    _fields_ = [("kernel", c_int), ("degree", c_int), ("empty", c_int)]


class CvOptions(ctypes.Structure):
    """struct nwattn_cv_options"""

    _fields_ = [
        ("grid_points", c_size_t),
        ("scale_min", c_float),
        ("scale_max", c_float),
        ("start", c_void_p),
        ("max_evaluations", c_size_t),
        ("tolerance", c_double),
    ]


class CvReport(ctypes.Structure):
    """struct nwattn_cv_report"""

    _fields_ = [
        ("cv", c_double),
        ("evaluations", c_size_t),
        ("flagged_rows", c_size_t),
        ("at_grid_edge", c_int),
        ("converged", c_int),
    ]


class Sgd(ctypes.Structure):
    """struct nwattn_sgd"""

    _fields_ = [("learning_rate", c_float), ("epochs", c_size_t)]


class Rng(ctypes.Structure):
    """struct nwattn_rng"""

    _fields_ = [("state", c_uint64)]


score_p = ctypes.POINTER(Score)
state_p = ctypes.POINTER(PoolState)
params_p = ctypes.POINTER(AttentionParams)
reg_p = ctypes.POINTER(Regression)
rng_p = ctypes.POINTER(Rng)
mask_p = ctypes.POINTER(Mask)
S = c_size_t
M = (fptr, S, S)  # a matrix argument: pointer, leading dimension, batch stride

class _Functions:
    """The prototyped C functions as attributes: ``C.nwattn_pool(...)``."""


C = _Functions()
PROTOTYPES = {}  # name: (return type, argument types), every function declared so far


def declare(block):
    """Prototypes the functions of block ({name: (restype, argtypes)}) once and adds them to C."""
    missing = [name for name in block if not hasattr(lib, name)]
    if missing:
        raise ImportError(
            f"nwattn: the library loaded from {library_path} lacks {', '.join(missing)}: it is "
            "older than this Python package; rebuild or reinstall libnwattn, or point "
            "NWATTN_LIBRARY at a current build")
    for name, (restype, argtypes) in block.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = list(argtypes)
        setattr(C, name, fn)
    PROTOTYPES.update(block)


def address(name):
    """The address of a declared C function, for the compiled fast path."""
    return ctypes.cast(getattr(C, name), c_void_p).value


SIZE_MAX = 2 ** (8 * ctypes.sizeof(c_size_t)) - 1
INT_MIN, INT_MAX = -2 ** (8 * ctypes.sizeof(c_int) - 1), 2 ** (8 * ctypes.sizeof(c_int) - 1) - 1


def _integer(value, name):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__} "
                        f"{value!r}") from None


def _in_range(value, name, low, high, what):
    value = _integer(value, name)
    if not low <= value <= high:
        raise ValueError(f"{name} = {value} is out of range: {what} takes {low} to {high}")
    return value


def size(value, name, minimum=0):
    """value as a size_t, ValueError outside [minimum, SIZE_MAX]."""
    return _in_range(value, name, minimum, SIZE_MAX, "a size")


def uint64(value, name):
    """value as a uint64_t, ValueError outside [0, 2**64 - 1]."""
    return _in_range(value, name, 0, 2 ** 64 - 1, "a 64-bit unsigned integer")


def c_int_value(value, name):
    """value as a C int, ValueError outside [INT_MIN, INT_MAX]."""
    return _in_range(value, name, INT_MIN, INT_MAX, "a C int")


def enum_value(cls, value, name, aliases=None):
    """An enum argument as a C int: a member, its name (case-insensitive, or an alias in
    aliases) or a number in int range (C refuses numbers that name no member)."""
    if isinstance(value, str):
        key = value.lower()
        key = (aliases or {}).get(key, key).upper()
        try:
            return cls[key]
        except KeyError:
            raise ValueError(f"unknown {name} {value!r}; expected one of "
                             f"{', '.join(m.name.lower() for m in cls)}") from None
    return c_int_value(value, name)


declare({
    "nwattn_version_number": (c_uint, ()),
    "nwattn_version_string": (c_char_p, ()),
    "nwattn_status_name": (c_char_p, (status_t,)),
    "nwattn_status_describe": (c_char_p, (status_t,)),
    "nwattn_context_create": (status_t, (ctypes.POINTER(ctx_p),)),
    "nwattn_context_create_with_allocator": (
        status_t, (ctypes.POINTER(ctx_p), ctypes.POINTER(Allocator))),
    "nwattn_context_destroy": (None, (ctx_p,)),
    "nwattn_context_set_backend": (status_t, (ctx_p, c_int)),
    "nwattn_context_get_backend": (c_int, (ctx_p,)),
    "nwattn_context_workspace_bytes": (c_size_t, (ctx_p,)),
    "nwattn_context_release_workspace": (None, (ctx_p,)),
    "nwattn_context_last_error": (c_char_p, (ctx_p,)),
    "nwattn_scores": (status_t, (ctx_p, score_p, S, S, S, S, *M, *M, *M)),
    "nwattn_softmax": (status_t, (ctx_p, mask_p, S, S, S, *M, *M, fptr, S)),
    "nwattn_bmm": (status_t, (ctx_p, S, S, S, S, *M, *M, *M)),
    "nwattn_pool": (
        status_t, (ctx_p, score_p, mask_p, S, S, S, S, S, *M, *M, *M, *M, *M, fptr, S)),
    "nwattn_average_pool": (status_t, (ctx_p, mask_p, S, S, S, S, *M, *M)),
    "nwattn_context_set_threads": (status_t, (ctx_p, S)),
    "nwattn_context_get_threads": (S, (ctx_p,)),
    "nwattn_context_set_nw_method": (status_t, (ctx_p, c_int)),
    "nwattn_context_get_nw_method": (c_int, (ctx_p,)),
    "nwattn_context_set_nw_tolerance": (status_t, (ctx_p, ctypes.c_double)),
    "nwattn_context_get_nw_tolerance": (ctypes.c_double, (ctx_p,)),
    "nwattn_context_set_tiles": (status_t, (ctx_p, S, S)),
    "nwattn_context_get_tiles": (status_t, (ctx_p, ctypes.POINTER(S), ctypes.POINTER(S))),
    "nwattn_context_describe": (S, (ctx_p, c_char_p, S)),
    "nwattn_pool_partial": (
        status_t, (ctx_p, score_p, mask_p, S, S, S, S, S, S, *M, *M, *M, state_p)),
    "nwattn_pool_state_merge": (status_t, (ctx_p, S, S, S, state_p, state_p)),
    "nwattn_pool_state_finish": (status_t, (ctx_p, S, S, S, state_p, *M, fptr, S)),
    "nwattn_positional_encoding": (status_t, (ctx_p, S, S, S, fptr, S)),
    "nwattn_attention": (
        status_t, (ctx_p, params_p, score_p, mask_p, S, S, S, *M, *M, *M, *M, *M)),
    # Nadaraya-Watson regression
    "nwattn_nw_predict": (
        status_t, (ctx_p, reg_p, fptr, S, S, S, S, fptr, S, fptr, S, fptr, S, fptr, S, fptr, S,
                   c_void_p, ctypes.POINTER(c_size_t))),
    "nwattn_nw_cv": (
        status_t, (ctx_p, reg_p, S, S, S, fptr, S, fptr, S, S, fptr, S, c_void_p, c_void_p, S,
                   c_void_p)),
    "nwattn_bandwidth_rule_of_thumb": (status_t, (ctx_p, c_int, S, S, fptr, S, fptr)),
    "nwattn_cv_options_default": (None, (ctypes.POINTER(CvOptions),)),
    "nwattn_nw_select_bandwidth": (
        status_t, (ctx_p, reg_p, S, S, S, fptr, S, fptr, S, ctypes.POINTER(CvOptions), fptr,
                   ctypes.POINTER(CvReport), fptr, c_void_p)),
    "nwattn_nw_select_bandwidth_weighted": (
        status_t, (ctx_p, reg_p, S, S, S, fptr, S, fptr, S, fptr, ctypes.POINTER(CvOptions),
                   fptr, ctypes.POINTER(CvReport), fptr, c_void_p)),
    "nwattn_wmodel_evaluate": (
        status_t, (ctx_p, c_float, mask_p, S, S, S, S, fptr, S, fptr, S, fptr, S, fptr, S,
                   fptr, S, fptr, S, ctypes.POINTER(c_double), ctypes.POINTER(c_double))),
    "nwattn_wmodel_train": (
        status_t, (ctx_p, ctypes.POINTER(Sgd), S, S, S, fptr, S, fptr, S,
                   ctypes.POINTER(c_float), c_void_p)),
    "nwattn_weights_diagnostics": (status_t, (ctx_p, S, S, fptr, S, fptr, fptr)),
    "nwattn_rng_seed": (None, (rng_p, c_uint64)),
    "nwattn_rng_next": (c_uint64, (rng_p,)),
    "nwattn_rng_uniform": (c_double, (rng_p,)),
    "nwattn_rng_normal": (c_double, (rng_p,)),
    "nwattn_dataset_generate": (status_t, (ctx_p, c_int, rng_p, S, fptr, fptr)),
    "nwattn_dataset_truth": (status_t, (ctx_p, c_int, S, fptr, fptr)),
})

# ---- Inference, densities and mixed data (issue 15's statistics: _stats.py, _mixed.py) ----
# The summary struct is passed as c_void_p (python/nwattn/_stats.py owns its layout).
declare({
    "nwattn_nw_summary": (
        status_t, (ctx_p, reg_p, fptr, S, S, fptr, S, fptr, fptr, c_void_p, fptr, c_void_p)),
    "nwattn_nw_inference": (
        status_t, (ctx_p, reg_p, fptr, S, S, fptr, S, fptr, fptr, c_int, S, fptr, S, c_void_p,
                   c_void_p, c_void_p, S, c_void_p, S, c_void_p)),
    "nwattn_nw_bootstrap_bands": (
        status_t, (ctx_p, reg_p, fptr, S, S, fptr, S, fptr, fptr, S, fptr, S, S, c_uint64,
                   c_double, c_void_p, c_void_p, c_void_p, c_void_p)),
    "nwattn_nw_bootstrap_t_bands": (
        status_t, (ctx_p, reg_p, fptr, S, S, fptr, S, fptr, fptr, S, fptr, S, S, c_uint64,
                   c_double, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p)),
    "nwattn_kde": (status_t, (ctx_p, fptr, S, S, S, fptr, S, fptr, S, fptr, c_void_p)),
    "nwattn_kde_cv": (
        status_t, (ctx_p, S, fptr, S, S, S, fptr, S, fptr, c_void_p, c_void_p)),
    "nwattn_mixed_predict": (
        status_t, (ctx_p, c_void_p, fptr, S, S, S, fptr, S, fptr, S, fptr, fptr, c_void_p)),
    "nwattn_mixed_cv": (
        status_t, (ctx_p, c_void_p, S, fptr, S, S, S, fptr, S, fptr, fptr, c_void_p)),
    "nwattn_mixed_predict_estimator": (
        status_t, (ctx_p, c_void_p, c_int, fptr, S, S, S, fptr, S, fptr, S, fptr, fptr, c_void_p,
                   c_void_p, c_void_p)),
    "nwattn_mixed_cv_estimator": (
        status_t, (ctx_p, c_void_p, c_int, S, fptr, S, S, S, fptr, S, fptr, fptr, c_void_p,
                   c_void_p)),
    "nwattn_mixed_kde": (
        status_t, (ctx_p, c_void_p, fptr, S, S, S, fptr, S, fptr, S, fptr, c_void_p, c_void_p)),
})
# ---- end of the statistics block ----


# ---- Backward passes (issue 12): the gradient structs and functions --------------------------
class PoolUpstream(ctypes.Structure):
    """struct nwattn_pool_upstream"""

    _fields_ = [("o", c_void_p), ("ldo", c_size_t), ("stride_o", c_size_t),
                ("lse", c_void_p), ("stride_lse", c_size_t),
                ("d_o", c_void_p), ("ld_do", c_size_t), ("stride_do", c_size_t)]


class PoolGrads(ctypes.Structure):
    """struct nwattn_pool_grads"""

    _fields_ = [("d_q", c_void_p), ("ld_dq", c_size_t), ("stride_dq", c_size_t),
                ("d_k", c_void_p), ("ld_dk", c_size_t), ("stride_dk", c_size_t),
                ("d_v", c_void_p), ("ld_dv", c_size_t), ("stride_dv", c_size_t),
                ("d_scale", c_void_p), ("d_bandwidth", c_void_p), ("d_bandwidths", c_void_p),
                ("d_additive", c_void_p), ("ld_d_additive", c_size_t),
                ("stride_d_additive", c_size_t)]


class AttentionGrads(ctypes.Structure):
    """struct nwattn_attention_grads"""

    _fields_ = [("dx_q", c_void_p), ("ld_dx_q", c_size_t), ("stride_dx_q", c_size_t),
                ("dx_k", c_void_p), ("ld_dx_k", c_size_t), ("stride_dx_k", c_size_t),
                ("dx_v", c_void_p), ("ld_dx_v", c_size_t), ("stride_dx_v", c_size_t),
                ("dw_q", c_void_p), ("dw_k", c_void_p), ("dw_v", c_void_p), ("dw_o", c_void_p),
                ("db_q", c_void_p), ("db_k", c_void_p), ("db_v", c_void_p), ("db_o", c_void_p),
                ("d_score", c_void_p), ("d_additive", c_void_p), ("ld_d_additive", c_size_t),
                ("stride_d_additive", c_size_t)]


declare({
    "nwattn_pool_backward": (
        status_t, (ctx_p, score_p, mask_p, S, S, S, S, S, *M, *M, *M,
                   ctypes.POINTER(PoolUpstream), ctypes.POINTER(PoolGrads))),
    "nwattn_attention_backward": (
        status_t, (ctx_p, params_p, score_p, mask_p, S, S, S, *M, *M, *M, *M,
                   ctypes.POINTER(AttentionGrads))),
    "nwattn_attention_saved_floats": (
        status_t, (ctx_p, params_p, S, S, S, ctypes.POINTER(S))),
    "nwattn_attention_save": (
        status_t, (ctx_p, params_p, score_p, mask_p, S, S, S, *M, *M, *M, *M, fptr, S)),
    "nwattn_attention_backward_saved": (
        status_t, (ctx_p, params_p, score_p, mask_p, S, S, S, *M, *M, *M, *M, fptr, S,
                   ctypes.POINTER(AttentionGrads))),
    "nwattn_nw_predict_backward": (
        status_t, (ctx_p, reg_p, fptr, S, S, S, S, fptr, S, fptr, S, fptr, S, fptr, S, fptr)),
})

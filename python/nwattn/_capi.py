"""ctypes declarations of include/nwattn.h, one line per prototype.

ctypes rather than cffi: it is in the standard library, so the package stays pure Python with no
compiler, no build step and no extra dependency (Debian has no cffi for the system Python by
default), and ``pip install`` works offline. The price is that the prototypes below are written
by hand; tests/test_capi.py checks them against the header so they cannot drift silently.
"""
import ctypes
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

# name: (return type, argument types)
PROTOTYPES = {
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
}


class _Functions:
    """The prototyped C functions as attributes: ``C.nwattn_pool(...)``."""


C = _Functions()
missing = []
for _name, (_restype, _argtypes) in PROTOTYPES.items():
    try:
        _fn = getattr(lib, _name)
    except AttributeError:
        missing.append(_name)
        continue
    _fn.restype = _restype
    _fn.argtypes = list(_argtypes)
    setattr(C, _name, _fn)

if missing:
    raise ImportError(
        f"nwattn: the library loaded from {library_path} lacks {', '.join(missing)}: it is "
        "older than this Python package; rebuild or reinstall libnwattn, or point NWATTN_LIBRARY "
        "at a current build"
    )

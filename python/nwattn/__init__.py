"""nwattn: Python binding of libnwattn, attention pooling as Nadaraya-Watson kernel regression.

    O = softmax(score(Q, K) + mask) · V

numpy arrays in, numpy arrays out, computed by the C library (float32, row-major) through
ctypes. See python/README.md for the conventions (shapes, dtypes, copies, errors).
"""
from ._loader import ENV_VAR, LibraryNotFoundError
from ._capi import library_path
from ._capi import C as _C
from ._errors import NWAttnError, Status, status_describe, status_name
from ._context import Backend, Context, NwMethod, default_context
from ._core import MaskFlag, ScoreKind, average_pool, bmm, pool, scores, softmax
from ._transformer import (PoolState, attention, finish_state, merge_states, pool_partial,
                           positional_encoding)
from ._regression import (BandwidthRule, BandwidthSelection, Dataset, Degree, Empty, Kernel,
                          Rng, RowFlag, WModelResult, bandwidth_rule_of_thumb, cv_options_default,
                          dataset_generate, dataset_truth, nw_cv, nw_predict, select_bandwidth,
                          weights_diagnostics, wmodel_evaluate, wmodel_train)

MAX_THREADS = 256  # NWATTN_MAX_THREADS

__version__ = "0.1.0"


def version():
    """The version string of the loaded C library (``nwattn_version_string``)."""
    return _C.nwattn_version_string().decode()


def version_number():
    """``nwattn_version_number``: major·10000 + minor·100 + patch of the loaded C library."""
    return _C.nwattn_version_number()


if version_number() // 10000 != int(__version__.split(".")[0]):
    raise ImportError(
        f"nwattn: the library at {library_path} is version {version()}, but this Python "
        f"package {__version__} needs the same major version"
    )

__all__ = [
    "Backend", "Context", "NwMethod", "LibraryNotFoundError", "MaskFlag", "MAX_THREADS", "NWAttnError",
    "PoolState", "ScoreKind", "Status", "ENV_VAR", "attention", "average_pool", "bmm",
    "default_context", "finish_state", "library_path", "merge_states", "pool", "pool_partial",
    "positional_encoding", "scores", "softmax", "status_describe", "status_name", "version",
    "version_number", "BandwidthRule", "BandwidthSelection", "Dataset", "Degree", "Empty",
    "Kernel", "Rng", "RowFlag", "WModelResult", "bandwidth_rule_of_thumb", "cv_options_default",
    "dataset_generate", "dataset_truth", "nw_cv", "nw_predict", "select_bandwidth",
    "weights_diagnostics", "wmodel_evaluate", "wmodel_train",
]

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
from ._stats import (Bands, FitSummary, Inference, TBands, Variance, kde, kde_cv,
                     kde_select_bandwidth, nw_bootstrap_bands, nw_inference,
                     nw_select_bandwidth_weighted, nw_summary)
from ._mixed import (MixedEstimator, mixed_cv, mixed_kde, mixed_predict,
                     mixed_select_bandwidth)
from ._sklearn import NWResults
from ._autograd import attention_backward, nw_predict_backward, pool_backward



def __getattr__(name):
    """nwattn.autograd (torch.autograd.Functions) and nwattn.NadarayaWatson (the scikit-learn
    estimator) import torch and scikit-learn on first access only."""
    if name == "NadarayaWatson":
        try:
            from ._estimator import NadarayaWatson
        except ImportError as e:  # no scikit-learn: as if the attribute did not exist
            raise AttributeError(f"nwattn.NadarayaWatson needs scikit-learn ({e})") from None
        globals()["NadarayaWatson"] = NadarayaWatson
        return NadarayaWatson
    if name == "autograd":
        try:
            from . import _torch_layer
        except ImportError as e:  # no torch: as if the attribute did not exist
            raise AttributeError(f"nwattn.autograd needs torch ({e})") from None
        globals()["autograd"] = _torch_layer
        return _torch_layer
    raise AttributeError(f"module 'nwattn' has no attribute {name!r}")


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
    # backward passes (_autograd.py)
    "pool_backward", "nw_predict_backward", "attention_backward",
    # statistics (_stats.py)
    "Bands", "TBands", "FitSummary", "Inference", "Variance", "kde", "kde_cv",
    "kde_select_bandwidth",
    "nw_bootstrap_bands", "nw_inference", "nw_select_bandwidth_weighted", "nw_summary",
    "NWResults", "MixedEstimator", "mixed_cv", "mixed_kde", "mixed_predict",
    "mixed_select_bandwidth",
]

"""The optional compiled fast path (the module nwattn._fast, python/ext/nwattn_fast.c).

It runs pool, pool_backward, softmax, bmm, scores and nw_predict in C for plain arguments
(float32 C-contiguous aligned arrays, plain keywords) and returns NotImplemented for anything else, so
every public function tries it first and then runs its pure-Python path, which is complete on
its own. Where it is looked for, first hit wins:

1. ``NWATTN_EXTENSION``: ``off`` (or ``0``) for pure Python; otherwise the path of the module
   file, which must load (an error, never a silent fallback, like ``NWATTN_LIBRARY``).
2. ``nwattn/_fast*.so`` inside this package (copied or installed there).
3. The CMake build tree the library was loaded from: ``<build>/python/_fast<suffix>`` next to
   ``<build>/src/libnwattn.so.0``.

``ext`` is the bound module or None; ``path`` where it came from; ``reason`` why it is None.
"""
import importlib.machinery
import importlib.util
import os
import pathlib

from . import _capi
from ._context import Context, default_handle
from ._errors import check

ENV_VAR = "NWATTN_EXTENSION"
_NAME = "nwattn._fast"
_SUFFIXES = importlib.machinery.EXTENSION_SUFFIXES


def _load_file(path):
    spec = importlib.util.spec_from_file_location(_NAME, path)
    if spec is None:
        raise ImportError(f"nwattn: {ENV_VAR}={path} is not a Python extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_tree_file():
    lib = pathlib.Path(_capi.library_path)
    if not lib.is_absolute():
        return None
    for suffix in _SUFFIXES:
        candidate = lib.resolve().parent.parent / "python" / ("_fast" + suffix)
        if candidate.is_file():
            return candidate
    return None


def _find():
    """(module or None, path or None, reason)."""
    setting = os.environ.get(ENV_VAR, "")
    if setting.lower() in ("off", "0"):
        return None, None, f"{ENV_VAR}={setting}"
    if setting:
        return _load_file(setting), setting, ""
    try:
        from . import _fast  # installed inside the package
        return _fast, _fast.__file__, ""
    except ImportError:
        pass
    candidate = _build_tree_file()
    if candidate is None:
        return None, None, "not built (no python3-dev or numpy headers, or a pip install)"
    try:
        return _load_file(str(candidate)), str(candidate), ""
    except ImportError as exc:  # e.g. built for another interpreter: pure Python then
        return None, None, f"{candidate}: {exc}"


ext, path, reason = _find()
if ext is not None:
    ext.bind({name: _capi.address(name) for name in
              ("nwattn_pool", "nwattn_softmax", "nwattn_bmm", "nwattn_scores",
               "nwattn_nw_predict", "nwattn_pool_backward")}, check, default_handle, Context)

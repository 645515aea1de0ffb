"""Finding and loading libnwattn.

The search order, first hit wins:

1. ``NWATTN_LIBRARY``: a path to ``libnwattn.so*`` or to the directory holding it. When it is set
   nothing else is tried, so a wrong value is an error rather than a silent fallback.
2. The installed library through the dynamic loader: ``libnwattn.so.0`` (the SONAME, so the ABI
   matches), found through ``LD_LIBRARY_PATH``, the ``ldconfig`` cache and the system
   directories; then whatever ``ctypes.util.find_library("nwattn")`` finds.
3. A build tree of the source checkout this package sits in: ``<repo>/build*/src/``, the most
   recently built one first.

If all fail, :class:`LibraryNotFoundError` lists every place that was tried and why it failed.
"""
import ctypes
import ctypes.util
import os
import pathlib

ENV_VAR = "NWATTN_LIBRARY"
SONAME = "libnwattn.so.0"


class LibraryNotFoundError(ImportError):
    """libnwattn could not be loaded; the message lists what was tried."""


def _repo_root():
    # python/nwattn/_loader.py -> the checkout's top directory
    return pathlib.Path(__file__).resolve().parents[2]


def _build_tree_candidates():
    root = _repo_root()
    if not (root / "include" / "nwattn.h").is_file():
        return []  # installed somewhere else: there is no build tree next to us
    found = [p for p in root.glob("build*/src/" + SONAME) if p.is_file()]
    found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return [str(p) for p in found]


def _from_env(value):
    path = pathlib.Path(value).absolute()
    if path.is_dir():
        for name in (SONAME, "libnwattn.so"):
            if (path / name).exists():
                return str(path / name)
        return str(path / SONAME)  # fails below, with that name in the message
    return str(path)


def load():
    """Loads the library; returns ``(ctypes.CDLL, path or name it was loaded from)``."""
    tried = []

    def attempt(target, how):
        try:
            return ctypes.CDLL(target)
        except OSError as exc:
            tried.append(f"  {how}: {target}: {exc}")
            return None

    override = os.environ.get(ENV_VAR)
    if override:
        target = _from_env(override)
        lib = attempt(target, f"${ENV_VAR}")
        if lib is not None:
            return lib, target
    else:
        tried.append(f"  ${ENV_VAR}: not set")
        lib = attempt(SONAME, "installed library (dynamic loader search)")
        if lib is not None:
            return lib, SONAME
        found = ctypes.util.find_library("nwattn")
        if found:
            lib = attempt(found, "ctypes.util.find_library")
            if lib is not None:
                return lib, found
        else:
            tried.append("  ctypes.util.find_library('nwattn'): nothing found")
        candidates = _build_tree_candidates()
        if not candidates:
            tried.append(f"  build tree: no {_repo_root()}/build*/src/{SONAME}")
        for target in candidates:
            lib = attempt(target, "build tree")
            if lib is not None:
                return lib, target

    raise LibraryNotFoundError(
        "nwattn: cannot load the C library libnwattn. Tried, in order:\n"
        + "\n".join(tried)
        + f"\nBuild it (cmake -S . -B build && cmake --build build), install it "
        f"(cmake --install build), or set {ENV_VAR} to the path of {SONAME}."
    )

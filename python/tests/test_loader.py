"""Finding the library: NWATTN_LIBRARY, then the installed library, then a build tree; a clear
error listing what was tried."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import nwattn

PACKAGE = pathlib.Path(nwattn.__file__).resolve().parent
REPO = PACKAGE.parents[1]
LOADED = pathlib.Path(nwattn.library_path)


def run(code, env_changes, cwd=None, package_parent=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NWATTN_LIBRARY", "LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update({k: v for k, v in env_changes.items() if v is not None})
    env["PYTHONPATH"] = str(package_parent or PACKAGE.parent)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, cwd=cwd or "/")


def system_has_libnwattn():
    """Whether a fresh process finds an installed libnwattn (this one has loaded a library
    already, which the dynamic loader would hand back for its SONAME)."""
    r = run("import ctypes, ctypes.util\n"
            "try:\n    ctypes.CDLL('libnwattn.so.0'); print('found')\n"
            "except OSError:\n    print('found' if ctypes.util.find_library('nwattn') else '')",
            {})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip() == "found"


needs_built_library = pytest.mark.skipif(
    not LOADED.is_absolute() or not LOADED.exists(),
    reason="these tests start from the library file this session loaded")


@needs_built_library
def test_env_var_with_file_path():
    r = run("import nwattn; print(nwattn.library_path)", {"NWATTN_LIBRARY": str(LOADED)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(LOADED)


@needs_built_library
def test_env_var_with_directory():
    r = run("import nwattn; print(nwattn.library_path)", {"NWATTN_LIBRARY": str(LOADED.parent)})
    assert r.returncode == 0, r.stderr
    assert pathlib.Path(r.stdout.strip()).parent == LOADED.parent


def test_env_var_pointing_nowhere_is_an_error_not_a_fallback():
    r = run("import nwattn", {"NWATTN_LIBRARY": "/nonexistent/libnwattn.so.0"})
    assert r.returncode != 0
    assert "LibraryNotFoundError" in r.stderr
    assert "$NWATTN_LIBRARY: /nonexistent/libnwattn.so.0" in r.stderr
    assert "set NWATTN_LIBRARY" in r.stderr


@needs_built_library
def test_installed_library_is_found_through_the_dynamic_loader(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "nwattn")  # away from any build tree
    r = run("import nwattn; print(nwattn.library_path)",
            {"LD_LIBRARY_PATH": str(LOADED.parent)}, package_parent=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "libnwattn.so.0"


def test_nothing_found_lists_every_attempt(tmp_path):
    if system_has_libnwattn():
        pytest.skip("a libnwattn is installed system-wide, so the search cannot fail")
    shutil.copytree(PACKAGE, tmp_path / "nwattn")
    r = run("import nwattn", {}, package_parent=tmp_path)
    assert r.returncode != 0
    for expected in ("$NWATTN_LIBRARY: not set", "installed library (dynamic loader search)",
                     "find_library", "build tree"):
        assert expected in r.stderr


@needs_built_library
def test_build_tree_is_found_from_a_source_checkout(tmp_path):
    if system_has_libnwattn():
        pytest.skip("a libnwattn is installed system-wide and would be found first")
    # A checkout in miniature: include/nwattn.h, python/nwattn/, two build trees.
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "nwattn.h").write_text("/* marker */\n")
    shutil.copytree(PACKAGE, tmp_path / "python" / "nwattn")
    for name, age in (("build-old", 100), ("build", 0)):
        lib = tmp_path / name / "src" / "libnwattn.so.0"
        lib.parent.mkdir(parents=True)
        shutil.copy(LOADED, lib)
        stamp = lib.stat().st_mtime - age
        os.utime(lib, (stamp, stamp))
    r = run("import nwattn; print(nwattn.library_path)", {},
            package_parent=tmp_path / "python")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "build" / "src" / "libnwattn.so.0")  # the newest

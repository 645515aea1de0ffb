"""CTest check that `pip install ./python` works offline: builds and installs the package into a
fresh virtual environment (with the system site-packages, where Debian's numpy lives) using
only what is installed (--no-build-isolation --no-index), then imports it from there and pools
a tiny problem. Exit code 77 (a CTest skip) if pip, venv, setuptools or wheel is missing.

usage: python3 check_pip_install.py WORKDIR
"""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

SKIP = 77
source = pathlib.Path(__file__).resolve().parents[1]  # python/
work = pathlib.Path(sys.argv[1]).resolve()

missing = [m for m in ("pip", "venv", "setuptools", "wheel")
           if importlib.util.find_spec(m) is None]
if missing:
    print(f"SKIPPED: {sys.executable} lacks {', '.join(missing)} "
          f"(Debian: apt-get install {' '.join('python3-' + m for m in missing)})")
    sys.exit(SKIP)

shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
# A copy, so that the build's by-products (build/, *.egg-info) stay out of the source tree.
pkg = work / "src"
pkg.mkdir()
shutil.copy(source / "pyproject.toml", pkg)
shutil.copy(source / "README.md", pkg)
shutil.copytree(source / "nwattn", pkg / "nwattn",
                ignore=shutil.ignore_patterns("__pycache__"))

venv = work / "venv"
subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                str(venv)], check=True)
python = venv / "bin" / "python"
cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-build-isolation",
       "--no-index", "--no-cache-dir", "--disable-pip-version-check", str(pkg)]
print("$", " ".join(cmd), flush=True)
subprocess.run(cmd, check=True)

check = """
import pathlib, sys
import numpy as np
import nwattn
where = pathlib.Path(nwattn.__file__).resolve()
assert str(where).startswith(sys.prefix), f"imported {where}, not from the venv {sys.prefix}"
o = nwattn.pool(np.zeros((1, 1)), np.array([[0.0], [1.0]]), np.array([[2.0], [4.0]]),
                score="gaussian")
w0 = 1.0 / (1.0 + np.exp(-0.5))
assert abs(o[0, 0] - (2 * w0 + 4 * (1 - w0))) < 1e-5, o
print(f"ok: nwattn {nwattn.__version__} from {where.parent}, library {nwattn.library_path}")
"""
env = dict(os.environ)
env.pop("PYTHONPATH", None)
subprocess.run([str(python), "-c", check], check=True, cwd=str(work), env=env)

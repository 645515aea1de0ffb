"""pytest set-up: test the package of this source tree against the library NWATTN_LIBRARY names
(CTest sets it to the freshly built one) or, without it, whatever the loader finds."""
import os
import pathlib
import sys

# NWATTN_TESTS_WITHOUT=torch,scipy,...: run as if those packages were not installed (their
# tests skip; nwattn.autograd and nwattn.NadarayaWatson are absent). Set for AddressSanitizer
# builds (torch: its C++ exceptions meet the preloaded runtime's __cxa_throw interceptor before
# libstdc++ is resolved, a CHECK failure inside ASan) and under valgrind (torch takes minutes
# to import there, and scipy's Boost ufuncs fail to initialise under valgrind's emulation of
# long double, taking scikit-learn and statsmodels with them).
for _module in filter(None, os.environ.get("NWATTN_TESTS_WITHOUT", "").split(",")):
    sys.modules[_module.strip()] = None  # `import <module>` now raises ImportError

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import nwattn  # noqa: E402

BACKENDS = ["auto", "reference", "blas"]


@pytest.fixture(params=BACKENDS)
def ctx(request):
    with nwattn.Context(request.param) as c:
        yield c


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


def pytest_report_header(config):
    return f"nwattn: library {nwattn.library_path}, version {nwattn.version()}"

"""CTest's entry to the Python binding tests: runs pytest on this directory, or reports a skip
(exit code 77, which CTest shows as "Skipped") when numpy or pytest is missing for this
interpreter, saying what to install. Anything else that goes wrong is a failure.

usage: python3 run_ctest.py [pytest arguments]
"""
import os
import pathlib
import sys

SKIP = 77

reason = os.environ.get("NWATTN_PYTHON_TESTS_SKIP")
if reason:
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)

missing = []
for module in ("numpy", "pytest"):
    try:
        __import__(module)
    except ImportError:
        missing.append(module)
if missing:
    print(f"SKIPPED: the Python binding tests need {' and '.join(missing)} for {sys.executable} "
          f"(Debian: apt-get install {' '.join('python3-' + m for m in missing)})")
    sys.exit(SKIP)

import pytest  # noqa: E402

here = pathlib.Path(__file__).resolve().parent
# --capture=sys leaves file descriptor 2 alone, so that a sanitizer's report (written there by
# the C library's runtime, which then ends the process) reaches the CTest log.
sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", "--capture=sys", str(here)]
                     + sys.argv[1:]))

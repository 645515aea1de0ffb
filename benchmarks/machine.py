"""What the Python benchmarks record about the machine next to their times: the CPU's name and
the OpenBLAS core this process runs on (OpenBLAS 0.3.21 names Sapphire Rapids "Prescott",
SSE3 kernels, unless OPENBLAS_CORETYPE says otherwise), read from the loaded library."""
import ctypes
import os
import platform


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def has_avx512():
    """Whether the CPU reports AVX-512 Foundation (OpenBLAS's SkylakeX kernels need it)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and "avx512f" in line.split() for line in f)
    except OSError:
        return False


def openblas():
    """{"blas": openblas_get_config(), "blas_core": openblas_get_corename()} of the OpenBLAS
    loaded in this process (numpy's, libnwattn's and Debian torch's), None where absent."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0", mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
    except OSError:  # not loaded (yet) or not OpenBLAS: load it, as numpy would
        try:
            lib = ctypes.CDLL("libopenblas.so.0")
        except OSError:
            return {"blas": None, "blas_core": None}
    lib.openblas_get_corename.restype = ctypes.c_char_p
    lib.openblas_get_config.restype = ctypes.c_char_p
    return {"blas": lib.openblas_get_config().decode(),
            "blas_core": lib.openblas_get_corename().decode()}

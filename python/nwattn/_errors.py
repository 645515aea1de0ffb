"""Status codes and the one exception type every C failure becomes."""
import enum

from . import _capi
from ._capi import C


class Status(enum.IntEnum):
    """nwattn_status. The values are those of the C header, fixed forever."""

    OK = 0
    ERR_NULL_POINTER = 1
    ERR_BAD_DIMENSION = 2
    ERR_BAD_LEADING_DIM = 3
    ERR_BAD_STRIDE = 4
    ERR_BAD_PARAMETER = 5
    ERR_BAD_ENUM = 6
    ERR_BAD_MASK = 7
    ERR_ALIASING = 8
    ERR_OVERFLOW = 9
    ERR_TOO_LARGE = 10
    ERR_ALLOC = 11
    ERR_UNSUPPORTED = 12
    ERR_DEGENERATE_DATA = 13


class NWAttnError(Exception):
    """A call into libnwattn returned a status other than NWATTN_OK.

    ``str(err)`` is the C library's own message (``nwattn_context_last_error``), which begins
    with the status name, e.g. ``"NWATTN_ERR_BAD_PARAMETER: bandwidth -1 is not finite and > 0"``.

    Attributes:
        status: the :class:`Status` (a plain ``int`` for a code this package does not know).
        name: the C name of the status, e.g. ``"NWATTN_ERR_BAD_PARAMETER"``.
        message: the C library's message.
        function: the C function that failed, e.g. ``"nwattn_pool"``.
    """

    def __init__(self, status, message, function=None):
        try:
            self.status = Status(status)
        except ValueError:
            self.status = int(status)
        self.name = status_name(status)
        self.message = message
        self.function = function
        super().__init__(message)


def status_name(status):
    """``nwattn_status_name``: ``"NWATTN_ERR_NULL_POINTER"`` etc."""
    return C.nwattn_status_name(_capi.c_int_value(status, "status")).decode()


def status_describe(status):
    """``nwattn_status_describe``: a one-line English description of a status."""
    return C.nwattn_status_describe(_capi.c_int_value(status, "status")).decode()


def check(status, handle, function):
    """Raises NWAttnError carrying the context's message unless status is NWATTN_OK."""
    if status == 0:
        return
    message = C.nwattn_context_last_error(handle).decode() if handle else ""
    if not message:  # no context to read it from (context creation): describe the status
        message = f"{status_name(status)}: {status_describe(status)}"
    raise NWAttnError(status, message, function)

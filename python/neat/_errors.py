"""The exceptions of the neat package: one class per error code of the C++
library (docs/contract.md, "Errors"), each carrying the same message, the
code's stable name, the place and the fixes the library gave it as data."""


class Error(Exception):
    """A neat error. ``code`` is the stable name of the C++ ErrorCode
    ("invalid_argument", ...), ``message`` the whole message, ``fix`` the
    best step that avoids the error (None when it names none), ``fixes``
    every such step, best first (a graph's build lists one or more per
    problem), and ``where`` the place (a stage, an edge, a call) or None.
    The fixes are data the library set where it made the error, in Python's
    words."""

    code = "error"

    def __init__(self, message, fix=None, where=None, fixes=None):
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.where = where
        self.fixes = list(fixes) if fixes is not None else ([fix] if fix else [])


class InvalidArgument(Error, ValueError):
    """The caller passed something malformed."""

    code = "invalid_argument"


class OutOfRange(Error, IndexError):
    """An index, extent or byte range lies outside what exists."""

    code = "out_of_range"


class FailedPrecondition(Error):
    """Well-formed, but not allowed now: a Strict refusal, a read-only write."""

    code = "failed_precondition"


class Unimplemented(Error, NotImplementedError):
    """A valid request this build cannot serve."""

    code = "unimplemented"


class ResourceExhausted(Error):
    """Memory or another resource could not be obtained (a push that timed out)."""

    code = "resource_exhausted"


class Internal(Error):
    """A neat bug: please report it."""

    code = "internal"


class Unavailable(Error):
    """A backend or device this machine does not have."""

    code = "unavailable"


class Cancelled(Error):
    """Stopped on request before it completed."""

    code = "cancelled"


class Timeout(Error, TimeoutError):
    """Nothing arrived within the timeout the caller gave."""

    code = "timeout"


for _cls in (Error, InvalidArgument, OutOfRange, FailedPrecondition, Unimplemented,
             ResourceExhausted, Internal, Unavailable, Cancelled, Timeout):
    _cls.__module__ = "neat"

_BY_CODE = {
    cls.code: cls
    for cls in (InvalidArgument, OutOfRange, FailedPrecondition, Unimplemented,
                ResourceExhausted, Internal, Unavailable, Cancelled, Timeout)
}

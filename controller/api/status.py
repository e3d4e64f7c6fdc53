"""The one table from controller errors to gRPC status codes."""

from __future__ import annotations

import grpc

from jackpot import errors

# Most specific first; the first class an error is an instance of decides its code.
STATUS_BY_ERROR: tuple[tuple[type[errors.JackpotError], grpc.StatusCode], ...] = (
    (errors.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.NotFound, grpc.StatusCode.NOT_FOUND),
    (errors.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (errors.FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.ResourceExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.CorruptRecord, grpc.StatusCode.DATA_LOSS),
    (errors.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (errors.PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (errors.PositionUnverified, grpc.StatusCode.UNAVAILABLE),  # the table keeps its reports
    (errors.StoreUnavailable, grpc.StatusCode.UNAVAILABLE),
)


def status_for(error: errors.JackpotError) -> grpc.StatusCode:
    """The gRPC status code for ``error``; INTERNAL for anything not in the table."""
    for error_class, code in STATUS_BY_ERROR:
        if isinstance(error, error_class):
            return code
    return grpc.StatusCode.INTERNAL


def code_label(code: grpc.StatusCode) -> str:
    """A status code as the ``grpc_code`` label value of go-grpc-prometheus, which stock
    dashboards and the rules in deploy/ query: ``OK``, ``InvalidArgument``, ``Unavailable``."""
    if code is grpc.StatusCode.OK:
        return "OK"
    if code is grpc.StatusCode.CANCELLED:
        return "Canceled"  # Go's spelling
    return code.name.title().replace("_", "")


CODE_LABELS = tuple(code_label(code) for code in grpc.StatusCode)
"""Every ``grpc_code`` label value, for the series created at zero."""

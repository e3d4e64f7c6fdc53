"""The one table from controller errors to gRPC status codes and machine-readable reasons.

Every refusal is answered with its status code, its English message, and the
``google.rpc.Status`` details (trailer ``grpc-status-details-bin``, read with
``grpc_status.rpc_status.from_call`` or any gRPC library's rich error model):

- an ``ErrorInfo``: domain :data:`DOMAIN`, a ``reason`` from :data:`REFUSALS`;
- a ``BadRequest`` naming the request field, when one field is at fault;
- a ``RetryInfo`` when a retry can succeed by itself (RESOURCE_EXHAUSTED, UNAVAILABLE):
  the rate limit's real delay, otherwise the back-off to start with.

The reasons are a stable API: a reason is never renamed or reused, only added
(docs/reference/errors.md is generated from this table by scripts/gen_error_docs.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2, status_pb2

from jackpot import errors

DOMAIN = "jackpot.v1"
"""The ``ErrorInfo.domain`` of every refusal."""

DETAILS_KEY = "grpc-status-details-bin"
"""The trailer that carries the serialized ``google.rpc.Status``."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """One row: the errors of class ``error`` (and, for access refusals, of ``kind``, the
    error's ``reason`` label) answer ``code`` with ``reason``. ``retry_s``: the back-off a
    caller starts with (a ``RetryInfo``), None where retrying the same request cannot help
    by itself. ``when`` and ``retry`` are the documentation of the reason."""

    error: type[errors.JackpotError]
    code: grpc.StatusCode
    reason: str
    when: str
    retry: str
    kind: str = ""
    retry_s: float | None = None


_C = grpc.StatusCode
_NO = "no: correct the request"

# Most specific first; the first row an error matches decides its code and reason.
# fmt: off
REFUSALS: tuple[Refusal, ...] = (
    Refusal(errors.InvalidCards, _C.INVALID_ARGUMENT, "INVALID_CARDS",
            "a card that is not a card, a wrong number of cards, or a card dealt twice", _NO),
    Refusal(errors.InvalidSeat, _C.INVALID_ARGUMENT, "INVALID_SEAT",
            "a seat outside 1..seats of the table, or a seat named twice", _NO),
    Refusal(errors.InvalidAmount, _C.INVALID_ARGUMENT, "INVALID_AMOUNT",
            "an amount that is zero, negative, not whole cents or out of range", _NO),
    Refusal(errors.InvalidConfiguration, _C.INVALID_ARGUMENT, "INVALID_CONFIGURATION",
            "a meter, table or link group definition (or an id) the regulation refuses", _NO),
    Refusal(errors.InvalidArgument, _C.INVALID_ARGUMENT, "INVALID_ARGUMENT",
            "any other malformed request: a field missing, too long, out of range, an "
            "unknown enum value, a body that does not decode", _NO),
    Refusal(errors.NotFound, _C.NOT_FOUND, "NOT_FOUND",
            "it names a table, meter, link group, round or jackpot that does not exist",
            "no: create it first, or name one that exists"),
    Refusal(errors.AlreadyExists, _C.ALREADY_EXISTS, "ALREADY_EXISTS",
            "a create names something that exists with another definition "
            "(the same definition again succeeds)", "no: update it, or pick another id"),
    Refusal(errors.RoundStateError, _C.FAILED_PRECONDITION, "ROUND_STATE",
            "the round is not in the state the phase needs (a lockout twice, a settle "
            "before its lockout, a void after its settle)", "no: the round is where it is"),
    Refusal(errors.IdempotencyConflict, _C.FAILED_PRECONDITION, "IDEMPOTENCY_CONFLICT",
            "the same (table, round, phase) key was sent before with other content",
            "no: a retry must send the same request"),
    Refusal(errors.FailedPrecondition, _C.FAILED_PRECONDITION, "FAILED_PRECONDITION",
            "well formed, but the state does not allow it now (a retired table, a link "
            "group in maintenance, a review already decided, ...)",
            "not as is: once a person changed the state"),
    Refusal(errors.RateLimited, _C.RESOURCE_EXHAUSTED, "RATE_LIMITED",
            "the caller made more calls a second than its rate (tables and other "
            "identities each have their own)",
            "yes: after the RetryInfo delay, the time until its next call is admitted",
            retry_s=1.0),
    Refusal(errors.SlotsExhausted, _C.RESOURCE_EXHAUSTED, "SLOTS_EXHAUSTED",
            "the caller (or the controller) holds the most calls in progress or "
            "streams open", "yes: once one of its calls or streams ends", retry_s=1.0),
    Refusal(errors.RequestLate, _C.RESOURCE_EXHAUSTED, "REQUEST_LATE",
            "the call sent no request within the time it has (10 s by default)",
            "yes: send the request with the call", retry_s=0.1),
    Refusal(errors.ResourceExhausted, _C.RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED",
            "another bound of what one caller may hold", "yes: later", retry_s=1.0),
    Refusal(errors.CorruptRecord, _C.DATA_LOSS, "CORRUPT_RECORD",
            "a stored record this controller cannot read; only requests needing it "
            "are refused", "no: an engineer restores it from the last export"),
    Refusal(errors.Unauthenticated, _C.UNAUTHENTICATED, "NO_CERTIFICATE",
            "the call came without a client certificate", "no: call with the identity's "
            "certificate", kind="no_certificate"),
    Refusal(errors.Unauthenticated, _C.UNAUTHENTICATED, "CERTIFICATE_REVOKED",
            "the client certificate is on the deny list (a stream ends so at its next "
            "message)", "no: a new certificate is needed", kind="revoked"),
    Refusal(errors.Unauthenticated, _C.UNAUTHENTICATED, "NO_IDENTITY",
            "the client certificate names no jackpot identity, or more than one",
            "no: a certificate naming one identity is needed", kind="no_identity"),
    Refusal(errors.Unauthenticated, _C.UNAUTHENTICATED, "UNAUTHENTICATED",
            "any other certificate the controller does not accept", "no"),
    Refusal(errors.PermissionDenied, _C.PERMISSION_DENIED, "ROLE_NOT_ALLOWED",
            "the caller's role may not make this call (the roles of each RPC are in "
            "the .proto)", "no: call with an identity of an allowed role", kind="role"),
    Refusal(errors.PermissionDenied, _C.PERMISSION_DENIED, "OTHER_TABLE",
            "a table's certificate reports for another table", "no: a table reports for "
            "itself only", kind="other_table"),
    Refusal(errors.PermissionDenied, _C.PERMISSION_DENIED, "UNKNOWN_METHOD",
            "the method is served to no caller", "no", kind="unknown_method"),
    Refusal(errors.PermissionDenied, _C.PERMISSION_DENIED, "CROSS_SITE",
            "a floor view action that did not come from the floor view itself (HTTP "
            "only)", "no", kind="cross_site"),
    Refusal(errors.PermissionDenied, _C.PERMISSION_DENIED, "PERMISSION_DENIED",
            "any other act beyond the caller's role or table", "no"),
    Refusal(errors.AccessDenied, _C.PERMISSION_DENIED, "ACCESS_DENIED",
            "an access refusal of no more precise class", "no"),
    Refusal(errors.NotConfirmed, _C.UNAVAILABLE, "NOT_CONFIRMED",
            "applied on the primary, but too few replicas confirmed it in time",
            "yes: the same request; its retry replays the reply", retry_s=0.05),
    Refusal(errors.LinkGroupStopped, _C.UNAVAILABLE, "LINK_GROUP_STOPPED",
            "the link group's state in Redis is missing or older than what a table was "
            "acknowledged; nothing of it is served until an operator restores or resumes it",
            "yes: keep the reports and send them again; it serves once an operator acts",
            retry_s=1.0),
    Refusal(errors.PositionUnverified, _C.UNAVAILABLE, "POSITION_UNVERIFIED",
            "a table claims a journal position its link group lacks and the controller "
            "cannot verify it issued it; only that table is refused",
            "yes: keep the reports until an operator looks (alert "
            "JackpotTablePositionAhead)", retry_s=1.0),
    Refusal(errors.StoreUnavailable, _C.UNAVAILABLE, "STORE_UNAVAILABLE",
            "Redis is unreachable, or did not confirm durability",
            "yes: the same request, with back-off", retry_s=0.05),
    Refusal(errors.JackpotError, _C.INTERNAL, "INTERNAL",
            "a fault of the controller, logged there; the message says no more",
            "yes, with back-off; call the engineer on duty if it lasts", retry_s=None),
)
# fmt: on

STATUS_BY_ERROR: tuple[tuple[type[errors.JackpotError], grpc.StatusCode], ...] = tuple(
    (row.error, row.code) for row in REFUSALS if not row.kind
)
"""Each error class and its status code (the rows of :data:`REFUSALS` for whole classes)."""


_ROWS: dict[tuple[type[errors.JackpotError], str], Refusal] = {}


def _row(error_class: type[errors.JackpotError], kind: str) -> Refusal:
    found = _ROWS.get((error_class, kind))
    if found is None:
        found = next(
            (
                row
                for row in REFUSALS
                if issubclass(error_class, row.error) and (not row.kind or row.kind == kind)
            ),
            REFUSALS[-1],
        )
        if len(_ROWS) < 1_000:  # kinds are a short list written in code; bounded anyway
            _ROWS[error_class, kind] = found
    return found


def refusal_for(error: errors.JackpotError) -> Refusal:
    """The row of ``error``: its class's, or its access refusal kind's."""
    kind = error.reason if isinstance(error, errors.AccessDenied) else ""
    return _row(type(error), kind)


def status_for(error: errors.JackpotError) -> grpc.StatusCode:
    """The gRPC status code for ``error``; INTERNAL for anything not in the table."""
    return refusal_for(error).code


def rich_status(error: errors.JackpotError, message: str | None = None) -> status_pb2.Status:
    """The ``google.rpc.Status`` of ``error``: its code, ``message`` (``str(error)`` unless
    given) and details (ErrorInfo; BadRequest when a field is at fault; RetryInfo when a
    retry can succeed)."""
    row = refusal_for(error)
    status = status_pb2.Status(
        code=row.code.value[0], message=str(error) if message is None else message
    )
    info = error_details_pb2.ErrorInfo(reason=row.reason, domain=DOMAIN)
    field = getattr(error, "field", "")
    if field:
        info.metadata["field"] = field
    status.details.add().Pack(info)
    if field:
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=field, description=status.message, reason=row.reason
        )
        status.details.add().Pack(error_details_pb2.BadRequest(field_violations=[violation]))
    retry_s = getattr(error, "retry_after_s", None) or row.retry_s
    if retry_s is not None and row.code in _RETRIED:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(max(1_000_000, round(retry_s * 1e9)))  # at least 1 ms
        status.details.add().Pack(error_details_pb2.RetryInfo(retry_delay=delay))
    return status


def details_trailer(
    error: errors.JackpotError, message: str | None = None
) -> tuple[tuple[str, bytes], ...]:
    """The trailing metadata carrying ``error``'s :func:`rich_status`."""
    return ((DETAILS_KEY, rich_status(error, message).SerializeToString()),)


_RETRIED = frozenset({grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE})

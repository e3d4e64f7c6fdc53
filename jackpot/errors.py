"""Every error the controller refuses a request with, in one hierarchy.

::

    JackpotError
    ├── InvalidArgument            the request itself is malformed   -> INVALID_ARGUMENT
    │   ├── InvalidCards           a card, a count or a duplicate
    │   ├── InvalidSeat            a seat outside 1..seats of the table
    │   ├── InvalidAmount          a zero, negative or out-of-range amount
    │   └── InvalidConfiguration   a meter, table or link group the regulation refuses
    ├── NotFound                   it names something that does not exist -> NOT_FOUND
    ├── AlreadyExists              a create that differs from what exists -> ALREADY_EXISTS
    ├── FailedPrecondition         well formed, but not now          -> FAILED_PRECONDITION
    │   ├── RoundStateError        lockout twice, settle before lockout, void after settle
    │   └── IdempotencyConflict    the same (table, round, phase) key with other content
    ├── ResourceExhausted          a caller's rate or stream bound     -> RESOURCE_EXHAUSTED
    │   ├── RateLimited            the caller's call rate is spent (``retry_after_s``)
    │   ├── SlotsExhausted         too many calls in progress or streams open
    │   └── RequestLate            a call that sent no request in time
    ├── CorruptRecord              a stored record that cannot be read -> DATA_LOSS
    └── StoreUnavailable           Redis is unreachable or not durable -> UNAVAILABLE
        ├── NotConfirmed           applied, but too few replicas confirmed it in time
        └── LinkGroupStopped       Redis lacks state it had (jackpot.epochs)

    AccessDenied                   who calls may not make this call (``controller.api.access``)
    ├── Unauthenticated            no usable certificate, or a revoked one -> UNAUTHENTICATED
    └── PermissionDenied           a role or table it may not act for -> PERMISSION_DENIED

Each class maps to exactly one gRPC status code and one machine-readable reason (the
``ErrorInfo`` of the status details, docs/reference/errors.md) in ``controller.api.status``;
an :class:`InvalidArgument` may name the one request ``field`` at fault. The message
is written for the person who has to act on it (a dealer, a supervisor or an engineer) and
names the table, round, seat or card concerned. Raising any of these guarantees that
nothing was changed: the store raises them from inside its atomic scripts before the
first write, or the API raises them before the store is called.

This module imports nothing of gRPC or Redis: the pure domain and the table agent raise these too.
"""

from __future__ import annotations


class JackpotError(Exception):
    """Base of every refusal. ``str(error)`` is the message sent to the caller."""


class InvalidArgument(JackpotError):
    """The request is malformed whatever the state of the system. ``field``: the request
    field at fault (``table_id``, ``wagers``), when it is one; empty otherwise."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class InvalidCards(InvalidArgument):
    """A card that is not a card, a wrong number of cards, or a card dealt twice."""


class InvalidSeat(InvalidArgument):
    """A seat number outside 1..N for the table, or a seat named twice."""


class InvalidAmount(InvalidArgument):
    """An amount that is zero, negative, not whole cents or outside the allowed range."""


class InvalidConfiguration(InvalidArgument):
    """A meter, link group or table definition the regulation or the design refuses."""


class NotFound(JackpotError):
    """The request names a table, meter, link group, round or jackpot that does not exist."""


class AlreadyExists(JackpotError):
    """A create names something that exists already with a different definition."""


class FailedPrecondition(JackpotError):
    """The request is well formed but the state does not allow it now."""


class RoundStateError(FailedPrecondition):
    """The round is not in the state the phase needs (the lockout gate, settle, void)."""


class IdempotencyConflict(FailedPrecondition):
    """A retry key (table, round, phase) was seen before with different content."""


class ResourceExhausted(JackpotError):
    """The caller exceeded its call rate or its open streams; it may retry later."""


class RateLimited(ResourceExhausted):
    """The caller's call rate is spent; its next call is admitted in ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SlotsExhausted(ResourceExhausted):
    """The caller (or the controller) holds the most calls in progress or streams open."""


class RequestLate(ResourceExhausted):
    """A call that did not send its request within the time it has."""


class AccessDenied(JackpotError):
    """The caller may not make this call. ``reason`` labels the refusal in the metrics
    (``no_certificate``, ``revoked``, ``no_identity``, ``role``, ``other_table``, ...)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class Unauthenticated(AccessDenied):
    """No certificate naming a jackpot identity, or a revoked one."""


class PermissionDenied(AccessDenied):
    """An authenticated caller acting beyond its role or its table."""


class CorruptRecord(JackpotError):
    """A record stored in Redis that this controller cannot read (a field that is not what
    was written: JSON that does not parse, an amount that is not an integer, a must-hit-by
    hit point outside its range). Only requests that need that record are refused, and each
    names it - ``kind`` (a meter, a table, a jackpot, ...), ``name`` (its id) and ``key``
    (its Redis key); the record is never guessed at nor rewritten. DATA_LOSS: no retry
    helps until an engineer restores it from the last export."""

    def __init__(self, kind: str, name: str, key: str, detail: str) -> None:
        where = f" (Redis key {key})" if key else ""
        subject = f"the stored record of {kind} {name}" if name else "a stored record"
        super().__init__(
            f"{subject}{where} is corrupt: {detail}; it is not "
            "used until an engineer restores it from the last export (jackpotctl restore) - "
            "call the engineer on duty"
        )
        self.kind = kind
        self.name = name
        self.key = key
        self.detail = detail


class StoreUnavailable(JackpotError):
    """Redis could not be reached, or did not confirm durability; the caller may retry."""


class NotConfirmed(StoreUnavailable):
    """The write was applied on the primary but not confirmed by enough replicas in time.

    ``reply`` is what the store answered; a retry of the same request replays it.
    """

    def __init__(self, message: str, reply: object) -> None:
        super().__init__(message)
        self.reply = reply


class LinkGroupStopped(StoreUnavailable):
    """The link group's state in Redis is missing, or older than what a table was
    acknowledged: nothing of it is served until an operator restores or resumes it. UNAVAILABLE,
    so that tables keep their reports and send them again once it serves."""


class PositionUnverified(StoreUnavailable):
    """A table claims a journal position its link group's state lacks, and the controller
    cannot verify that it issued it: only that table is refused (the group serves on).
    UNAVAILABLE, so that an honest table whose position could not be verified keeps its
    reports until an operator looks (alert JackpotTablePositionAhead)."""

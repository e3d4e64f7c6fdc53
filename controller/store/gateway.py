"""The one way the store talks to Redis: its scripts, the replica wait, and what a refusal means.

:class:`ScriptGateway` runs one script per transition (EVALSHA through
:class:`~controller.store.script_calls.ScriptCalls`, or the script on its shard of a Redis
Cluster); with ``wait_replicas`` it then waits for that many replicas to confirm the write
(:mod:`controller.store.durability`) before answering, so that what is acknowledged survives a
failover. Every reply Redis refuses becomes the matching :mod:`jackpot.errors` class
(:func:`script_error`); a Redis that cannot be reached is :class:`StoreUnavailable` without its
host or port. The aggregates of the store (:mod:`controller.store.catalog` and the others) read
and write through it and nothing else.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import (
    AskError,
    AuthenticationError,
    BusyLoadingError,
    ClusterDownError,
    ClusterError,
    MovedError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from controller.store import cluster, connection
from controller.store.durability import ReplicaWait
from controller.store.script_calls import ScriptCalls
from controller.store.scripts import Scripts
from jackpot.errors import (
    AlreadyExists,
    CorruptRecord,
    FailedPrecondition,
    IdempotencyConflict,
    InvalidArgument,
    InvalidConfiguration,
    JackpotError,
    LinkGroupStopped,
    NotConfirmed,
    NotFound,
    PositionUnverified,
    RoundStateError,
    StoreUnavailable,
)

log = logging.getLogger("controller.store")

Result = TypeVar("Result")
Item = TypeVar("Item")
Refusal = TypeVar("Refusal", bound=JackpotError)

UNREACHABLE = "Redis is unreachable; retry the same request (it is idempotent)"
"""What a client is told when Redis cannot be reached: never the host or port."""
# Redis appends where in the script an error was raised; the caller needs only the message.
_SCRIPT_LOCATION = re.compile(r"\s*script: \w+, on @user_script:\d+\.?$")

_UNREACHABLE_ERRORS = (RedisConnectionError, RedisTimeoutError, ClusterError, SlotNotCoveredError)
"""Redis did not serve the call: unreachable, or a cluster without a primary for the slot
(during a failover) or whose redirections did not end."""

# Replies that mean "not now" rather than "no": a retry of the same request can succeed.
# redis-py raises these classes with the reply's code taken off the message.
_TRANSIENT_ERRORS: dict[type[Exception], str] = {
    ReadOnlyError: "READONLY",
    OutOfMemoryError: "OOM",
    BusyLoadingError: "LOADING",
    ClusterDownError: "CLUSTERDOWN",  # a shard without a primary, during a failover
    TryAgainError: "TRYAGAIN",
    MovedError: "MOVED",
    AskError: "ASK",
}
_TRANSIENT_CODES = frozenset(
    {
        "READONLY",
        "OOM",
        "BUSY",
        "LOADING",
        "MASTERDOWN",
        "NOREPLICAS",
        "TRYAGAIN",
        "CLUSTERDOWN",
        "MISCONF",  # it cannot persist (a full disk, a failed save): not now
        "MOVED",  # a cluster slot elsewhere (never the host in a reply to a client)
        "ASK",
    }
)

# Error code at the start of a script's error reply -> the error class it means.
_SCRIPT_ERRORS: dict[str, type[JackpotError]] = {
    "CONFLICT": IdempotencyConflict,
    "STALE": RoundStateError,
    "NOT_LOCKED": RoundStateError,
    "VOIDED": RoundStateError,
    "SETTLED": RoundStateError,
    "IRREGULAR": RoundStateError,  # held for a supervisor (a chip count that differed)
    "REST_VOID": RoundStateError,  # § 647a.13(a), (d): only its bonus wagers settle
    "MYSTERY_HIT": RoundStateError,  # it won a must-hit-by jackpot: a supervisor voids it
    "NOT_IRREGULAR": RoundStateError,
    "DECIDED": FailedPrecondition,
    "NOT_APPROVED": FailedPrecondition,
    "SAME_PERSON": FailedPrecondition,
    "COMPLIANCE": FailedPrecondition,  # a tax-form reference or a witness the payment lacks
    "STALE_POLICY": FailedPrecondition,
    "LATER_HIT": FailedPrecondition,
    "OVERFLOW": FailedPrecondition,
    "NOT_FOUND": NotFound,
    "EXISTS": AlreadyExists,
    "INVALID": InvalidConfiguration,
    "BOUND": InvalidArgument,
    "LOST": LinkGroupStopped,
    "STOPPED": LinkGroupStopped,
    "UNVERIFIED": PositionUnverified,  # a table's unverifiable claim: that table only
    "NOT_STOPPED": FailedPrecondition,
    "CHECKPOINT": FailedPrecondition,  # a trim raced with another: read and sign again
    "MAINTENANCE": FailedPrecondition,
    "NOT_IN_MAINTENANCE": FailedPrecondition,
    "CHANGED": FailedPrecondition,
    "CEILING": FailedPrecondition,
    "ADJUSTMENT": FailedPrecondition,
    "FEEDS": FailedPrecondition,
    "PENDING": FailedPrecondition,
    "OPEN_ROUNDS": FailedPrecondition,
    "NOT_SETTLED": RoundStateError,  # a correction is of a settled round
    "CORRECTED": FailedPrecondition,  # a round is corrected once
    "WINDOW": FailedPrecondition,  # the dealer's window of a correction closed
    "STAGED": FailedPrecondition,  # a meter with a staged change (docs/staged-changes.md)
    "WOUND_DOWN": FailedPrecondition,  # a meter winding down (docs/staged-changes.md)
    # Not now: the table's definition changed (its controller reads it again) or the group's
    # tables changed while a control read them; the same request again can succeed.
    "TABLE_CHANGED": StoreUnavailable,
    "RETRY": StoreUnavailable,
    "NOT_ENDED": FailedPrecondition,  # a gaming day not yet ended is not closed
    "VERSION": StoreUnavailable,  # a stored record of a schema version this release cannot read
}


class ScriptGateway:
    """Scripts, reads and their errors over one client (a :class:`Redis` or a
    :class:`RedisCluster`)."""

    def __init__(
        self,
        client: connection.Client,
        *,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        scripts: Scripts | None = None,
    ) -> None:
        self.client: Redis = client  # type: ignore[assignment]  # a cluster answers the same
        """The client. On a Redis Cluster it is a :class:`RedisCluster`, which answers the
        same commands, each on the shard of its key (:attr:`cluster` names it as such)."""
        self.cluster: RedisCluster | None = client if isinstance(client, RedisCluster) else None
        """The cluster client, on a Redis Cluster (``--redis-cluster``); else None."""
        self.scripts = scripts or Scripts.register(client)  # type: ignore[arg-type]
        """The registered scripts (``scripts``: others, for a benchmark of their builds)."""
        self._script_calls = ScriptCalls(client)  # type: ignore[arg-type]  # unused on a cluster
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self.replica_wait = ReplicaWait(wait_replicas, wait_timeout_ms)
        """The wait after every write (WAIT, or WAITAOF on Redis 7.2+: chosen from the
        server's version, :meth:`ReplicaWait.choose`)."""
        self.on_corrupt: Callable[[CorruptRecord], None] | None = None
        """Told of every stored record found corrupt (the server counts them in
        ``jackpot_corrupt_records_total``); each is also logged, once a minute per record."""

    async def close(self) -> None:
        """Close the connection pool (every node's, on a cluster)."""
        if self.cluster is not None:
            await cluster.close(self.cluster)
        else:
            await self._script_calls.close()
            await self.client.aclose()

    async def run(
        self,
        script: AsyncScript,
        keys_: Sequence[str],
        args: Sequence[Any],
        *,
        confirm: bool = True,
    ) -> Any:
        """Run one script; with ``wait_replicas``, WAIT on the same connection afterwards.

        WAIT only covers the writes of its own connection, so the script and the WAIT go in
        one pipeline. A write the replicas did not confirm raises :class:`NotConfirmed`
        carrying the script's reply: it is applied on the primary, and a retry replays it.
        """
        wait = bool(self.wait_replicas and confirm)
        client = self.client
        try:
            if isinstance(client, RedisCluster):  # on the shard of the keys' slot, then wait
                replica_wait = self.replica_wait if wait else None
                reply, acked = await cluster.run_script(client, script, keys_, args, replica_wait)
                if not wait:
                    return reply
            elif not wait:
                return await self._script_calls.evalsha(script, keys_, args)
            else:
                async with client.pipeline(transaction=False) as pipe:
                    await script(keys=list(keys_), args=list(args), client=pipe)
                    self.replica_wait.queue(pipe)  # WAIT, or WAITAOF on Redis 7.2+
                    reply, acked = await pipe.execute(raise_on_error=False)
            if isinstance(reply, Exception):
                raise reply
            if isinstance(acked, Exception):
                command = self.replica_wait.command
                self.replica_wait.failed(acked)
                raise NotConfirmed(
                    f"the write was applied but {command} failed ({acked}); retry the same "
                    "request (it is idempotent)",
                    reply,
                )
            shortfall = self.replica_wait.shortfall(acked)
            if shortfall is not None:
                raise NotConfirmed(
                    f"the write was {shortfall} in time; retry the same request (it is idempotent)",
                    reply,
                )
        except ResponseError as error:
            raise self.reported(script_error(error)) from None
        except _UNREACHABLE_ERRORS as error:
            raise self.unreachable(error) from error
        except RuntimeError as error:  # uvloop: a transport closed under the call (a reset)
            if not connection.closed_transport(error):
                raise
            raise self.unreachable(error) from error
        return reply

    async def apply(
        self,
        script: AsyncScript,
        keys_: Sequence[str],
        args: Sequence[Any],
        decode: Callable[[Any], Result],
    ) -> Result:
        """Run a phase script and decode its answer (also the one a NotConfirmed carries)."""
        try:
            return decode(await self.run(script, keys_, args))
        except NotConfirmed as error:
            error.reply = decode(error.reply)
            raise

    async def read(self, coroutine: Any) -> Any:
        try:
            return await coroutine
        except AttributeError as error:
            if self.cluster is None:
                raise
            # redis-py's cluster client can close a connection under a call when it
            # refreshes its map of slots (a failover); the call then fails inside redis-py.
            raise self.unreachable(error) from error
        except _UNREACHABLE_ERRORS as error:
            raise self.unreachable(error) from error
        except RuntimeError as error:  # uvloop: a transport closed under the call (a reset)
            if not connection.closed_transport(error):
                raise
            raise self.unreachable(error) from error
        except ResponseError as error:  # BUSY, LOADING, MISCONF, ...: as a script's would be
            raise script_error(error) from None

    def reported(self, error: Refusal) -> Refusal:
        """``error``; a :class:`CorruptRecord` is logged (once a minute per record) and
        counted (:attr:`on_corrupt`) first."""
        if isinstance(error, CorruptRecord):
            now = time.monotonic()
            name = f"{error.kind}|{error.name}|{error.key}"
            if now - _LAST_CORRUPT.get(name, -CORRUPT_LOG_EVERY_S) >= CORRUPT_LOG_EVERY_S:
                _LAST_CORRUPT[name] = now
                log.error("%s", error)
            if self.on_corrupt is not None:
                self.on_corrupt(error)
        return error

    def decoded(self, decode: Callable[[], Result]) -> Result:
        """``decode()``, reporting a :class:`CorruptRecord` it raises (:meth:`reported`)."""
        try:
            return decode()
        except CorruptRecord as error:
            raise self.reported(error) from None

    def each(
        self,
        decode: Callable[[Item], Result],
        stored: Iterable[Item],
        skipped: list[CorruptRecord] | None,
    ) -> list[Result]:
        """``decode`` of each of ``stored``, in order; one that is corrupt is reported
        (:meth:`reported`), added to ``skipped`` (when given) and left out: one bad record
        never hides the others."""
        decoded: list[Result] = []
        for item in stored:
            try:
                decoded.append(decode(item))
            except CorruptRecord as error:
                self.reported(error)
                if skipped is not None:
                    skipped.append(error)
        return decoded

    def unreachable(self, error: Exception) -> StoreUnavailable:
        """The error for a client (no host, port or password in it); the detail goes to the
        log, at most once every 5 seconds."""
        _warn_now_and_then("unreachable", "Redis did not serve a call: %s", error)
        if isinstance(error, AuthenticationError):
            return StoreUnavailable(
                "Redis refused the password; correct it (--redis-password-file or "
                "$JACKPOT_REDIS_PASSWORD)"
            )
        return StoreUnavailable(UNREACHABLE)


_LAST_WARNED: dict[str, float] = {}
WARN_EVERY_S = 5.0
_LAST_CORRUPT: dict[str, float] = {}
CORRUPT_LOG_EVERY_S = 60.0
"""A corrupt record is logged at most once a minute (a floor view polls every second)."""


def _warn_now_and_then(kind: str, message: str, *args: object) -> None:
    """Log a warning of ``kind`` at most once every :data:`WARN_EVERY_S` seconds: during an
    outage or a failover every call fails alike, and one line says it."""
    now = time.monotonic()
    if now - _LAST_WARNED.get(kind, -WARN_EVERY_S) >= WARN_EVERY_S:
        _LAST_WARNED[kind] = now
        log.warning(message, *args)


def script_error(error: ResponseError) -> JackpotError:
    """Map a script's "CODE message" error reply to its error class.

    Server states that pass (a replica after a failover, out of memory, busy, loading, too
    few replicas, a failed save) are :class:`StoreUnavailable`, so the caller retries;
    anything else unexpected is a plain :class:`JackpotError` (INTERNAL, detail logged).
    """
    text = _SCRIPT_LOCATION.sub("", str(error))
    code, _, message = text.partition(" ")
    code = _TRANSIENT_ERRORS.get(type(error), code)
    if code in _TRANSIENT_CODES:
        _warn_now_and_then(code, "Redis answered %s: %s", code, text)
        return StoreUnavailable(
            f"Redis cannot serve this now ({code}); retry the same request (it is idempotent)"
        )
    if code == "CORRUPT":  # _lib.lua refuse_corrupt: kind TAB name TAB key TAB detail
        parts = message.split("\t", 3)
        if len(parts) == 4:
            return CorruptRecord(*parts)
        return CorruptRecord("record", "", "", message)
    error_class = _SCRIPT_ERRORS.get(code)
    if error_class is None:  # a fault to look into: the detail is logged, not sent
        log.error("Redis refused a call: %s", text)
        return JackpotError(f"Redis refused the call ({code[:20]}); see the controller log")
    return error_class(message)

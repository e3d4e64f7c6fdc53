"""The state of record in Redis: one atomic script per transition, over one link group's keys.

:class:`RedisStore` is the only code that talks to Redis. Each write method runs exactly one
script from ``scripts/`` (validation, money arithmetic, journal entries and the stored
answer, all in one atomic step); when ``wait_replicas`` is set it then waits for that many
replicas to confirm the write before answering, so that what is acknowledged survives a
failover. A refused script raises the matching :mod:`jackpot.errors` class and has
changed nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
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

from controller.domain.config import MUST_HIT_BY, LinkGroupConfig, MeterConfig, TableConfig
from controller.domain.digests import void_fingerprint
from controller.domain.mystery import new_seed as mystery_seed
from controller.domain.payout_compliance import PaymentCompliance
from controller.domain.records import (
    Checkpoint,
    Irregularity,
    Jackpot,
    JournalEntry,
    LinkGroupSnapshot,
    LinkGroupState,
    Maintenance,
    MeterState,
)
from controller.domain.rounds import Payout, Wager
from controller.store import cluster, codec, connection, keys
from controller.store.controls import Controls
from controller.store.durability import ReplicaWait
from controller.store.locked_rounds import LockedRound, LockedRounds
from controller.store.script_calls import ScriptCalls
from controller.store.scripts import Scripts
from jackpot.epochs import NO_POSITION, Epoch, JournalPosition, claimed_seq
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
from jackpot.irregularities import (
    CHIP_COUNT_SECTION,
    COUNTED_WAGERS,
    IrregularityRule,
    irregularity_reason,
)
from jackpot.kinds import AwardKind, IrregularityEffect, IrregularityKind
from jackpot.results import (
    ChipCountResult,
    IrregularityResult,
    LockoutResult,
    MeterValue,
    SeatOutcome,
    SettleResult,
    VoidResult,
)

log = logging.getLogger("controller.store")

Result = TypeVar("Result")
Item = TypeVar("Item")
Refusal = TypeVar("Refusal", bound=JackpotError)

DEFAULT_ROUND_RETENTION_SECONDS = 7 * 24 * 3600
DEFAULT_MAX_ROUND_STEP = 1000
"""How far above a table's last locked-out round a new round id may be."""
DEFAULT_MAX_CONNECTIONS = 64
"""Redis connections of one controller; a call waits for a free one (bounded by
``pool_timeout_s`` and by the call's own deadline) rather than opening more."""
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

SNAPSHOT_HASHES = (
    "info",
    "checkpoint",
    "counters",
    "jackpots",
    "irregularities",
    "maintenance",
    "adjustments",
    "retired_meters",
    "days_closed",
    "corrections",
)
"""The link group's hashes an export carries and a restore writes back whole: each is the
name of the snapshot's field and of the :class:`keys.LinkGroupKeys` property."""
SNAPSHOT_SETS = ("pending", "pending_adjustments")
"""The link group's sets an export carries (as lists) and a restore writes back whole."""
DURABLE_WAIT_MS = 100
"""How long :meth:`RedisStore.durable_epoch` waits for the replicas (the refresh asks again
2 s later)."""

MAX_REBASE_ROUND_ID = 2**52
"""The highest round an operator may rebase a table to (far below the 2**53 the scripts
compare exactly, so a rebased table always has room to play)."""


@dataclass(frozen=True, slots=True)
class Resolution:
    """A supervisor's resolution of a held round: who (certificate identity and its SHA-256)
    and why."""

    supervisor: str
    supervisor_cert: str
    note: str


@dataclass(frozen=True, slots=True)
class Persistence:
    """How durable an acknowledged write is on this Redis."""

    redis_version: str
    aof_enabled: bool | None  # None: the server does not let us read its configuration
    appendfsync: str
    role: str
    connected_replicas: int


@dataclass(frozen=True, slots=True)
class _PhaseKeys:
    """What a table's lockout and settle script calls name besides the round (see
    :meth:`RedisStore._phase_keys`): their KEYS after the round's, in order, and ARGV's meter
    ids JSON."""

    table: TableConfig
    group: keys.LinkGroupKeys
    lockout: tuple[str, ...]
    settle: tuple[str, ...]
    meter_ids_json: str


class RedisStore:
    """Meters, rounds, jackpots and the journal in Redis.

    ``round_retention_seconds`` is how long a round's record (and so its stored answers for
    retries) is kept; a round id is accepted only above the table's last one, so a retry
    that arrives after its record expired is refused, never applied twice.
    """

    def __init__(
        self,
        client: connection.Client,
        *,
        round_retention_seconds: int = DEFAULT_ROUND_RETENTION_SECONDS,
        max_round_step: int = DEFAULT_MAX_ROUND_STEP,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
    ) -> None:
        self._client = client
        self._cluster: RedisCluster | None = client if isinstance(client, RedisCluster) else None
        self._scripts = Scripts.register(client)  # type: ignore[arg-type]
        self._script_calls = ScriptCalls(client)  # type: ignore[arg-type]  # unused on a cluster
        self._round_retention_seconds = round_retention_seconds
        self.max_round_step = max_round_step
        self._wait_replicas = wait_replicas
        self._wait_timeout_ms = wait_timeout_ms
        self._replica_wait = ReplicaWait(wait_replicas, wait_timeout_ms)
        self._tables: dict[str, TableConfig] = {}
        self._table_revs: dict[str, int] = {}  # the revision of each cached definition
        self._locked = LockedRounds()
        self._phase_keys_by_table: dict[str, _PhaseKeys] = {}
        self.controls = Controls(self)
        """Maintenance, meter and table changes, adjustments (:mod:`controller.store.controls`)."""
        self.on_corrupt: Callable[[CorruptRecord], None] | None = None
        """Told of every stored record found corrupt (the server counts them in
        ``jackpot_corrupt_records_total``); each is also logged, once a minute per record."""

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        password: str | None = None,
        sentinel_password: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        pool_timeout_s: float = 5.0,
        **options: Any,
    ) -> RedisStore:
        """A store on a new client for ``url`` (``redis://host:port/db``, ``rediss://`` for
        TLS, ``sentinel://`` for the primary Redis Sentinel names: :mod:`connection`).
        ``password`` (from a file or the environment) overrides one in the URL. At most
        ``max_connections`` are opened; a call waits up to ``pool_timeout_s`` for one."""
        client = connection.open_client(
            url,
            password=password,
            sentinel_password=sentinel_password,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
        )
        return cls(client, **options)  # the client owns (and closes) the pool

    @property
    def client(self) -> Redis:
        """The Redis client (for health checks and the audit). On a Redis Cluster it is a
        :class:`RedisCluster`, which answers the same commands, each on the shard of its key
        (:attr:`cluster` names it as such)."""
        return self._client  # type: ignore[return-value]

    @property
    def cluster(self) -> RedisCluster | None:
        """The cluster client, on a Redis Cluster (``--redis-cluster``); else None."""
        return self._cluster

    @property
    def on_cluster(self) -> bool:
        """True when the store is on a Redis Cluster (``--redis-cluster``)."""
        return self._cluster is not None

    async def close(self) -> None:
        """Close the connection pool (every node's, on a cluster)."""
        if self._cluster is not None:
            await cluster.close(self._cluster)
        else:
            await self._script_calls.close()
            await self._client.aclose()

    async def persistence(self) -> Persistence:
        """Read the durability settings of the server (AOF, fsync policy, replication); on a
        cluster, of every primary, answering the weakest (the oldest version, AOF on only
        if on everywhere, one fsync policy or ``mixed``, the fewest replicas).
        :class:`StoreUnavailable` when Redis does not answer them (unreachable, BUSY, ...)."""
        try:
            if self._cluster is None:
                readings = [await _server_persistence(self._client, {})]
            else:
                readings = [
                    await _server_persistence(self._cluster, {"target_nodes": node})
                    for node in await cluster.primaries(self._cluster)
                ]
        except _UNREACHABLE_ERRORS as error:
            raise self._unreachable(error) from error
        except ResponseError as error:  # BUSY, LOADING: unavailable, as for any other read
            raise _script_error(error) from None
        aof = {reading.aof_enabled for reading in readings}
        weakest = min(readings, key=lambda reading: _version_key(reading.redis_version))
        aof_enabled = False if False in aof else (None if None in aof else True)
        fsyncs = sorted({reading.appendfsync for reading in readings})
        self._replica_wait.choose(weakest.redis_version, aof_enabled)
        return Persistence(
            redis_version=weakest.redis_version,
            aof_enabled=aof_enabled,
            appendfsync=fsyncs[0] if len(fsyncs) == 1 else "mixed (" + ", ".join(fsyncs) + ")",
            role=min(reading.role for reading in readings),  # "master" < "slave"
            connected_replicas=min(reading.connected_replicas for reading in readings),
        )

    # ---------------------------------------------------------------- running scripts

    async def _run(
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
        wait = bool(self._wait_replicas and confirm)
        client = self._client
        try:
            if isinstance(client, RedisCluster):  # on the shard of the keys' slot, then wait
                replica_wait = self._replica_wait if wait else None
                reply, acked = await cluster.run_script(client, script, keys_, args, replica_wait)
                if not wait:
                    return reply
            elif not wait:
                return await self._script_calls.evalsha(script, keys_, args)
            else:
                async with client.pipeline(transaction=False) as pipe:
                    await script(keys=list(keys_), args=list(args), client=pipe)
                    self._replica_wait.queue(pipe)  # WAIT, or WAITAOF on Redis 7.2+
                    reply, acked = await pipe.execute(raise_on_error=False)
            if isinstance(reply, Exception):
                raise reply
            if isinstance(acked, Exception):
                command = self._replica_wait.command
                self._replica_wait.failed(acked)
                raise NotConfirmed(
                    f"the write was applied but {command} failed ({acked}); retry the same "
                    "request (it is idempotent)",
                    reply,
                )
            shortfall = self._replica_wait.shortfall(acked)
            if shortfall is not None:
                raise NotConfirmed(
                    f"the write was {shortfall} in time; retry the same request (it is idempotent)",
                    reply,
                )
        except ResponseError as error:
            raise self._reported(_script_error(error)) from None
        except _UNREACHABLE_ERRORS as error:
            raise self._unreachable(error) from error
        except RuntimeError as error:  # uvloop: a transport closed under the call (a reset)
            if not connection.closed_transport(error):
                raise
            raise self._unreachable(error) from error
        return reply

    async def _apply(
        self,
        script: AsyncScript,
        keys_: Sequence[str],
        args: Sequence[Any],
        decode: Callable[[Any], Result],
    ) -> Result:
        """Run a phase script and decode its answer (also the one a NotConfirmed carries)."""
        try:
            return decode(await self._run(script, keys_, args))
        except NotConfirmed as error:
            error.reply = decode(error.reply)
            raise

    async def _read(self, coroutine: Any) -> Any:
        try:
            return await coroutine
        except AttributeError as error:
            if self._cluster is None:
                raise
            # redis-py's cluster client can close a connection under a call when it
            # refreshes its map of slots (a failover); the call then fails inside redis-py.
            raise self._unreachable(error) from error
        except _UNREACHABLE_ERRORS as error:
            raise self._unreachable(error) from error
        except RuntimeError as error:  # uvloop: a transport closed under the call (a reset)
            if not connection.closed_transport(error):
                raise
            raise self._unreachable(error) from error
        except ResponseError as error:  # BUSY, LOADING, MISCONF, ...: as a script's would be
            raise _script_error(error) from None

    def _reported(self, error: Refusal) -> Refusal:
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

    def _decoded(self, decode: Callable[[], Result]) -> Result:
        """``decode()``, reporting a :class:`CorruptRecord` it raises (:meth:`_reported`)."""
        try:
            return decode()
        except CorruptRecord as error:
            raise self._reported(error) from None

    def _each(
        self,
        decode: Callable[[Item], Result],
        stored: Iterable[Item],
        skipped: list[CorruptRecord] | None,
    ) -> list[Result]:
        """``decode`` of each of ``stored``, in order; one that is corrupt is reported
        (:meth:`_reported`), added to ``skipped`` (when given) and left out: one bad record
        never hides the others."""
        decoded: list[Result] = []
        for item in stored:
            try:
                decoded.append(decode(item))
            except CorruptRecord as error:
                self._reported(error)
                if skipped is not None:
                    skipped.append(error)
        return decoded

    def _unreachable(self, error: Exception) -> StoreUnavailable:
        """The error for a client (no host, port or password in it); the detail goes to the
        log, at most once every 5 seconds."""
        _warn_now_and_then("unreachable", "Redis did not serve a call: %s", error)
        if isinstance(error, AuthenticationError):
            return StoreUnavailable(
                "Redis refused the password; correct it (--redis-password-file or "
                "$JACKPOT_REDIS_PASSWORD)"
            )
        return StoreUnavailable(UNREACHABLE)

    # ---------------------------------------------------------------- configuration

    async def create_link_group(self, config: LinkGroupConfig, *, actor: str) -> LinkGroupState:
        """Create a link group, or return it if it exists with the same description.

        ``actor`` (who asked: a certificate identity) is journaled with every configuration
        change."""
        group = keys.LinkGroupKeys(config.link_group_id)
        if await self._read(self._client.sismember(keys.LINK_GROUPS, config.link_group_id)):
            if not await self._read(self._client.exists(group.info)):
                raise LinkGroupStopped(
                    f"link group {config.link_group_id} existed but its state is missing from "
                    'Redis; it is never created again: restore it (RUNBOOK: "Redis lost its '
                    'data")'
                )
        await self._run(
            self._scripts.create_link_group,
            [group.info, group.journal, group.seq, group.epoch],
            [config.link_group_id, config.description, actor, new_epoch_id()],
        )
        await self.ensure_installation(actor)
        await self._read(self._client.sadd(keys.LINK_GROUPS, config.link_group_id))
        return await self.get_link_group(config.link_group_id)

    async def get_link_group(self, link_group_id: str) -> LinkGroupState:
        """A link group with its meters and tables; :class:`NotFound` if it does not exist."""
        group = keys.LinkGroupKeys(link_group_id)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.hmget(group.info, "v", "description")
            # SMEMBERS without redis-py's ``keys`` option, which its cluster transactions
            # hand to SMEMBERS's reply parser, which takes none (redis-py 8.1).
            pipe.execute_command("SMEMBERS", group.meters)
            pipe.execute_command("SMEMBERS", group.tables)
            pipe.hmget(group.epoch, "id", "stopped")
            pipe.get(group.seq)
            pipe.hgetall(group.maintenance)
            replies = await self._read(pipe.execute())
        (version, description), meters, tables, epoch, seq, maintenance = replies
        if description is None:
            raise NotFound(f"link group {link_group_id} does not exist")

        def decode_maintenance() -> Maintenance:
            with codec.reading("link group", link_group_id, group.maintenance):
                return codec.maintenance(maintenance)

        def decode_seq() -> int:
            with codec.reading("link group", link_group_id, group.seq):
                return codec.integer("the journal's sequence number", seq or 0)

        return LinkGroupState(
            link_group_id,
            codec.link_group_description(link_group_id, {"v": version, "description": description}),
            tuple(sorted(meters)),
            tuple(sorted(tables)),
            JournalPosition(epoch[0] or "", self._decoded(decode_seq)),
            epoch[1] or "",
            self._decoded(decode_maintenance),
        )

    async def _group_ids(self, link_group_id: str = "") -> list[str]:
        """``[link_group_id]``, or every link group's id (sorted) when it is empty."""
        if link_group_id:
            return [link_group_id]
        return sorted(await self._read(self._client.smembers(keys.LINK_GROUPS)))

    async def list_link_groups(
        self, *, skipped: list[CorruptRecord] | None = None
    ) -> list[LinkGroupState]:
        """Every link group, by id; one whose records do not read is left out, reported and
        added to ``skipped``."""
        found: list[LinkGroupState] = []
        for group_id in await self._group_ids():
            try:
                found.append(await self.get_link_group(group_id))
            except CorruptRecord as error:  # reported by get_link_group
                if skipped is not None:
                    skipped.append(error)
        return found

    async def create_meter(self, config: MeterConfig, *, actor: str) -> MeterState:
        """Create a meter at its reset amount (journaled as operator seed); idempotent."""
        group = keys.LinkGroupKeys(config.link_group_id)
        async with self._claim(keys.METER_INDEX, config.meter_id, config.link_group_id, "meter"):
            await self._run(
                self._scripts.create_meter,
                [
                    group.info,
                    group.meter(config.meter_id),
                    group.meters,
                    group.journal,
                    group.seq,
                    group.retired_meters,
                    group.mystery(config.meter_id),
                ],
                [
                    config.meter_id,
                    config.link_group_id,
                    config.game,
                    config.reset_cents,
                    config.rate_ppm,
                    config.reserve_rate_ppm,
                    config.ceiling_cents,
                    actor,
                    config.kind,
                    config.must_hit_by_cents,
                    mystery_seed(),
                ],
            )
        return await self.get_meter(config.meter_id)

    @contextlib.asynccontextmanager
    async def _claim(
        self, index: str, item_id: str, link_group_id: str, what: str
    ) -> AsyncIterator[None]:
        """Claim ``item_id`` for ``link_group_id`` in a global index, before creating it.

        HSETNX makes the claim atomic, so two concurrent creates in two link groups cannot
        both succeed; a claim made here is released if the creation is refused.
        """
        claimed = await self._read(self._client.hsetnx(index, item_id, link_group_id))
        if not claimed:
            owner = await self._read(self._client.hget(index, item_id))
            if owner != link_group_id:
                raise AlreadyExists(f"{what} {item_id} exists in link group {owner}")
        try:
            yield
        except StoreUnavailable:
            raise  # the creation may have been applied: keep the claim, a retry completes it
        except JackpotError:
            if claimed:  # refused: nothing was created, so the id is free again
                await self._read(self._client.hdel(index, item_id))
            raise

    async def _meter_link_group(self, meter_id: str) -> str:
        link_group_id = await self._read(self._client.hget(keys.METER_INDEX, meter_id))
        if link_group_id is None:
            raise NotFound(f"meter {meter_id} does not exist")
        return str(link_group_id)

    async def get_meter(self, meter_id: str) -> MeterState:
        """A meter's parameters, values and counters; :class:`NotFound` if unknown."""
        group = keys.LinkGroupKeys(await self._meter_link_group(meter_id))
        key = group.meter(meter_id)
        fields = await self._read(self._client.hgetall(key))
        if not fields:
            if await self._read(self._client.hexists(group.retired_meters, meter_id)):
                raise NotFound(f"meter {meter_id} was retired")
            raise NotFound(f"meter {meter_id} does not exist")
        return self._decoded(lambda: codec.meter_state(fields, key=key, name=meter_id))

    async def list_meters(
        self, link_group_id: str = "", *, skipped: list[CorruptRecord] | None = None
    ) -> list[MeterState]:
        """The meters of one link group, or of all of them, ordered by id; a corrupt one is
        left out, reported and added to ``skipped`` (:meth:`_each`)."""
        groups = await self._group_ids(link_group_id)
        meters: list[MeterState] = []
        for group_id in groups:
            group = keys.LinkGroupKeys(group_id)
            ids = sorted(await self._read(self._client.smembers(group.meters)))
            async with self._client.pipeline(transaction=False) as pipe:
                for meter_id in ids:
                    pipe.hgetall(group.meter(meter_id))
                rows = await self._read(pipe.execute())
            meters += self._each(
                lambda row: codec.meter_state(row[2], key=row[1], name=row[0]),
                ((i, group.meter(i), row) for i, row in zip(ids, rows, strict=True)),
                skipped,
            )
        return meters

    async def meter_values(
        self, link_group_id: str, *, skipped: list[CorruptRecord] | None = None
    ) -> tuple[MeterValue, ...]:
        """The current value of every meter of a link group, by meter id (two round trips);
        a corrupt one is left out, reported and added to ``skipped`` (the signs of the
        others go on)."""
        group = keys.LinkGroupKeys(link_group_id)
        ids = sorted(await self._read(self._client.smembers(group.meters)))
        async with self._client.pipeline(transaction=False) as pipe:
            for meter_id in ids:
                pipe.hmget(group.meter(meter_id), "v", "value_microcents")
            values = await self._read(pipe.execute())
        return tuple(
            self._each(
                lambda row: codec.meter_value(
                    row[0], {"v": row[1][0], "value_microcents": row[1][1]}, key=group.meter(row[0])
                ),
                (
                    (meter_id, fields)
                    for meter_id, fields in zip(ids, values, strict=True)
                    if fields[1] is not None
                ),
                skipped,
            )
        )

    async def register_table(self, table: TableConfig, *, actor: str) -> TableConfig:
        """Register a table in its meters' link group; idempotent for the same definition."""
        for meter_id in table.meter_ids:
            meter_group = await self._meter_link_group(meter_id)
            if meter_group != table.link_group_id:
                raise InvalidConfiguration(
                    f"meter {meter_id} is in link group {meter_group}, not "
                    f"{table.link_group_id}; all of a table's meters are in its link group"
                )
        group = keys.LinkGroupKeys(table.link_group_id)
        await self._check_percent_meters(group, table)
        key = group.table(table.table_id)
        stored, rev = await self._read(self._client.hmget(key, "config", "rev"))
        if stored is not None and self._stored_table(table.table_id, key, stored) == table:
            # The same definition (read through the codec: of any schema version it reads).
            self._remember_table(table, self._table_int(table.table_id, key, "rev", rev))
            return table
        async with self._claim(keys.TABLE_INDEX, table.table_id, table.link_group_id, "table"):
            await self._run(
                self._scripts.register_table,
                [
                    group.table(table.table_id),
                    group.tables,
                    group.journal,
                    group.seq,
                    *(group.meter(meter_id) for meter_id in table.meter_ids),
                ],
                [
                    table.table_id,
                    codec.table_json(table),
                    json.dumps(table.meter_ids),
                    table.game,
                    actor,
                ],
            )
        self._remember_table(table, 0)
        return table

    async def _check_percent_meters(self, group: keys.LinkGroupKeys, table: TableConfig) -> None:
        """Refuse a "P% of meter" line paying from a must-hit-by meter (it pays its hit only)."""
        for offer in table.wagers:
            for line, rule in offer.paytable.lines:
                if rule.kind is not AwardKind.PERCENT_OF_METER:
                    continue
                meter_id = offer.meter_of(rule)
                kind = await self._read(self._client.hget(group.meter(meter_id), "kind"))
                if kind == MUST_HIT_BY:
                    raise InvalidConfiguration(
                        f"table {table.table_id} {offer.wager} wager: {line} pays {rule.text} "
                        f"from must-hit-by meter {meter_id}, which pays only its mystery hit"
                    )

    def _remember_table(self, table: TableConfig, rev: int) -> None:
        self._tables[table.table_id] = table
        self._table_revs[table.table_id] = rev

    def forget_table(self, table_id: str) -> None:
        """Drop a cached definition: the next :meth:`get_table` reads it from Redis."""
        self._tables.pop(table_id, None)
        self._table_revs.pop(table_id, None)
        self._phase_keys_by_table.pop(table_id, None)

    async def get_table(self, table_id: str) -> TableConfig:
        """A registered table; :class:`NotFound` (naming a retired one). Cached with its
        revision: an operator's update (in maintenance) raises the revision in Redis, and the
        next lockout with the cached one is refused and forgets it (so do a settlement and a
        void of a round locked out with another revision, see :meth:`_check_table_rev`)."""
        cached = self._tables.get(table_id)
        if cached is not None:
            return cached
        link_group_id = await self._read(self._client.hget(keys.TABLE_INDEX, table_id))
        if link_group_id is None:
            raise NotFound(f"table {table_id} is not registered")
        group = keys.LinkGroupKeys(link_group_id)
        key = group.table(table_id)
        raw, rev, retired = await self._read(
            self._client.hmget(key, "config", "rev", "retired_seq")
        )
        if raw is None:
            if retired is not None:
                raise NotFound(f"table {table_id} was retired (journal #{retired})")
            raise NotFound(f"table {table_id} is not registered")
        table = self._stored_table(table_id, key, raw)
        self._remember_table(table, self._table_int(table_id, key, "rev", rev))
        return table

    def _stored_table(self, table_id: str, key: str, raw: str) -> TableConfig:
        """A table's stored definition (a corrupt one reported and raised)."""
        return self._decoded(lambda: codec.table_config(raw, key=key, name=table_id))

    def _table_int(self, table_id: str, key: str, field: str, value: str | None) -> int:
        """An integer field of a table's record (0: missing; a corrupt one reported and
        raised)."""

        def decode() -> int:
            with codec.reading("table", table_id, key):
                return codec.integer(field, value) if value is not None else 0

        return self._decoded(decode)

    async def _check_table_rev(self, table: TableConfig, round_id: int) -> None:
        """Refuse (retryable) a round locked out with another revision of the table than the
        one cached here: the definition changed since this process read it (forgotten now,
        so the retry reads it again)."""
        _, round_key = self._round_keys(table, round_id)
        rev = await self._read(self._client.hget(round_key, "table_rev"))
        if rev is not None and self._round_int(round_key, table, round_id, "table_rev", rev) != (
            self._table_revs.get(table.table_id, 0)
        ):
            self.forget_table(table.table_id)
            raise StoreUnavailable(
                f"the definition of table {table.table_id} was changed by an operator; retry "
                "the same request"
            )

    def _round_int(
        self, key: str, table: TableConfig, round_id: int, field: str, value: str
    ) -> int:
        """An integer field of a round's record (a corrupt one reported and raised)."""

        def decode() -> int:
            with codec.reading("round", f"{round_id} of table {table.table_id}", key):
                return codec.integer(field, value)

        return self._decoded(decode)

    async def last_round(self, table: TableConfig) -> int:
        """The table's last locked-out round id (0: none yet)."""
        group = keys.LinkGroupKeys(table.link_group_id)
        key = group.table(table.table_id)
        last = await self._read(self._client.hget(key, "last_round"))
        return self._table_int(table.table_id, key, "last_round", last)

    async def rebase_table_rounds(
        self, table: TableConfig, last_round_id: int, *, reason: str, actor: str
    ) -> tuple[int, int]:
        """Move the table's last round forward to ``last_round_id`` (journaled with ``actor``
        and ``reason``); the same rebase again changes nothing. Returns (before, after)."""
        group = keys.LinkGroupKeys(table.link_group_id)
        before, after, _ = await self._run(
            self._scripts.rebase_table_rounds,
            [group.table(table.table_id), group.journal, group.seq],
            [table.table_id, last_round_id, reason, actor, MAX_REBASE_ROUND_ID],
        )
        return int(before), int(after)

    async def list_tables(
        self, link_group_id: str = "", *, skipped: list[CorruptRecord] | None = None
    ) -> list[TableConfig]:
        """The tables of one link group, or of all of them, ordered by id; a corrupt one is
        left out, reported and added to ``skipped``."""
        ids: list[str] = []
        for group_id in await self._group_ids(link_group_id):
            ids += await self._read(self._client.smembers(keys.LinkGroupKeys(group_id).tables))
        found: list[TableConfig] = []
        for table_id in sorted(ids):
            try:
                found.append(await self.get_table(table_id))
            except CorruptRecord as error:  # reported by get_table
                if skipped is not None:
                    skipped.append(error)
        return found

    # ---------------------------------------------------------------- epochs

    async def installation(self) -> dict[str, str] | None:
        """This installation's record (id, created_at_ms, by), or None: Redis holds no
        jackpot state (a new installation, or a Redis that lost its data)."""
        record: dict[str, str] = await self._read(self._client.hgetall(keys.INSTALLATION))
        return record or None

    async def ensure_installation(self, actor: str) -> dict[str, str]:
        """Create the installation record if there is none (HSETNX: created once)."""
        now_ms = int(time.time() * 1000)
        if await self._read(self._client.hsetnx(keys.INSTALLATION, "id", secrets.token_hex(8))):
            await self._read(
                self._client.hset(keys.INSTALLATION, mapping={"created_at_ms": now_ms, "by": actor})
            )
            log.warning("installation record created by %s", actor)
        record = await self.installation()
        assert record is not None  # just written, or there already
        return record

    async def link_group_ids(self) -> list[str]:
        """Every link group this Redis names (sorted), whether or not its state is there."""
        return sorted(await self._group_ids())

    async def every_link_group_id(self) -> list[str]:
        """Every link group the index names or a shard holds (sorted): what a report reads,
        so that a link group whose index entry was lost (the index is one key, on one shard
        of a cluster) is still read."""
        held = await self.link_groups_by_shard()
        return sorted(set(await self.link_group_ids()).union(*held.values()))

    async def link_groups_by_shard(self) -> dict[str, list[str]]:
        """Per shard, the link groups whose state it holds (sorted), found on the shard
        itself (SCAN for their description records), not from the global index: on a
        cluster each primary ``host:port``; on one server, ``""``."""
        pattern = keys.LinkGroupKeys("*").info
        head, _, tail = pattern.partition("*")
        shards: dict[str, list[str]] = {}
        client = self._client
        if isinstance(client, RedisCluster):
            for node in await self._read(cluster.primaries(client)):
                found = await self._read(cluster.scan(node, pattern))
                shards[node.name] = sorted(key[len(head) : -len(tail)] for key in found)
        else:

            async def matching() -> list[str]:
                return [key async for key in client.scan_iter(match=pattern, count=1000)]

            found = await self._read(matching())
            shards[""] = sorted(key[len(head) : -len(tail)] for key in found)
        return shards

    async def durable_epoch(self, link_group_id: str) -> tuple[Epoch | None, int, bool]:
        """:meth:`epoch`, read atomically and followed on the same connection by the wait of
        ``--wait-replicas`` (at most :data:`DURABLE_WAIT_MS`); the flag is True when that
        many replicas confirmed it (always, without ``--wait-replicas``: the primary's AOF is
        the policy). A position that is not confirmed may be gone after a failover to a
        replica without being lost: its writes were never acknowledged."""
        group = keys.LinkGroupKeys(link_group_id)
        wait = dataclasses.replace(
            self._replica_wait, timeout_ms=min(self._wait_timeout_ms, DURABLE_WAIT_MS)
        )
        client = self._client
        if isinstance(client, RedisCluster):
            replies = list(
                await self._read(
                    cluster.run_script(
                        client,
                        self._scripts.read_position,
                        [group.epoch, group.seq],
                        [],
                        wait if self._wait_replicas else None,
                    )
                )
            )
        else:
            async with client.pipeline(transaction=False) as pipe:
                await self._scripts.read_position(keys=[group.epoch, group.seq], client=pipe)
                if self._wait_replicas:
                    wait.queue(pipe)
                replies = await self._read(pipe.execute(raise_on_error=False))
        if isinstance(replies[0], Exception):
            raise _script_error(replies[0]) if isinstance(replies[0], ResponseError) else replies[0]
        (epoch_id, lineage, stopped), seq = replies[0]
        durable = not self._wait_replicas or (
            not isinstance(replies[-1], Exception) and wait.shortfall(replies[-1]) is None
        )
        if epoch_id is None:
            return None, int(seq or 0), durable
        return Epoch.from_fields(epoch_id, lineage or "", stopped or ""), int(seq or 0), durable

    async def check_position(
        self, link_group_id: str, who: str, known: JournalPosition
    ) -> JournalPosition:
        """Judge ``who``'s last acknowledged position against Redis (a table ahead stops the
        group, :class:`LinkGroupStopped`); answer where the journal stands."""
        group = keys.LinkGroupKeys(link_group_id)
        epoch_id, seq = await self._run(
            self._scripts.check_position,
            [group.epoch, group.journal, group.seq],
            [who, known.epoch, claimed_seq(known)],
        )
        return JournalPosition(epoch_id, int(seq))

    async def stop_link_group(self, link_group_id: str, epoch_id: str, reason: str) -> str:
        """Stop the link group (journaled) if its epoch is still ``epoch_id``; answer why it
        is stopped ("" if the epoch had changed meanwhile and it is not stopped)."""
        group = keys.LinkGroupKeys(link_group_id)
        return str(
            await self._run(
                self._scripts.stop_link_group,
                [group.epoch, group.journal, group.seq],
                [reason, epoch_id],
            )
        )

    async def resume_link_group(
        self, link_group_id: str, *, epoch: str, reason: str, actor: str, actor_cert: str
    ) -> JournalPosition:
        """Resume a stopped link group, still in the ``epoch`` the operator reviewed, in a
        new epoch (journaled with who and why)."""
        group = keys.LinkGroupKeys(link_group_id)
        epoch_id, seq = await self._run(
            self._scripts.resume_link_group,
            [group.epoch, group.journal, group.seq],
            [link_group_id, new_epoch_id(), actor, actor_cert, reason, epoch],
        )
        return JournalPosition(epoch_id, int(seq))

    # ---------------------------------------------------------------- export, trim, restore

    async def export_snapshot(self, link_group_id: str, attempts: int = 5) -> dict[str, Any]:
        """Everything of a link group a restore needs besides the journal, at one instant
        (one read-only script; read again if a meter or table was added meanwhile), with the
        installation record: every per-group key that is state (``export_snapshot.lua``
        names them), never a must-hit-by meter's secret. Amounts stay the decimal strings
        Redis holds."""
        group = keys.LinkGroupKeys(link_group_id)
        for _ in range(attempts):
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.smembers(group.meters)
                pipe.smembers(group.tables)
                pipe.smembers(group.open_rounds)
                pipe.hgetall(keys.TABLE_INDEX)
                meter_set, table_set, open_set, table_index = await self._read(pipe.execute())
            meter_ids, table_ids, open_ids = sorted(meter_set), sorted(table_set), sorted(open_set)
            other_table_ids = sorted(
                table_id
                for table_id, owner in table_index.items()
                if owner == link_group_id and table_id not in table_set
            )
            round_keys = [group.round(*_split_round(name)) for name in open_ids]
            raw = await self._run(
                self._scripts.export_snapshot,
                [
                    group.info,
                    group.epoch,
                    group.seq,
                    group.checkpoint,
                    group.meters,
                    group.tables,
                    group.jackpots,
                    group.pending,
                    group.counters,
                    group.open_rounds,
                    group.irregularities,
                    group.maintenance,
                    group.adjustments,
                    group.pending_adjustments,
                    group.retired_meters,
                    group.days_closed,
                    group.corrections,
                    *(group.meter(meter_id) for meter_id in meter_ids),
                    *(group.table(table_id) for table_id in table_ids),
                    *round_keys,
                    *(group.table(table_id) for table_id in other_table_ids),
                ],
                [
                    json.dumps(meter_ids),
                    json.dumps(table_ids),
                    json.dumps(open_ids),
                    json.dumps(other_table_ids),
                ],
                confirm=False,
            )
            snapshot: dict[str, Any] = json.loads(raw)
            counts = (snapshot["meter_count"], snapshot["table_count"], snapshot["open_count"])
            if counts == (len(meter_ids), len(table_ids), len(open_ids)):
                if not snapshot["info"]:
                    raise NotFound(f"link group {link_group_id} does not exist")
                snapshot["link_group_id"] = link_group_id
                snapshot["installation"] = await self.installation() or {}
                for name in (
                    "meters",
                    "tables",
                    "epoch",
                    "rounds",
                    "retired_tables",
                    *SNAPSHOT_HASHES,
                ):
                    if not isinstance(snapshot.get(name), dict):  # cjson: {} is []
                        snapshot[name] = {}
                for name in SNAPSHOT_SETS:
                    if not isinstance(snapshot.get(name), list):
                        snapshot[name] = []
                return snapshot
        raise StoreUnavailable(f"link group {link_group_id} kept changing; export it again")

    async def mark_exported(self, link_group_id: str, seq: int) -> int:
        """Record that the journal up to ``seq`` is exported; answer the exported seq."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.mark_exported,
                [group.checkpoint, group.seq],
                [seq, int(time.time() * 1000)],
            )
        )

    async def close_day(self, link_group_id: str, day: str, fields: Sequence[Any]) -> int:
        """Journal a gaming day's statement once (``close_day.lua``: ``fields`` are its
        ARGV from the digest on); answer its ``day_closed`` entry's seq. The same digest
        again answers the same seq; another digest for a closed day is refused."""
        group = keys.LinkGroupKeys(link_group_id)
        reply = await self._run(
            self._scripts.close_day,
            [group.days_closed, group.journal, group.seq],
            [day, *fields],
        )
        return int(reply)

    async def days_closed(self, link_group_id: str) -> dict[str, tuple[int, str]]:
        """The link group's closed gaming days: day -> (seq of its entry, digest)."""
        group = keys.LinkGroupKeys(link_group_id)
        held = await self._read(self._client.hgetall(group.days_closed))
        closed = {}
        for day, value in held.items():
            seq, _, digest = str(value).partition(" ")
            closed[str(day)] = (int(seq), digest)
        return closed

    async def checkpoint(self, link_group_id: str) -> Checkpoint:
        """The link group's checkpoint: where its journal was trimmed and exported."""
        group = keys.LinkGroupKeys(link_group_id)
        return codec.checkpoint(await self._read(self._client.hgetall(group.checkpoint)))

    async def counters(self, link_group_id: str) -> dict[str, int]:
        """The link group's event counters (see :attr:`keys.LinkGroupKeys.counters`)."""
        group = keys.LinkGroupKeys(link_group_id)
        fields = await self._read(self._client.hgetall(group.counters))
        return {name: int(value) for name, value in fields.items()}

    async def checkpoint_seq(self, link_group_id: str) -> int:
        """The last journal sequence number trimmed (0: none)."""
        return (await self.checkpoint(link_group_id)).seq

    async def journal_length(self, link_group_id: str) -> int:
        """How many entries the journal stream holds now."""
        return int(await self._read(self._client.xlen(keys.LinkGroupKeys(link_group_id).journal)))

    async def trim_journal(
        self, link_group_id: str, before_ms: int, previous_seq: int, count: int, new: Checkpoint
    ) -> int:
        """Trim the oldest ``count`` entries (each exported and written before ``before_ms``,
        ms since the epoch) into the signed checkpoint ``new``, atomically, if the checkpoint
        is still at ``previous_seq`` and the entries lead exactly to ``new`` (else
        :class:`FailedPrecondition`, nothing trimmed); answer how many were trimmed."""
        group = keys.LinkGroupKeys(link_group_id)
        sums = {f"value:{meter}": str(sum_) for meter, sum_ in new.value_microcents.items()}
        sums |= {f"reserve:{meter}": str(sum_) for meter, sum_ in new.reserve_microcents.items()}
        return int(
            await self._run(
                self._scripts.trim_journal,
                [group.journal, group.checkpoint, group.epoch],
                [
                    before_ms,
                    count,
                    previous_seq,
                    new.seq,
                    new.hash,
                    json.dumps(sums),
                    new.signature,
                    new.signed_by,
                    new.epoch,
                    new.signed_exported_seq,
                    new.key_handovers,
                    new.signed_handovers,
                    new.signed_as,
                ],
            )
        )

    async def epoch_ids(self, link_group_id: str) -> tuple[str, frozenset[str]]:
        """The link group's epoch id ("" for none) and the ids of it and its lineage: the
        epochs a checkpoint of this state may have been signed in."""
        group = keys.LinkGroupKeys(link_group_id)
        epoch_id, lineage = await self._read(self._client.hmget(group.epoch, "id", "lineage"))
        if not epoch_id:
            return "", frozenset()
        epoch = Epoch.from_fields(str(epoch_id), str(lineage or ""), "")
        return epoch.epoch_id, frozenset({epoch.epoch_id, *(a for a, _ in epoch.lineage)})

    async def journal_seq(self, link_group_id: str) -> int:
        """The link group's last journal sequence number (0: none)."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(await self._read(self._client.get(group.seq)) or 0)

    async def rotate_checkpoint_key(
        self,
        link_group_id: str,
        previous: Checkpoint,
        new: Checkpoint,
        *,
        handover: str,
        entry_seq: int,
        from_key: str,
        actor: str,
    ) -> int:
        """Apply a key handover (docs/journal.md "Key handling"): the journal entry
        ``checkpoint_key_rotated`` #``entry_seq`` carrying ``handover`` (JSON, signed by the
        old key ``from_key``) and the checkpoint ``new`` (its handovers, and at a trimmed
        position its new key's signature), atomically, if the checkpoint is still
        ``previous`` and the journal's next entry is #``entry_seq`` (else
        :class:`FailedPrecondition`, nothing written); answer the entry's sequence number."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.rotate_checkpoint_key,
                [group.journal, group.seq, group.checkpoint, group.epoch],
                [
                    previous.seq,
                    previous.key_handovers,
                    new.epoch,
                    entry_seq,
                    new.key_handovers,
                    handover,
                    from_key,
                    new.signed_by,
                    actor,
                    new.signature if new.seq else "",
                    new.signed_exported_seq,
                    new.signed_as,
                    new.signed_handovers,
                ],
            )
        )

    async def restore_state(
        self, snapshot: dict[str, Any], entries: Sequence[dict[str, Any]], chunk: int = 500
    ) -> None:
        """Write a link group's exported state and journal entries (after its checkpoint)
        into a Redis that lost it - every key but the epoch record, which
        :meth:`restore_epoch` writes last (until then tables are refused: no epoch), and
        the must-hit-by meters' secrets, which it draws anew. An export written before a
        kind of state existed restores it empty. The caller checked the export
        (:mod:`controller.journal_restore`); this refuses, before writing anything, a group
        that has an epoch here and an export naming another link group's table or meter."""
        link_group_id = snapshot["link_group_id"]
        group = keys.LinkGroupKeys(link_group_id)
        retired_tables: dict[str, Any] = snapshot.get("retired_tables") or {}
        if await self._read(self._client.exists(group.epoch)):
            raise AlreadyExists(
                f"link group {link_group_id} has state in this Redis; restore only into a Redis "
                "that lost it"
            )
        await self._refuse_others_ids(snapshot)
        async with self._client.pipeline(transaction=True) as pipe:
            # Without an epoch record the group is not served: what is there is a restore
            # that was interrupted (the epoch record is written last), replaced whole.
            pipe.delete(
                group.journal,
                group.seq,
                group.meters,
                group.tables,
                group.open_rounds,
                group.adjustment_requests,
                *(getattr(group, name) for name in (*SNAPSHOT_HASHES, *SNAPSHOT_SETS)),
                *(group.meter(meter_id) for meter_id in snapshot["meters"]),
                *(group.mystery(meter_id) for meter_id in snapshot["meters"]),
                *(group.table(table_id) for table_id in (*snapshot["tables"], *retired_tables)),
            )
            _queue_group_records(pipe, group, snapshot)
            for meter_id, fields in snapshot["meters"].items():
                pipe.hset(group.meter(meter_id), mapping=fields)
                pipe.sadd(group.meters, meter_id)
            for table_id, fields in snapshot["tables"].items():
                pipe.hset(group.table(table_id), mapping=fields)
                pipe.sadd(group.tables, table_id)
            for table_id, fields in retired_tables.items():  # not in the tables set
                pipe.hset(group.table(table_id), mapping=fields)
            for name, fields in (snapshot.get("rounds") or {}).items():
                if fields:  # a round locked out and not finished: it can be settled or voided
                    round_key = group.round(*_split_round(name))
                    pipe.hset(round_key, mapping=fields)
                    pipe.expire(round_key, self._round_retention_seconds)
                    pipe.sadd(group.open_rounds, name)
            await self._read(pipe.execute())
        for start in range(0, len(entries), chunk):
            async with self._client.pipeline(transaction=False) as pipe:
                for entry in entries[start : start + chunk]:
                    pipe.xadd(group.journal, entry["fields"], id=entry["id"])
                await self._read(pipe.execute())
        await self._read(self._client.set(group.seq, int(snapshot["seq"])))

    async def _refuse_others_ids(self, snapshot: dict[str, Any]) -> None:
        """Refuse (:class:`AlreadyExists`, nothing written) an export naming a table or meter
        (live or retired) that the global index gives to another link group: its restore
        would point that group's table or meter at the export's records."""
        link_group_id = snapshot["link_group_id"]
        for what, index, ids in (
            (
                "table",
                keys.TABLE_INDEX,
                [*snapshot["tables"], *(snapshot.get("retired_tables") or {})],
            ),
            (
                "meter",
                keys.METER_INDEX,
                [*snapshot["meters"], *(snapshot.get("retired_meters") or {})],
            ),
        ):
            if not ids:
                continue
            owners = await self._read(self._client.hmget(index, ids))
            for item_id, owner in zip(ids, owners, strict=True):
                if owner is not None and owner != link_group_id:
                    raise AlreadyExists(
                        f"the export of link group {link_group_id} names {what} {item_id}, "
                        f"which belongs to link group {owner}: a restore never takes a {what} "
                        "of another link group (nothing was written)"
                    )

    async def restore_epoch(
        self,
        snapshot: dict[str, Any],
        *,
        actor: str,
        reason: str,
        source: str,
        seq_above: int = 0,
    ) -> int:
        """Make the restored link group a state again (a new epoch, journaled; each
        must-hit-by meter starts a new cycle, ``restore_epoch.lua``), then put it back in
        the global indexes (its retired meters and tables too: their ids stay taken) and the
        installation record; answer the journal seq of the ``restored`` entry.

        ``seq_above``: the highest journal sequence number the lost state may have issued
        (the tables' outboxes, :func:`controller.reconcile.seq_above`). Above the export's,
        the journal continues after it (the ``restored`` entry records the jump) and the
        group starts stopped until its tables are reconciled (docs/journal.md, "Reconciling
        tables after a restore")."""
        link_group_id = snapshot["link_group_id"]
        group = keys.LinkGroupKeys(link_group_id)
        epoch = snapshot["epoch"]
        mystery_ids = sorted(
            meter_id
            for meter_id, fields in snapshot["meters"].items()
            if fields.get("kind") == "must_hit_by"
        )
        seq = int(
            await self._run(
                self._scripts.restore_epoch,
                [
                    group.epoch,
                    group.journal,
                    group.seq,
                    *(
                        key
                        for meter_id in mystery_ids
                        for key in (group.meter(meter_id), group.mystery(meter_id))
                    ),
                ],
                [
                    link_group_id,
                    new_epoch_id(),
                    epoch.get("id", ""),
                    epoch.get("lineage", ""),
                    int(snapshot["seq"]),
                    actor,
                    reason,
                    source,
                    json.dumps(mystery_ids),
                    mystery_seed(),
                    max(int(snapshot["seq"]), seq_above),
                ],
            )
        )
        installation = snapshot.get("installation") or {}
        if installation.get("id"):
            if await self._read(self._client.hsetnx(keys.INSTALLATION, "id", installation["id"])):
                rest = {k: v for k, v in installation.items() if k != "id"}
                if rest:
                    await self._read(self._client.hset(keys.INSTALLATION, mapping=rest))
        else:
            await self.ensure_installation(actor)
        await self._read(self._client.sadd(keys.LINK_GROUPS, link_group_id))
        for meter_id in (*snapshot["meters"], *(snapshot.get("retired_meters") or {})):
            await self._read(self._client.hset(keys.METER_INDEX, meter_id, link_group_id))
        for table_id in (*snapshot["tables"], *(snapshot.get("retired_tables") or {})):
            await self._read(self._client.hset(keys.TABLE_INDEX, table_id, link_group_id))
        return seq

    # ---------------------------------------------------------------- reconciling a restore

    async def restore_collect(
        self,
        link_group_id: str,
        table_id: str,
        steps: Sequence[dict[str, Any]],
        *,
        actor: str,
        source: str,
        last: JournalPosition,
        max_steps: int,
    ) -> tuple[int, int, int]:
        """Keep the ``steps`` (controller/reconcile.py) of ``table_id``'s outbox that the
        restored state lacks (``restore_collect.lua``); answer (missing, present, collected
        before)."""
        group = keys.LinkGroupKeys(link_group_id)
        missing, present, known = await self._run(
            self._scripts.restore_collect,
            [
                group.epoch,
                group.journal,
                group.seq,
                group.restore_steps,
                group.restore_tables,
                group.table(table_id),
                group.tables,
                group.restore_queue,
                *(group.round(table_id, int(step["round_id"])) for step in steps),
            ],
            [
                link_group_id,
                table_id,
                json.dumps(list(steps)),
                actor,
                source,
                last.epoch,
                last.seq,
                max_steps,
            ],
        )
        return int(missing), int(present), int(known)

    async def restore_records(
        self, link_group_id: str
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], list[str], dict[str, str]]:
        """What the reconciliation of a restored link group stands at: its steps by id, the
        collected tables, the group's table ids and its epoch record's fields."""
        group = keys.LinkGroupKeys(link_group_id)
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.hgetall(group.restore_steps)
            pipe.hgetall(group.restore_tables)
            pipe.smembers(group.tables)
            pipe.hgetall(group.epoch)
            steps, tables, table_ids, epoch = await self._read(pipe.execute())
        return (
            {key: json.loads(raw) for key, raw in steps.items()},
            {key: json.loads(raw) for key, raw in tables.items()},
            sorted(table_ids),
            dict(epoch),
        )

    async def restore_request(self, link_group_id: str, *, actor: str, actor_cert: str) -> int:
        """Request every missing step as a correction (``restore_request.lua``); answer how
        many this operator has requested."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.restore_request,
                [group.epoch, group.journal, group.seq, group.restore_steps],
                [link_group_id, actor, actor_cert],
            )
        )

    async def restore_apply(
        self, link_group_id: str, step: dict[str, Any], *, actor: str, actor_cert: str
    ) -> dict[str, Any]:
        """Approve and apply one requested step (``restore_apply.lua``); answer its record."""
        group = keys.LinkGroupKeys(link_group_id)
        meter_ids = sorted(
            {str(move["meter_id"]) for move in step.get("moves") or []}
            | {str(a["meter_id"]) for a in step.get("awards") or [] if a.get("meter_id")}
        )
        table_id, round_id = str(step["table_id"]), int(step["round_id"])
        raw = await self._run(
            self._scripts.restore_apply,
            [
                group.epoch,
                group.journal,
                group.seq,
                group.restore_steps,
                group.round(table_id, round_id),
                group.table(table_id),
                group.open_rounds,
                group.jackpots,
                group.pending,
                group.restore_queue,
                group.irregularities,
                *(group.meter(meter_id) for meter_id in meter_ids),
            ],
            [
                link_group_id,
                step["id"],
                actor,
                actor_cert,
                json.dumps(meter_ids),
                self._round_retention_seconds,
            ],
        )
        record: dict[str, Any] = json.loads(raw)
        return record

    async def restore_finish(self, link_group_id: str, *, actor: str, actor_cert: str) -> int:
        """End the reconciliation (``restore_finish.lua``); answer its journal seq."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.restore_finish,
                [
                    group.epoch,
                    group.journal,
                    group.seq,
                    group.restore_steps,
                    group.restore_tables,
                    group.tables,
                    group.restore_queue,
                ],
                [link_group_id, actor, actor_cert],
            )
        )

    # ---------------------------------------------------------------- rounds

    def _round_keys(self, table: TableConfig, round_id: int) -> tuple[keys.LinkGroupKeys, str]:
        group = keys.LinkGroupKeys(table.link_group_id)
        return group, group.round(table.table_id, round_id)

    @staticmethod
    def _meter_keys(group: keys.LinkGroupKeys, table: TableConfig) -> list[str]:
        return [group.meter(meter_id) for meter_id in table.meter_ids]

    def _phase_keys(self, table: TableConfig) -> _PhaseKeys:
        """The keys of ``table``'s lockout and settle scripts after the round's own, and its
        meter ids as JSON, made once per definition of the table."""
        known = self._phase_keys_by_table.get(table.table_id)
        if known is not None and known.table is table:
            return known
        group = keys.LinkGroupKeys(table.link_group_id)
        meters = self._meter_keys(group, table)
        known = self._phase_keys_by_table[table.table_id] = _PhaseKeys(
            table=table,
            group=group,
            lockout=(
                group.table(table.table_id),
                group.journal,
                group.seq,
                group.epoch,
                group.counters,
                group.open_rounds,
                group.maintenance,
                *meters,
                group.jackpots,
                group.pending,
                *(group.mystery(meter_id) for meter_id in table.meter_ids),
            ),
            settle=(
                group.journal,
                group.seq,
                group.jackpots,
                group.pending,
                group.epoch,
                group.counters,
                group.open_rounds,
                *meters,
            ),
            meter_ids_json=json.dumps(table.meter_ids),
        )
        return known

    async def lockout(
        self,
        table: TableConfig,
        round_id: int,
        wagers: Sequence[Wager],
        fingerprint: str,
        known: JournalPosition = NO_POSITION,
    ) -> LockoutResult:
        """Record the wagers accepted at lockout and apply their contributions (atomic).
        ``known`` is the table's last acknowledged journal position: a link group whose
        state lacks it is stopped (:class:`LinkGroupStopped`), as in every table step.
        The round's wagers (stored in this order) and fingerprint are remembered for its
        settlement (:mod:`controller.store.locked_rounds`)."""
        phase = self._phase_keys(table)
        payload = json.dumps([_wager_item(table, w) for w in wagers])
        apply = self._apply(
            self._scripts.lockout,
            [phase.group.round(table.table_id, round_id), *phase.lockout],
            [
                table.table_id,
                round_id,
                fingerprint,
                payload,
                phase.meter_ids_json,
                self._round_retention_seconds,
                self.max_round_step,
                known.epoch,
                claimed_seq(known),
                mystery_seed(),
                table.link_group_id,
                self._table_revs.get(table.table_id, 0),
            ],
            codec.lockout_result,
        )
        try:
            result = await apply
        except StoreUnavailable:
            self.forget_table(table.table_id)  # perhaps changed: read it again for the retry
            raise
        self._locked.remember(table.table_id, round_id, tuple(wagers), fingerprint)
        return result

    async def locked_round(
        self, table: TableConfig, round_id: int, *, fresh: bool = False
    ) -> LockedRound | None:
        """The wagers a round was locked out with and that lockout's fingerprint, or None
        when the round was never locked out (or its record expired): as this process
        remembers its own lockout, else read from Redis. Wagers never change after the
        lockout; the settle script checks the fingerprint again (a stale memory is refused
        there, and forgotten by :meth:`settle`). ``fresh``: forget it and read Redis."""
        if fresh:
            self._locked.forget(table.table_id, round_id)
        remembered = self._locked.recall(table.table_id, round_id)
        if remembered is not None:
            return remembered
        _, round_key = self._round_keys(table, round_id)
        version, wagers, fingerprint, state = await self._read(
            self._client.hmget(round_key, "v", "wagers", "lockout_fp", "state")
        )
        if wagers is None:
            return None
        if state != "settled":  # a settled round's retry is answered by settle.lua's replay
            await self._check_table_rev(table, round_id)
        where = f"{round_id} of table {table.table_id}"
        return LockedRound(
            self._decoded(
                lambda: codec.locked_wagers(where, {"v": version, "wagers": wagers}, round_key)
            ),
            fingerprint,
        )

    async def settle(
        self,
        table: TableConfig,
        round_id: int,
        plan: Sequence[Payout],
        lockout_fingerprint: str,
        fingerprint: str,
        known: JournalPosition = NO_POSITION,
        *,
        rest_of_round_void: bool = False,
    ) -> SettleResult:
        """Pay the plan in its order from the live meters, journal it, answer it (atomic).
        The round's remembered lockout is forgotten whatever the answer (settled, replayed,
        refused: a refusal for a stale lockout fingerprint is answered from Redis next).
        ``rest_of_round_void``: the settlement carries one (and claims no base game win); a
        round recorded as "bonus_settles" (§ 647a.13(a), (d)) is refused without it."""
        phase = self._phase_keys(table)
        payload = json.dumps([_plan_item(item) for item in plan])
        self._locked.forget(table.table_id, round_id)
        return await self._apply(
            self._scripts.settle,
            [phase.group.round(table.table_id, round_id), *phase.settle],
            [
                table.table_id,
                round_id,
                fingerprint,
                payload,
                phase.meter_ids_json,
                self._round_retention_seconds,
                table.link_group_id,
                lockout_fingerprint,
                known.epoch,
                claimed_seq(known),
                "1" if rest_of_round_void else "",
            ],
            codec.settle_result,
        )

    async def void_round(
        self,
        table: TableConfig,
        round_id: int,
        reason: str,
        fingerprint: str,
        known: JournalPosition = NO_POSITION,
        *,
        irregularity: IrregularityRule | None = None,
        kind: IrregularityKind | None = None,
        resolution: Resolution | None = None,
    ) -> VoidResult:
        """Void a locked, unsettled round: its contributions leave the meters (atomic).
        With ``kind`` and its ``irregularity`` rule: for that seeded irregularity, journaled
        and counted in the same step. With ``resolution``: a supervisor voids a round held by
        a chip count that differed (a round held so is refused to the table otherwise)."""
        group, round_key = self._round_keys(table, round_id)
        if self._locked.recall(table.table_id, round_id) is None:
            await self._check_table_rev(table, round_id)  # locked out by another process
        self._locked.forget(table.table_id, round_id)
        why: dict[str, str] = {}
        if resolution is not None:
            why = {
                "by": "supervisor",
                **dataclasses.asdict(resolution),
                "link_group_id": table.link_group_id,
            }
        elif irregularity is not None and kind is not None:
            why = {
                "by": "table",
                "kind": kind.value,
                "effect": irregularity.effect.value,
                "section": irregularity.section,
                "link_group_id": table.link_group_id,
            }
        return await self._apply(
            self._scripts.void_round,
            [
                round_key,
                group.journal,
                group.seq,
                group.epoch,
                group.counters,
                group.open_rounds,
                group.irregularities,
                *self._meter_keys(group, table),
                group.jackpots,
                group.pending,
            ],
            [
                table.table_id,
                round_id,
                fingerprint,
                reason,
                json.dumps(table.meter_ids),
                self._round_retention_seconds,
                known.epoch,
                claimed_seq(known),
                json.dumps(why) if why else "",
            ],
            codec.void_result,
        )

    # ---------------------------------------------------------------- irregularities

    @staticmethod
    def _irregularity_keys(group: keys.LinkGroupKeys, round_key: str) -> list[str]:
        return [
            round_key,
            group.journal,
            group.seq,
            group.epoch,
            group.counters,
            group.irregularities,
        ]

    async def report_chip_count(
        self, table: TableConfig, round_id: int, chips: int, known: JournalPosition = NO_POSITION
    ) -> ChipCountResult:
        """Record the dealer's chip count of a locked-out round (§ 639a.8(b)), compared with
        the Progressive Payout Wagers accepted; a count that differs holds the round for a
        supervisor (atomic, journaled, counted)."""
        group, round_key = self._round_keys(table, round_id)
        return await self._apply(
            self._scripts.report_chip_count,
            self._irregularity_keys(group, round_key),
            [
                table.table_id,
                round_id,
                chips,
                json.dumps([kind.value for kind in COUNTED_WAGERS]),
                table.link_group_id,
                CHIP_COUNT_SECTION,
                known.epoch,
                claimed_seq(known),
            ],
            codec.chip_count_result,
        )

    async def report_irregularity(
        self,
        table: TableConfig,
        round_id: int,
        kind: IrregularityKind,
        rule: IrregularityRule,
        known: JournalPosition = NO_POSITION,
    ) -> IrregularityResult:
        """Apply a seeded irregularity by its ``rule`` (atomic, journaled with its kind,
        effect and section, counted): void the round, or record it for a round whose bonus
        wagers still settle (Texas Hold 'Em Bonus, § 647a.13)."""
        reason = irregularity_reason(kind, rule)
        if rule.effect is IrregularityEffect.VOID:
            void = await self.void_round(
                table,
                round_id,
                reason,
                void_fingerprint(reason),
                known,
                irregularity=rule,
                kind=kind,
            )
            return IrregularityResult(
                table_id=void.table_id,
                round_id=void.round_id,
                kind=kind,
                effect=rule.effect.value,
                section=rule.section,
                reason=reason,
                reversed=void.reversed,
                meters=void.meters,
                replayed=void.replayed,
                journal=void.journal,
            )
        group, round_key = self._round_keys(table, round_id)
        return await self._apply(
            self._scripts.report_irregularity,
            self._irregularity_keys(group, round_key),
            [
                table.table_id,
                round_id,
                kind.value,
                rule.effect.value,
                rule.section,
                reason,
                table.link_group_id,
                known.epoch,
                claimed_seq(known),
            ],
            codec.irregularity_result,
        )

    async def confirm_irregularity(
        self, table: TableConfig, round_id: int, resolution: Resolution
    ) -> Irregularity:
        """A supervisor confirms a round held by a chip count that differed: it settles with
        the wagers accepted at lockout (atomic, journaled with who and why)."""
        group, round_key = self._round_keys(table, round_id)
        raw = await self._run(
            self._scripts.resolve_irregularity,
            [round_key, group.journal, group.seq, group.irregularities],
            [
                table.table_id,
                round_id,
                resolution.supervisor,
                resolution.supervisor_cert,
                resolution.note,
            ],
        )
        return codec.irregularity(raw)

    async def get_irregularity(
        self, table: TableConfig, round_id: int, kind: IrregularityKind | str
    ) -> Irregularity:
        """One recorded irregularity; :class:`NotFound` if the round has none of ``kind``
        (an :class:`IrregularityKind`, or ``mystery_hit``: a supervisor's void of a round
        that won a must-hit-by jackpot)."""
        group = keys.LinkGroupKeys(table.link_group_id)
        irregularity_id = f"{table.table_id}:{round_id}:{kind}"
        raw = await self._read(self._client.hget(group.irregularities, irregularity_id))
        if raw is None:
            raise NotFound(f"round {round_id} of table {table.table_id} has no {kind} irregularity")
        return self._decoded(
            lambda: codec.irregularity(raw, name=irregularity_id, key=group.irregularities)
        )

    async def list_irregularities(
        self,
        link_group_id: str = "",
        *,
        status: str = "",
        table_id: str = "",
        skipped: list[CorruptRecord] | None = None,
    ) -> list[Irregularity]:
        """Every recorded irregularity of one link group or all, in journal order per link
        group, filtered by ``status`` and ``table_id`` (empty: any); a corrupt one is left
        out, reported and added to ``skipped``."""
        found: list[Irregularity] = []
        for group_id in await self._group_ids(link_group_id):
            group = keys.LinkGroupKeys(group_id)
            stored = await self._read(self._client.hgetall(group.irregularities))
            for record in self._each(
                lambda item: codec.irregularity(item[2], name=item[0], key=item[1]),
                ((name, group.irregularities, raw) for name, raw in sorted(stored.items())),
                skipped,
            ):
                if (not status or record.status == status) and (
                    not table_id or record.table_id == table_id
                ):
                    found.append(record)
        return sorted(found, key=lambda r: (r.link_group_id, r.journal_seq))

    # ---------------------------------------------------------------- jackpots

    async def list_pending_jackpots(
        self, link_group_id: str = "", *, skipped: list[CorruptRecord] | None = None
    ) -> list[Jackpot]:
        """Jackpots waiting for validation, in journal order; a corrupt one is left out,
        reported and added to ``skipped``."""
        groups = await self._group_ids(link_group_id)
        found: list[Jackpot] = []
        for group_id in groups:
            group = keys.LinkGroupKeys(group_id)
            ids = sorted(await self._read(self._client.smembers(group.pending)))
            if ids:
                raws = await self._read(self._client.hmget(group.jackpots, ids))
                found += self._each(
                    lambda item: codec.jackpot(item[2], key=item[1], name=item[0]),
                    (
                        (i, group.jackpots, raw)
                        for i, raw in zip(ids, raws, strict=True)
                        if raw is not None
                    ),
                    skipped,
                )
        return sorted(found, key=lambda j: (j.link_group_id, j.journal_seq))

    async def list_jackpots(
        self,
        link_group_id: str = "",
        *,
        status: str = "",
        table_id: str = "",
        from_ms: int = 0,
        to_ms: int = 0,
        skipped: list[CorruptRecord] | None = None,
    ) -> list[Jackpot]:
        """Every jackpot (any status) of one link group or all, in journal order per link
        group, filtered: ``status``, ``table_id`` (empty: any), hit at or after ``from_ms`` and
        before ``to_ms`` (ms since the Unix epoch; 0: unbounded); a corrupt one is left out,
        reported and added to ``skipped``."""
        found: list[Jackpot] = []
        for group_id in await self._group_ids(link_group_id):
            key = keys.LinkGroupKeys(group_id).jackpots
            stored = await self._read(self._client.hgetall(key))
            for record in self._each(
                lambda item: codec.jackpot(item[2], key=item[1], name=item[0]),
                ((name, key, raw) for name, raw in sorted(stored.items())),
                skipped,
            ):
                if (
                    (not status or record.status == status)
                    and (not table_id or record.table_id == table_id)
                    and record.hit_at_ms >= from_ms
                    and (not to_ms or record.hit_at_ms < to_ms)
                ):
                    found.append(record)
        return sorted(found, key=lambda j: (j.link_group_id, j.journal_seq))

    async def get_jackpot(self, jackpot_id: str) -> Jackpot:
        """One jackpot and its slip; :class:`NotFound` names an unknown id,
        :class:`CorruptRecord` one whose record does not read."""
        raw = await self._jackpot_raw(jackpot_id)
        key = keys.LinkGroupKeys(jackpot_id.rpartition(":")[0]).jackpots
        return self._decoded(lambda: codec.jackpot(raw, key=key, name=jackpot_id))

    async def _jackpot_raw(self, jackpot_id: str) -> str:
        link_group_id, _, seq = jackpot_id.rpartition(":")
        if not link_group_id or not seq.isdigit():
            raise NotFound(f"jackpot {jackpot_id} does not exist (ids look like 'group:17')")
        group = keys.LinkGroupKeys(link_group_id)
        raw = await self._read(self._client.hget(group.jackpots, jackpot_id))
        if raw is None:
            raise NotFound(f"jackpot {jackpot_id} does not exist")
        return str(raw)

    async def review_jackpot(
        self, jackpot_id: str, *, approve: bool, reviewer: str, reviewer_cert: str, note: str
    ) -> Jackpot:
        """Approve or reject a pending jackpot as ``reviewer`` (a certificate identity, with
        its fingerprint ``reviewer_cert``); the same reviewer repeating the same decision
        changes nothing, any other review of a decided jackpot is refused."""
        meter_id = (await self.get_jackpot(jackpot_id)).meter_id
        group = keys.LinkGroupKeys(jackpot_id.rpartition(":")[0])
        decided = await self._run(
            self._scripts.review_jackpot,
            [group.jackpots, group.pending, group.journal, group.seq]
            + ([group.meter(meter_id)] if meter_id else []),
            [jackpot_id, "approved" if approve else "rejected", reviewer, note, reviewer_cert],
        )
        return codec.jackpot(decided)

    async def pay_jackpot(
        self,
        jackpot_id: str,
        *,
        payer: str,
        payer_cert: str,
        note: str,
        two_people: bool,
        compliance: PaymentCompliance | None = None,
    ) -> Jackpot:
        """Record that an approved jackpot was paid, by ``payer`` (a certificate identity,
        with its fingerprint ``payer_cert``); with ``two_people`` the payer may not be the
        approver nor its witness. The same payer again changes nothing; a jackpot not
        approved, or paid by another, is refused (:class:`FailedPrecondition`).
        ``compliance``: the payout policy, what it requires of this jackpot and what the
        payer gave (docs/payout-compliance.md); what is missing is refused
        (:class:`FailedPrecondition` naming each thing)."""
        await self.get_jackpot(jackpot_id)  # NotFound: unknown; CorruptRecord: unreadable
        group = keys.LinkGroupKeys(jackpot_id.rpartition(":")[0])
        paid = await self._run(
            self._scripts.pay_jackpot,
            [group.jackpots, group.journal, group.seq],
            [jackpot_id, payer, payer_cert, note, "two_people" if two_people else ""]
            + (compliance.arguments() if compliance else []),
        )
        return codec.jackpot(paid)

    async def witness_jackpot(
        self, jackpot_id: str, *, witness: str, witness_cert: str, note: str
    ) -> Jackpot:
        """Record that ``witness`` (a certificate identity, with its fingerprint
        ``witness_cert``) witnessed the hand-pay of an approved jackpot, before its payment
        (docs/payout-compliance.md). The same witness again changes nothing; another witness
        once one is recorded, or a jackpot not approved, is refused
        (:class:`FailedPrecondition`)."""
        await self.get_jackpot(jackpot_id)  # NotFound: unknown; CorruptRecord: unreadable
        group = keys.LinkGroupKeys(jackpot_id.rpartition(":")[0])
        witnessed = await self._run(
            self._scripts.witness_jackpot,
            [group.jackpots, group.journal, group.seq],
            [jackpot_id, witness, witness_cert, note],
        )
        return codec.jackpot(witnessed)

    # ---------------------------------------------------------------- reading

    async def audit_snapshot(self, link_group_id: str, attempts: int = 5) -> LinkGroupSnapshot:
        """One consistent instant of a link group: journal position, meters, pending jackpots.

        Read by one read-only script; retried if a meter was created between listing the
        meters and reading them.
        """
        group = keys.LinkGroupKeys(link_group_id)
        for _ in range(attempts):
            ids = sorted(await self._read(self._client.smembers(group.meters)))
            raw = await self._run(
                self._scripts.audit_snapshot,
                [
                    group.seq,
                    group.meters,
                    group.pending,
                    group.jackpots,
                    group.checkpoint,
                    *(group.meter(meter_id) for meter_id in ids),
                    group.journal,
                ],
                ids,
                confirm=False,  # read-only: nothing to wait for
            )
            snapshot = codec.link_group_snapshot(
                raw, {meter_id: group.meter(meter_id) for meter_id in ids}, group.jackpots
            )
            if snapshot.meter_count == len(ids):
                return snapshot
        raise StoreUnavailable(f"link group {link_group_id} kept changing; audit it again")

    async def journal(
        self,
        link_group_id: str,
        batch: int = 1000,
        *,
        start: str = "-",
        end: str = "+",
        unreadable: bool = False,
    ) -> AsyncIterator[JournalEntry]:
        """Every journal entry of a link group, oldest first (or those with stream ids from
        ``start`` to ``end``, both inclusive). An entry whose sequence number or deltas do
        not read raises :class:`CorruptRecord`; with ``unreadable`` (the audit) it is yielded
        with zero deltas and its ``problem``, and the walk goes on."""
        stream = keys.LinkGroupKeys(link_group_id).journal
        while True:
            rows = await self._read(self._client.xrange(stream, start, end, count=batch))
            for entry_id, fields in rows:
                try:
                    entry = JournalEntry(
                        entry_id=entry_id,
                        seq=codec.integer("seq", fields.get("seq")),
                        type=fields.get("type", ""),
                        meter_id=fields.get("meter", ""),
                        delta_meter_microcents=codec.integer("d_meter", fields.get("d_meter")),
                        delta_reserve_microcents=codec.integer(
                            "d_reserve", fields.get("d_reserve")
                        ),
                        fields=dict(fields),
                    )
                except ValueError as error:
                    corrupt = CorruptRecord("journal entry", entry_id, stream, str(error))
                    if not unreadable:
                        raise self._reported(corrupt) from None
                    self._reported(corrupt)
                    entry = JournalEntry(
                        entry_id,
                        0,
                        fields.get("type", ""),
                        fields.get("meter", ""),
                        0,
                        0,
                        dict(fields),
                        problem=str(corrupt),
                    )
                yield entry
            if len(rows) < batch:
                return
            start = "(" + rows[-1][0]

    async def corrupt_records(self, link_group_id: str) -> list[CorruptRecord]:
        """Every record of a link group that does not read, each reported (the audit names
        them all): its meters, tables (read from Redis, not the cache), jackpots,
        irregularities, adjustments and the records of its open rounds."""
        group = keys.LinkGroupKeys(link_group_id)
        found: list[CorruptRecord] = []
        await self.list_meters(link_group_id, skipped=found)
        await self.list_jackpots(link_group_id, skipped=found)
        await self.list_irregularities(link_group_id, skipped=found)
        table_ids = sorted(await self._read(self._client.smembers(group.tables)))
        async with self._client.pipeline(transaction=False) as pipe:
            for table_id in table_ids:
                pipe.hmget(group.table(table_id), "config", "rev", "last_round", "last_round_ms")
            rows = await self._read(pipe.execute())
        for table_id, row in zip(table_ids, rows, strict=True):
            key = group.table(table_id)
            try:
                if row[0] is not None:
                    self._stored_table(table_id, key, row[0])
                for field, value in zip(
                    ("rev", "last_round", "last_round_ms"), row[1:], strict=True
                ):
                    self._table_int(table_id, key, field, value)
            except CorruptRecord as error:
                found.append(error)
        adjustments = await self._read(self._client.hgetall(group.adjustments))
        self._each(
            lambda item: codec.adjustment(item[2], key=item[1], name=item[0]),
            ((name, group.adjustments, raw) for name, raw in sorted(adjustments.items())),
            found,
        )
        open_rounds = sorted(await self._read(self._client.smembers(group.open_rounds)))
        for name in open_rounds:
            if not name.rpartition(":")[2].isdigit():
                continue  # not a round's name: the export and the audit's chain say more
            table_id, round_id = _split_round(name)
            key = group.round(table_id, round_id)
            version, wagers = await self._read(self._client.hmget(key, "v", "wagers"))
            if wagers is None:
                continue
            where = f"{round_id} of table {table_id}"
            try:
                codec.locked_wagers(where, {"v": version, "wagers": wagers}, key)
            except CorruptRecord as error:
                found.append(self._reported(error))
        return found

    async def journal_window(
        self, link_group_id: str, from_ms: int, to_ms: int, limit: int, batch: int = 1000
    ) -> list[JournalEntry]:
        """The journal entries Redis wrote from ``from_ms`` (inclusive) to ``to_ms``
        (exclusive; 0: up to now), milliseconds since the Unix epoch, oldest first. A window
        of more than ``limit`` entries is refused (:class:`InvalidArgument`: narrow it), so a
        report never holds an unbounded journal in memory."""
        if from_ms < 0 or to_ms < 0 or (to_ms and to_ms <= from_ms):
            raise InvalidArgument(
                f"the window from {from_ms} to {to_ms} ms is empty or negative; --to must be "
                "after --from"
            )
        end = str(to_ms - 1) if to_ms else "+"
        entries: list[JournalEntry] = []
        async for entry in self.journal(link_group_id, batch, start=str(from_ms), end=end):
            if len(entries) == limit:
                raise InvalidArgument(
                    f"the journal of link group {link_group_id} holds more than {limit} entries "
                    "in that window; ask for a shorter one"
                )
            entries.append(entry)
        return entries

    async def record_tables_heard(self, heard: Mapping[str, int]) -> None:
        """Record when tables' agents were last heard from (``{table_id: ms}``); a time
        never goes back (another replica may have heard a table later). Nothing is written
        to a Redis without the installation record (a controller creates nothing there)."""
        if not heard or not await self._read(self._client.exists(keys.INSTALLATION)):
            return
        known = await self._read(self._client.hmget(keys.TABLE_SEEN, list(heard)))
        later: dict[Any, Any] = {
            table_id: at_ms
            for (table_id, at_ms), old in zip(heard.items(), known, strict=True)
            if not (old and str(old).isdigit() and int(old) >= at_ms)
        }
        if later:
            await self._read(self._client.hset(keys.TABLE_SEEN, mapping=later))

    async def tables_heard(self, table_ids: Sequence[str]) -> dict[str, int]:
        """When each of ``table_ids``' agents was last heard from (ms); absent: never, or a
        value that does not read (it is no jackpot state: ignored, overwritten at the next
        call)."""
        if not table_ids:
            return {}
        found = await self._read(self._client.hmget(keys.TABLE_SEEN, list(table_ids)))
        return {
            table_id: int(value)
            for table_id, value in zip(table_ids, found, strict=True)
            if value is not None and str(value).isdigit() and len(str(value)) < 16
        }

    async def last_rounds(
        self,
        link_group_id: str,
        table_ids: Sequence[str],
        *,
        skipped: list[CorruptRecord] | None = None,
    ) -> dict[str, tuple[int, int]]:
        """Each of ``table_ids``' latest round locked out: ``{table_id: (round_id,
        locked_out_at_ms)}`` (Redis's clock, written by the lockout script beside the round
        id); a table that has locked out no round since it was registered is absent, and so
        is one whose fields do not read (reported, added to ``skipped``). One pipelined read
        of the tables' own records (one slot: the link group's)."""
        group = keys.LinkGroupKeys(link_group_id)
        async with self._client.pipeline(transaction=False) as pipe:
            for table_id in table_ids:
                pipe.hmget(group.table(table_id), "last_round", "last_round_ms")
            rows = await self._read(pipe.execute())
        last: dict[str, tuple[int, int]] = {}
        for table_id, (round_id, at_ms) in zip(table_ids, rows, strict=True):
            if round_id or at_ms:
                try:
                    key = group.table(table_id)
                    read = (
                        self._table_int(table_id, key, "last_round", round_id),
                        self._table_int(table_id, key, "last_round_ms", at_ms),
                    )
                    if all(read):
                        last[table_id] = read
                except CorruptRecord as error:  # reported
                    if skipped is not None:
                        skipped.append(error)
        return last


async def _server_persistence(client: connection.Client, target: dict[str, Any]) -> Persistence:
    """The durability settings of one server (``target``: the node, on a cluster)."""
    info = await client.info("server", **target)
    replication = await client.info("replication", **target)
    try:
        config = await client.config_get("append*", **target)
    except ResponseError:  # managed services often disable CONFIG
        config = {"appendonly": "unknown", "appendfsync": "unknown"}
    return Persistence(
        redis_version=str(info.get("redis_version", "?")),
        aof_enabled={"yes": True, "no": False}.get(str(config.get("appendonly"))),
        appendfsync=str(config.get("appendfsync", "?")),
        role=str(replication.get("role", "?")),
        connected_replicas=int(replication.get("connected_slaves", 0)),
    )


def _version_key(version: str) -> tuple[int, ...]:
    """``"7.0.15"`` -> (7, 0, 15), for ordering; an unreadable one orders first."""
    parts = version.split(".")
    return tuple(int(part) for part in parts) if all(p.isdigit() for p in parts) else ()


def _wager_item(table: TableConfig, wager: Wager) -> dict[str, Any]:
    offer = table.offer(wager.kind)
    item = {
        "seat": wager.seat,
        "kind": wager.kind,
        "amount_cents": wager.amount_cents,
        "on_dealer_hand": wager.on_dealer_hand,
        "envy": wager.envy,
        "meters": list(offer.meter_ids) if offer else [],
    }
    if wager.player_token:  # only then: a round without tokens stores nothing more
        item["player_token"] = wager.player_token
    return item


_PLAN_FIELDS = tuple(
    field.name
    for field in dataclasses.fields(Payout)
    # these travel in the award; a player token only when given (_plan_item)
    if field.name not in ("award", "amount_cents", "meter_id", "player_token")
)


def _plan_item(payout: Payout) -> dict[str, Any]:
    """One line of the plan for the settle script: the payout's fields by name (the script
    copies them into the :class:`jackpot.results.SeatResult` it answers), and for an award its
    rule; a fixed amount travels as a decimal string (exact whatever its size)."""
    item: dict[str, Any] = {name: getattr(payout, name) for name in _PLAN_FIELDS}
    if payout.award is not None and payout.outcome is SeatOutcome.PAID:
        item["award"] = {
            "kind": payout.award_kind,
            "meter_ppm": payout.award.meter_ppm,
            "amount_cents": str(payout.amount_cents),
            "text": payout.award.text,
            "meter_id": payout.meter_id,
        }
        if payout.player_token:  # the winner's player token, for the slip
            item["player_token"] = payout.player_token
    return item


def _queue_group_records(pipe: Any, group: keys.LinkGroupKeys, snapshot: dict[str, Any]) -> None:
    """Queue the writes of the snapshot's group-wide hashes and sets (an empty one is no key)."""
    for name in SNAPSHOT_HASHES:
        if snapshot.get(name):
            pipe.hset(getattr(group, name), mapping=snapshot[name])
    for name in SNAPSHOT_SETS:
        if snapshot.get(name):
            pipe.sadd(getattr(group, name), *snapshot[name])
    # Each adjustment names its request id: the index of requests is rebuilt from them (a
    # retry of a request made before the loss is still that adjustment).
    requests = {
        record.request_id: record.adjustment_id
        for record in map(codec.adjustment, (snapshot.get("adjustments") or {}).values())
        if record.request_id
    }
    if requests:
        pipe.hset(group.adjustment_requests, mapping=requests)


def _split_round(name: str) -> tuple[str, int]:
    """``<table>:<round>`` of the open-rounds set -> (table id, round id)."""
    table_id, _, round_id = name.rpartition(":")
    return table_id, int(round_id)


def new_epoch_id() -> str:
    """A new epoch's id: 128 random bits in hex."""
    return secrets.token_hex(16)


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


def _script_error(error: ResponseError) -> JackpotError:
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

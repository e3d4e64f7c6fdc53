"""The catalog of a Redis: the installation record, link groups and their meters.

Creating a link group or a meter is one script each (journaled with who asked); a meter's
id is claimed in the global index first, so two link groups never hold the same id. Reads
report a record that does not read (:meth:`ScriptGateway.reported`) and leave it out of a
listing rather than hide the others.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator

from redis.asyncio.cluster import RedisCluster

from controller.domain.config import LinkGroupConfig, MeterConfig
from controller.domain.mystery import new_seed as mystery_seed
from controller.domain.records import LinkGroupState, Maintenance, MeterState
from controller.store import cluster, codec, keys
from controller.store.epochs import new_epoch_id
from controller.store.gateway import ScriptGateway
from jackpot.epochs import JournalPosition
from jackpot.errors import (
    AlreadyExists,
    CorruptRecord,
    JackpotError,
    LinkGroupStopped,
    NotFound,
    StoreUnavailable,
)
from jackpot.results import MeterValue

log = logging.getLogger("controller.store")


class Catalog:
    """Link groups, meters and the installation record (``store.catalog``)."""

    def __init__(self, gateway: ScriptGateway) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._decoded = gateway.decoded
        self._each = gateway.each

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

    async def group_ids(self, link_group_id: str = "") -> list[str]:
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
        for group_id in await self.group_ids():
            try:
                found.append(await self.get_link_group(group_id))
            except CorruptRecord as error:  # reported by get_link_group
                if skipped is not None:
                    skipped.append(error)
        return found

    async def create_meter(self, config: MeterConfig, *, actor: str) -> MeterState:
        """Create a meter at its reset amount (journaled as operator seed); idempotent."""
        group = keys.LinkGroupKeys(config.link_group_id)
        async with self.claim(keys.METER_INDEX, config.meter_id, config.link_group_id, "meter"):
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
    async def claim(
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

    async def meter_link_group(self, meter_id: str) -> str:
        link_group_id = await self._read(self._client.hget(keys.METER_INDEX, meter_id))
        if link_group_id is None:
            raise NotFound(f"meter {meter_id} does not exist")
        return str(link_group_id)

    async def get_meter(self, meter_id: str) -> MeterState:
        """A meter's parameters, values and counters; :class:`NotFound` if unknown."""
        group = keys.LinkGroupKeys(await self.meter_link_group(meter_id))
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
        left out, reported and added to ``skipped`` (:meth:`ScriptGateway.each`)."""
        groups = await self.group_ids(link_group_id)
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
        return sorted(await self.group_ids())

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

"""Epochs of a link group: where its journal stands, and stopping and resuming it.

A table's last acknowledged journal position is judged against Redis's here
(:meth:`Epochs.check_position`); a state that lacks what a table saw is stopped
(:class:`LinkGroupStopped`) until an operator resumes it in a new epoch. See
:mod:`jackpot.epochs` for the rules.
"""

from __future__ import annotations

import dataclasses
import secrets

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ResponseError

from controller.store import cluster, keys
from controller.store.gateway import ScriptGateway, script_error
from jackpot.epochs import Epoch, JournalPosition, claimed_seq

DURABLE_WAIT_MS = 100
"""How long :meth:`Epochs.durable_epoch` waits for the replicas (the refresh asks again
2 s later)."""


def new_epoch_id() -> str:
    """A new epoch's id: 128 random bits in hex."""
    return secrets.token_hex(16)


class Epochs:
    """The epoch records of link groups (``store.epochs``)."""

    def __init__(self, gateway: ScriptGateway) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._gateway = gateway

    async def durable_epoch(self, link_group_id: str) -> tuple[Epoch | None, int, bool]:
        """The epoch (None: none) and the journal seq, read atomically and followed on the
        same connection by the wait of ``--wait-replicas`` (at most :data:`DURABLE_WAIT_MS`);
        the flag is True when that many replicas confirmed it (always, without
        ``--wait-replicas``: the primary's AOF is the policy). A position that is not
        confirmed may be gone after a failover to a replica without being lost: its writes
        were never acknowledged."""
        group = keys.LinkGroupKeys(link_group_id)
        wait = dataclasses.replace(
            self._gateway.replica_wait,
            timeout_ms=min(self._gateway.wait_timeout_ms, DURABLE_WAIT_MS),
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
                        wait if self._gateway.wait_replicas else None,
                    )
                )
            )
        else:
            async with client.pipeline(transaction=False) as pipe:
                await self._scripts.read_position(keys=[group.epoch, group.seq], client=pipe)
                if self._gateway.wait_replicas:
                    wait.queue(pipe)
                replies = await self._read(pipe.execute(raise_on_error=False))
        if isinstance(replies[0], Exception):
            raise script_error(replies[0]) if isinstance(replies[0], ResponseError) else replies[0]
        (epoch_id, lineage, stopped), seq = replies[0]
        durable = not self._gateway.wait_replicas or (
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

    async def epoch_ids(self, link_group_id: str) -> tuple[str, frozenset[str]]:
        """The link group's epoch id ("" for none) and the ids of it and its lineage: the
        epochs a checkpoint of this state may have been signed in."""
        group = keys.LinkGroupKeys(link_group_id)
        epoch_id, lineage = await self._read(self._client.hmget(group.epoch, "id", "lineage"))
        if not epoch_id:
            return "", frozenset()
        epoch = Epoch.from_fields(str(epoch_id), str(lineage or ""), "")
        return epoch.epoch_id, frozenset({epoch.epoch_id, *(a for a, _ in epoch.lineage)})

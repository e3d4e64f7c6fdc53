"""Never serve lost state: what this controller has seen of each link group, checked again.

The epoch record of each link group (:mod:`jackpot.epochs`) tells states apart;
the tables' acknowledged positions are judged inside every table step. This guard adds the
controller's own memory, checked at start and every refresh (2 s):

* a link group it has seen (or that Redis's index names, or that the Rules Submission
  defines on an installed Redis) whose state is gone from Redis is **lost**: not served, and
  never created again (``serve --rules`` skips it; ``CreateLinkGroup`` refuses it);
* a link group whose journal went back, or whose epoch changed other than by a restore or a
  resume, is **stopped** in Redis (journaled), so every replica and table stops it too. With
  ``--wait-replicas`` the guard remembers only positions the replicas confirmed: a Redis
  failover may take the journal back below what the old primary held, but never below what
  was acknowledged;
* a Redis without the installation record (:data:`controller.store.keys.INSTALLATION`)
  holds no jackpot state at all: nothing is created on it unless the controller was started
  ``--first-install`` (a new installation: the operator says so), or an operator creates a
  link group through the AdminService. Every link group is given its epoch record when it is
  created (or, last, when it is restored), so one without it is never given one here: it is
  being restored, or incomplete, and is not served.

On a Redis Cluster every link group is one slot on one shard, and each shard can lose its
data on its own: the checks above are per link group (its epoch and journal, on its shard),
so a lost shard stops only its link groups; the installation record is one key on one shard,
and its loss stops every link group, as on one server. A link group whose keys would not all
hash to its one slot (:func:`controller.store.cluster.check_link_group_slots`) is not served.

A link group that is not served answers every table call UNAVAILABLE with the reason, its
health service (``jackpot.v1.LinkGroup/<id>``) is NOT_SERVING and
``jackpot_link_group_serving{link_group}`` is 0 (the critical alert
``JackpotLinkGroupNotServing``). The controller's overall health is NOT_SERVING when no
link group can be served: Redis holds no installation record (an emptied Redis, even for a
controller started without ``--rules``, which knows no link group), or every known link group
is lost or stopped; so a controller over an emptied Redis takes itself out of service. With
some link groups sound it keeps serving them; an installed Redis that has no link group yet
(a new installation) is served, so that its first one can be created.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from controller.store import cluster
from controller.store.redis_store import RedisStore
from jackpot.epochs import JournalPosition, verdict
from jackpot.errors import LinkGroupStopped, NotFound

log = logging.getLogger("controller.state")

FIRST_INSTALL_ACTOR = "jackpot-controller serve --first-install"
RESTORE_ADVICE = 'restore it (jackpotctl restore; RUNBOOK: "Redis lost its data")'


@dataclass
class StateGuard:
    """The link groups this controller knows, where their journals stood, and which ones it
    does not serve (and why)."""

    store: RedisStore
    first_install: bool = False
    expected: frozenset[str] = frozenset()  # link groups of the Rules Submissions
    seen: dict[str, JournalPosition] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)  # table id -> link group id
    installation_id: str = ""
    redis_installed: bool = False
    """Whether Redis held the installation record at the last :meth:`check`."""

    @property
    def installed(self) -> bool:
        """True once Redis holds (or this controller created) the installation record."""
        return bool(self.installation_id)

    def known(self) -> list[str]:
        """Every link group this controller knows of, sorted."""
        return sorted(set(self.seen) | set(self.problems) | self.expected)

    def nothing_to_serve(self) -> bool:
        """True when no link group can be served: Redis holds no installation record (an
        emptied Redis, or one never installed: with or without ``--rules``, nothing of it is
        served), or link groups are known and every one of them is lost or stopped. An
        installed Redis without link groups yet (a new installation) is served: its first
        link group is created through the AdminService."""
        if not self.redis_installed:
            return True
        known = self.known()
        return bool(known) and all(group in self.problems for group in known)

    def refuse_table(self, table_id: str) -> None:
        """Raise :class:`LinkGroupStopped` when the table's link group is not served (the
        table may be unknown to Redis, e.g. after Redis lost its data)."""
        group = self.tables.get(table_id)
        if group is not None:
            self.refuse_group(group)

    def refuse_group(self, link_group_id: str) -> None:
        """Raise :class:`LinkGroupStopped` when the link group is not served: lost state is
        never created again, stopped state is not changed."""
        why = self.problems.get(link_group_id)
        if why is not None:
            raise LinkGroupStopped(
                f"link group {link_group_id} is not served (and is never created again "
                f"while its state is lost): {why}"
            )

    def learn_tables(self, tables: Iterable[tuple[str, str]]) -> None:
        """Remember (table id, link group id) pairs, from Redis or the Rules Submission."""
        self.tables.update(tables)

    async def check(self) -> None:
        """Look at Redis again: the installation record, then every known link group."""
        record = await self.store.catalog.installation()
        group_ids = await self.store.catalog.link_group_ids()
        if record is None and self.first_install:  # a new installation the operator declared
            record = await self.store.catalog.ensure_installation(FIRST_INSTALL_ACTOR)
        self.first_install = False  # declared for the Redis found at start, not a later one
        self.redis_installed = record is not None
        if record is None:
            if self.installation_id:
                why = (
                    f"Redis lost the installation record {self.installation_id} and every "
                    f"link group with it; {RESTORE_ADVICE}"
                )
            elif group_ids:
                why = (
                    "Redis's index names link groups but Redis holds no installation record: "
                    f"its state is incomplete; {RESTORE_ADVICE}"
                )
            else:
                why = (
                    "Redis holds no jackpot state (no installation record): for a new "
                    "installation start once with --first-install; if Redis lost its data, "
                    + RESTORE_ADVICE
                )
            for group in sorted(set(self.known()) | set(group_ids)):
                self._problem(group, why)
            return
        self.installation_id = record["id"]
        for group in sorted(set(group_ids) | set(self.seen) | self.expected):
            await self._check_group(group, in_index=group in group_ids)

    async def _check_group(self, group: str, *, in_index: bool) -> None:
        if self.store.on_cluster:  # every key its scripts are given in one slot (one shard)
            try:
                cluster.check_link_group_slots(group)
            except cluster.CrossSlot as error:
                self._problem(group, f"its keys are not in one slot of the cluster: {error}")
                return
        epoch, seq, durable = await self.store.epochs.durable_epoch(group)
        if epoch is None:
            await self._state_without_epoch(group, in_index=in_index)
            return
        if epoch.stopped:
            self._problem(group, epoch.stopped)
            return
        seen = self.seen.get(group)
        why = verdict(seen, epoch, seq, "this controller") if seen else None
        if why is not None:
            stopped = await self.store.epochs.stop_link_group(group, epoch.epoch_id, why)
            self._problem(group, stopped or why)
            return
        if not durable:  # with --wait-replicas: remember only what the replicas confirmed
            same = seen is not None and seen.epoch == epoch.epoch_id
            seq = seen.seq if seen is not None and same else 0
        self.seen[group] = JournalPosition(epoch.epoch_id, seq)
        if self.problems.pop(group, None) is not None:
            log.warning("link group %s is served again (epoch %s)", group, epoch.epoch_id)

    async def _state_without_epoch(self, group: str, *, in_index: bool) -> None:
        """A link group without an epoch record: one being restored or left incomplete (a
        restore writes the epoch record last: not served, nothing written), a lost one (both
        recorded as a problem), or one not created yet."""
        try:
            await self.store.catalog.get_link_group(group)
        except NotFound:  # no state at all
            pass
        else:
            self._problem(
                group,
                "its state in Redis is incomplete (no epoch record): a restore is under way "
                "or was interrupted (run jackpotctl restore again)",
            )
            return
        if group in self.seen:
            position = self.seen[group]
            self._problem(
                group,
                f"its state is missing from Redis (this controller saw epoch {position.epoch} "
                f"at journal #{position.seq}); {RESTORE_ADVICE}",
            )
        elif in_index:
            self._problem(
                group,
                f"Redis's index names it but its state is missing; {RESTORE_ADVICE}",
            )

    def _problem(self, group: str, why: str) -> None:
        if self.problems.get(group) != why:
            log.critical("link group %s is NOT SERVED: %s", group, why)
        self.problems[group] = why

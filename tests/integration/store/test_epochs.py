"""Epochs: a table's position judged against Redis's (an unverified claim refuses that table
only), a group stopped in its epoch only, a resume into a new epoch that keeps its lineage,
the durable read of the position."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.store.redis_store import RedisStore
from jackpot.epochs import JournalPosition
from jackpot.errors import LinkGroupStopped, PositionUnverified
from tests.integration.store.conftest import ACTOR, GROUP

CERT = "cc" * 32


async def test_a_position_behind_passes_and_one_ahead_stops_the_group(
    store: RedisStore, table: TableConfig
) -> None:
    epoch, seq, durable = await store.epochs.durable_epoch(GROUP)
    assert epoch is not None and seq == 3 and durable  # no --wait-replicas: the AOF's
    where = await store.epochs.check_position(GROUP, "table t1", JournalPosition(epoch.epoch_id, 1))
    assert where == JournalPosition(epoch.epoch_id, 3)
    ahead = JournalPosition(epoch.epoch_id, 50)
    with pytest.raises(PositionUnverified):  # no mac: that table is refused, the group serves
        await store.epochs.check_position(GROUP, "table t1", ahead)
    assert (await store.catalog.get_link_group(GROUP)).stopped == ""
    verified = JournalPosition(epoch.epoch_id, 50, verified=True)
    with pytest.raises(LinkGroupStopped):  # a verified claim ahead: Redis lost steps
        await store.epochs.check_position(GROUP, "table t1", verified)
    assert (await store.catalog.get_link_group(GROUP)).stopped


async def test_a_stop_names_its_epoch_and_a_resume_starts_another(
    store: RedisStore, table: TableConfig
) -> None:
    epoch, _, _ = await store.epochs.durable_epoch(GROUP)
    assert epoch is not None
    assert await store.epochs.stop_link_group(GROUP, "another epoch", "why") == ""  # not it
    assert await store.epochs.stop_link_group(GROUP, epoch.epoch_id, "drill") == "drill"
    resumed = await store.epochs.resume_link_group(
        GROUP, epoch=epoch.epoch_id, reason="checked", actor=ACTOR, actor_cert=CERT
    )
    assert resumed.epoch != epoch.epoch_id
    current, lineage = await store.epochs.epoch_ids(GROUP)
    assert current == resumed.epoch and lineage == {resumed.epoch, epoch.epoch_id}
    assert (await store.catalog.get_link_group(GROUP)).stopped == ""


async def test_a_group_without_an_epoch_has_no_position(store: RedisStore) -> None:
    assert await store.epochs.durable_epoch("nowhere") == (None, 0, True)
    assert await store.epochs.epoch_ids("nowhere") == ("", frozenset())

"""The catalog: link groups, meters, the installation record; ids claimed once across groups,
a corrupt meter left out of a listing and reported."""

from __future__ import annotations

import pytest

from controller.domain.config import LinkGroupConfig, MeterConfig, TableConfig
from controller.store import keys
from controller.store.redis_store import RedisStore
from jackpot.errors import AlreadyExists, CorruptRecord, InvalidConfiguration, NotFound
from jackpot.money import MICROCENTS_PER_CENT
from tests.integration.store.conftest import ACTOR, GROUP, METER, RESET_CENTS


async def test_a_link_group_is_created_once_with_the_installation_record(
    store: RedisStore,
) -> None:
    assert await store.catalog.installation() is None
    created = await store.catalog.create_link_group(LinkGroupConfig(GROUP, "main"), actor=ACTOR)
    again = await store.catalog.create_link_group(LinkGroupConfig(GROUP, "main"), actor=ACTOR)
    assert created == again and created.description == "main" and created.journal.seq == 1
    installation = await store.catalog.installation()
    assert installation is not None and installation["by"] == ACTOR
    assert await store.catalog.link_group_ids() == [GROUP]
    assert await store.catalog.every_link_group_id() == [GROUP]
    assert await store.catalog.link_groups_by_shard() == {"": [GROUP]}
    with pytest.raises(NotFound, match="link group annex does not exist"):
        await store.catalog.get_link_group("annex")


async def test_a_meter_id_belongs_to_one_link_group(store: RedisStore) -> None:
    for group in (GROUP, "annex"):
        await store.catalog.create_link_group(LinkGroupConfig(group), actor=ACTOR)
    meter = MeterConfig(METER, GROUP, "caribbean-stud", RESET_CENTS, 150_000)
    state = await store.catalog.create_meter(meter, actor=ACTOR)
    assert (state.meter_id, state.reset_cents) == (METER, RESET_CENTS)
    assert state.amount_microcents == RESET_CENTS * MICROCENTS_PER_CENT  # seeded at reset
    assert await store.catalog.create_meter(meter, actor=ACTOR) == state  # idempotent
    with pytest.raises(AlreadyExists, match=f"meter {METER} exists in link group {GROUP}"):
        await store.catalog.create_meter(
            MeterConfig(METER, "annex", "caribbean-stud", RESET_CENTS, 150_000), actor=ACTOR
        )
    assert await store.catalog.meter_link_group(METER) == GROUP
    assert (await store.catalog.get_link_group(GROUP)).meter_ids == (METER,)
    with pytest.raises(NotFound, match="meter nope does not exist"):
        await store.catalog.get_meter("nope")


async def test_a_refused_creation_frees_its_claimed_id(store: RedisStore) -> None:
    with pytest.raises(NotFound):  # no such link group: the script refuses
        await store.catalog.create_meter(
            MeterConfig(METER, "ghost", "caribbean-stud", RESET_CENTS, 150_000), actor=ACTOR
        )
    assert await store.client.hget(keys.METER_INDEX, METER) is None


async def test_a_corrupt_meter_is_left_out_and_reported(
    store: RedisStore, table: TableConfig
) -> None:
    await store.catalog.create_meter(
        MeterConfig("cs-side", GROUP, "caribbean-stud", RESET_CENTS, 150_000), actor=ACTOR
    )
    await store.client.hset(keys.LinkGroupKeys(GROUP).meter("cs-side"), "value_microcents", "x")
    skipped: list[CorruptRecord] = []
    listed = await store.catalog.list_meters(GROUP, skipped=skipped)
    assert [m.meter_id for m in listed] == [METER]
    assert [error.name for error in skipped] == ["cs-side"]
    values = await store.catalog.meter_values(GROUP)
    assert [value.meter_id for value in values] == [METER]
    with pytest.raises(CorruptRecord, match="cs-side"):
        await store.catalog.get_meter("cs-side")


async def test_a_table_is_refused_a_meter_of_another_link_group(
    store: RedisStore, table: TableConfig
) -> None:
    await store.catalog.create_link_group(LinkGroupConfig("annex"), actor=ACTOR)
    other = TableConfig.progressive("t2", "caribbean-stud", "B", 7, "annex", METER, 100)
    with pytest.raises(InvalidConfiguration, match=f"meter {METER} is in link group {GROUP}"):
        await store.tables.register_table(other, actor=ACTOR)

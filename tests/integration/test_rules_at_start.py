"""``serve --rules``: a Rules Submission applied at start, idempotently."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from controller.runtime.rules_file import load_submission
from controller.runtime.server import ControllerServer, ServerConfig
from controller.store.redis_store import RedisStore
from jackpot.errors import AlreadyExists

RULES = Path(__file__).parents[2] / "deploy" / "rules"
EXAMPLE = RULES / "caribbean-stud.toml"


async def test_every_example_is_applied_and_applying_them_again_changes_nothing(
    redis_url: str,
) -> None:
    rules = tuple(load_submission(path) for path in sorted(RULES.glob("*.toml")))
    for _ in range(2):
        server = ControllerServer(
            ServerConfig(
                listen="127.0.0.1:0",
                redis_url=redis_url,
                metrics_port=None,
                rules=rules,
                first_install=True,
            )
        )
        await server.start()
        tables = await server.store.tables.list_tables()
        meters = await server.store.catalog.list_meters()
        await server.stop(grace_s=1)
        assert [t.table_id for t in tables] == ["cs-1", "cs-2", "cs-3", "pg-1", "tcp-1", "thb-1"]
        assert sorted(
            (m.meter_id, m.reset_cents, m.rate_ppm, m.reserve_rate_ppm) for m in meters
        ) == [
            ("cs-main", 1_000_000, 150_000, 50_000),
            ("fortune-main", 1_000_000, 200_000, 0),
            ("tcp-five", 2_500_000, 100_000, 0),
            ("tcp-main", 1_000_000, 200_000, 0),
        ]
        by_id = {t.table_id: t for t in tables}
        assert [o.wager for o in by_id["pg-1"].wagers] == [
            "progressive",
            "fortune_bonus",
            "insurance",
        ]
        assert by_id["thb-1"].payout_limit_cents == 5_000_000


async def test_a_submission_that_contradicts_the_store_is_refused(redis_url: str) -> None:
    store = RedisStore.from_url(redis_url)
    rules = load_submission(EXAMPLE)
    await store.catalog.create_link_group(rules.link_groups[0], actor="test")
    changed = dataclasses.replace(rules.meters[0], reset_cents=2_000_000)
    await store.catalog.create_meter(changed, actor="test")
    await store.close()
    server = ControllerServer(
        ServerConfig(listen="127.0.0.1:0", redis_url=redis_url, metrics_port=None, rules=(rules,))
    )
    with pytest.raises(AlreadyExists, match="meter cs-main exists with another"):
        await server.start()
    await server.store.close()

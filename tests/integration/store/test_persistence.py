"""The server's durability settings, and the wait they choose for every write."""

from __future__ import annotations

from controller.store.durability import has_waitaof
from controller.store.redis_store import RedisStore


async def test_the_settings_are_read_and_choose_the_wait(store: RedisStore) -> None:
    read = await store.server.persistence()
    assert read.role == "master" and read.connected_replicas == 0
    assert read.aof_enabled in (True, False, None) and read.appendfsync
    info = await store.client.info("server")
    assert read.redis_version == info["redis_version"]
    expected = "WAITAOF" if has_waitaof(read.redis_version) else "WAIT"
    assert store.gateway.replica_wait.command == expected

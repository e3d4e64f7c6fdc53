"""The floor view's liveness of tables: every call and every open stream of a table's
certificate is heard, written once per flush, never lost to a failed write."""

from __future__ import annotations

from typing import Any, cast

from controller.api.liveness import TableLiveness
from controller.store.redis_store import RedisStore
from jackpot.errors import StoreUnavailable


class _Store:
    """The store's tables aggregate, as far as the liveness uses it (``store.tables``)."""

    def __init__(self) -> None:
        self.written: list[dict[str, int]] = []
        self.fail = False
        self.tables = self

    async def record_tables_heard(self, heard: dict[str, int]) -> None:
        if self.fail:
            raise StoreUnavailable("redis is down")
        self.written.append(dict(heard))


def _liveness() -> tuple[TableLiveness, _Store]:
    store = _Store()
    return TableLiveness(cast(RedisStore, cast(Any, store))), store


async def test_calls_are_written_once_per_flush() -> None:
    liveness, store = _liveness()
    await liveness.flush()
    assert store.written == []  # nothing heard: nothing written
    liveness.heard("cs-1")
    liveness.heard("cs-1")
    liveness.heard("cs-2")
    await liveness.flush()
    assert [sorted(w) for w in store.written] == [["cs-1", "cs-2"]]
    await liveness.flush()
    assert len(store.written) == 1  # silent since: nothing more


async def test_an_open_stream_is_heard_at_every_flush() -> None:
    liveness, store = _liveness()
    with liveness.streaming("cs-1"):
        await liveness.flush()
        await liveness.flush()
    await liveness.flush()  # heard as it closed
    await liveness.flush()  # then silent
    assert [sorted(w) for w in store.written] == [["cs-1"]] * 3


async def test_a_failed_write_is_kept_for_the_next_flush() -> None:
    liveness, store = _liveness()
    liveness.heard("cs-1")
    store.fail = True
    await liveness.flush()
    store.fail = False
    await liveness.flush()
    assert [sorted(w) for w in store.written] == [["cs-1"]]

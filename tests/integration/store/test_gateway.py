"""The script gateway: a refusal's class and message, a Redis out of reach, the replica wait,
corrupt records reported once and counted."""

from __future__ import annotations

import socket

import grpc
import pytest
from redis.asyncio import Redis
from redis.exceptions import ReadOnlyError, ResponseError

from controller.api import status
from controller.domain.config import LinkGroupConfig
from controller.store import gateway
from controller.store.gateway import UNREACHABLE, ScriptGateway, script_error
from controller.store.redis_store import RedisStore
from jackpot.errors import (
    CorruptRecord,
    FailedPrecondition,
    JackpotError,
    NotConfirmed,
    RoundStateError,
    StoreUnavailable,
)
from tests.integration.store.conftest import ACTOR, GROUP


def test_a_script_refusal_is_its_class_with_the_message_only() -> None:
    refused = script_error(
        ResponseError("STALE round 7 is settled script: abc123, on @user_script:42.")
    )
    assert type(refused) is RoundStateError and str(refused) == "round 7 is settled"
    assert type(script_error(ResponseError("NOT_STOPPED it serves"))) is FailedPrecondition


def test_a_passing_server_state_is_unavailable_and_an_unknown_code_internal() -> None:
    for error in (
        ReadOnlyError("You can't write against a read only replica."),
        ResponseError("NOREPLICAS Not enough good replicas"),
    ):
        mapped = script_error(error)
        assert isinstance(mapped, StoreUnavailable) and "retry the same request" in str(mapped)
    odd = script_error(ResponseError("WEIRD host 10.0.0.7 said no"))
    assert type(odd) is JackpotError and "10.0.0.7" not in str(odd)


def test_a_corrupt_record_is_data_loss_and_a_script_names_it() -> None:
    error = CorruptRecord("meter", "m", "jp:{lg:g}:meter:m", "value_microcents is 'x'")
    assert status.status_for(error) is grpc.StatusCode.DATA_LOSS
    named = gateway.script_error(
        ResponseError("CORRUPT meter\tm\tjp:{lg:g}:meter:m\tvalue_microcents is 'x'")
    )
    assert isinstance(named, CorruptRecord) and str(named) == str(error)
    unnamed = gateway.script_error(ResponseError("CORRUPT something odd"))
    assert isinstance(unnamed, CorruptRecord)
    assert str(unnamed).startswith("a stored record is corrupt: something odd;")


async def test_a_redis_out_of_reach_is_unavailable_without_its_address() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = Redis(host="127.0.0.1", port=port, decode_responses=True)
    out_of_reach = ScriptGateway(client)
    with pytest.raises(StoreUnavailable) as refused:
        await out_of_reach.read(client.get("anything"))
    assert str(refused.value) == UNREACHABLE and str(port) not in str(refused.value)
    await out_of_reach.close()


async def test_a_write_no_replica_confirmed_is_applied_and_not_confirmed(redis_url: str) -> None:
    strict = RedisStore.from_url(redis_url, wait_replicas=1, wait_timeout_ms=50)
    try:
        with pytest.raises(NotConfirmed) as unconfirmed:
            await strict.catalog.create_link_group(LinkGroupConfig(GROUP), actor=ACTOR)
        assert "confirmed by 0 of 1 replicas" in str(unconfirmed.value)
        assert unconfirmed.value.reply is not None  # the script's answer: applied
        assert strict.gateway.replica_wait.command == "WAIT"
    finally:
        await strict.close()


async def test_each_reports_and_skips_a_corrupt_record(store: RedisStore) -> None:
    told: list[CorruptRecord] = []
    store.gateway.on_corrupt = told.append

    def decode(raw: str) -> int:
        if not raw.isdigit():
            raise CorruptRecord("thing", raw, "key", "not a number")
        return int(raw)

    skipped: list[CorruptRecord] = []
    assert store.gateway.each(decode, ["1", "x", "3"], skipped) == [1, 3]
    assert [error.name for error in skipped] == [error.name for error in told] == ["x"]
    with pytest.raises(CorruptRecord):
        store.gateway.decoded(lambda: decode("y"))
    assert [error.name for error in told] == ["x", "y"]

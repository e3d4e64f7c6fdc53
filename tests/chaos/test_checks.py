"""The chaos checks themselves: quiet when nothing went wrong, loud when money was applied
twice - even consistently, which the audit alone cannot see."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis

from controller.domain.journal_chain import entry_hash
from controller.store import keys
from tests.chaos.checks import verify
from tests.chaos.harness import LINK_GROUP, Rig, Topology, play_through


def no_fault(rig: Rig) -> None:
    """Nothing breaks."""


def journal_a_contribution_twice(rig: Rig, table_id: str) -> int:
    """Apply one of ``table_id``'s contributions a second time behind the controller's back,
    journaled and on the meter (so the audit still balances); answer its round."""
    group = keys.LinkGroupKeys(LINK_GROUP)
    client = redis.Redis.from_url(rig.redis.url, decode_responses=True)
    try:
        entries: list[tuple[str, dict[str, str]]] = client.xrange(group.journal)  # type: ignore[assignment]
        fields = next(
            f for _, f in entries if f["type"] == "contribution" and f["table"] == table_id
        )
        copy: dict[Any, Any] = {**fields, "seq": str(client.incr(group.seq))}
        # Chained as the scripts chain it: the step itself applied twice, not an edit.
        last: list[tuple[str, dict[str, str]]] = client.xrevrange(group.journal, count=1)  # type: ignore[assignment]
        copy["hash"] = entry_hash(last[0][1]["hash"], copy)
        client.xadd(group.journal, copy)
        meter = group.meter(fields["meter"])
        client.hincrby(meter, "value_microcents", int(fields["d_meter"]))
        client.hincrby(meter, "reserve_microcents", int(fields["d_reserve"]))
    finally:
        client.close()
    return int(fields["round"])


@pytest.mark.slow
def test_the_checks_pass_without_a_fault_and_catch_a_contribution_applied_twice(
    make_rig: Callable[[Topology], Rig],
) -> None:
    rig = make_rig(Topology())
    rig.start()
    marks = play_through(rig, no_fault)
    verify(rig, marks)

    round_id = journal_a_contribution_twice(rig, "cs-2")
    with pytest.raises(AssertionError) as caught:
        verify(rig, marks)
    found = str(caught.value)
    assert "audit" not in found  # the audit balances: the meter has the money too
    assert "table cs-2: its outbox tallies contributed_microcents" in found
    assert f"table cs-2 round {round_id} lockout: journal entries" in found
    assert "applied more than once?" in found
    assert "cs-1" not in found and "cs-3" not in found

"""The agent's durable outbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from jackpot.epochs import JournalPosition
from table_agent.outbox import Outbox


def test_pending_until_acknowledged(tmp_path: Path) -> None:
    box = Outbox(tmp_path, "t1")
    box.put("10:lockout", "lockout", 10, {"wagers": [[1, 100]]})
    assert [r["id"] for r in box.pending()] == ["10:lockout"]
    box.ack("10:lockout")
    assert box.pending() == []
    assert box.unfinished_rounds() == [10]
    box.put("10:settle", "settle", 10, {})
    box.ack("10:settle")
    assert box.unfinished_rounds() == []
    assert Outbox(tmp_path, "t1").last_round_id() == 10


def test_refused_lockout_is_not_an_unfinished_round(tmp_path: Path) -> None:
    box = Outbox(tmp_path, "t1")
    box.put("11:lockout", "lockout", 11, {"wagers": []})
    box.ack("11:lockout", refused="round ids must increase")
    assert box.pending() == [] and box.unfinished_rounds() == []


def test_torn_last_line_is_ignored(tmp_path: Path) -> None:
    box = Outbox(tmp_path, "t1")
    box.put("12:lockout", "lockout", 12, {"wagers": []})
    with box.path.open("a") as handle:
        handle.write('{"ack": "12:lo')
    assert [r["id"] for r in box.pending()] == ["12:lockout"]


def test_compact_keeps_the_last_round_id(tmp_path: Path) -> None:
    box = Outbox(tmp_path, "t1")
    box.put("13:lockout", "lockout", 13, {})
    with pytest.raises(RuntimeError):
        box.compact()
    box.ack("13:lockout")
    box.put("13:void", "void", 13, {"reason": "misdeal"})
    box.ack("13:void")
    box.compact()
    assert box.path.read_text().count("\n") == 1
    assert box.last_round_id() == 13


def test_positions_and_the_tally_survive_compaction(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path, "t1")
    outbox.put("1:lockout", "lockout", 1, {"wagers": []})
    outbox.ack("1:lockout", position=JournalPosition("abc", 7), sums={"contributed_microcents": 15})
    outbox.put("1:settle", "settle", 1, {})
    outbox.ack("1:settle", position=JournalPosition("abc", 9), sums={"paid_cents": 300})
    outbox.put("2:lockout", "lockout", 2, {"wagers": []})
    outbox.ack("2:lockout", refused="stale")  # refused: moves nothing
    before = outbox.tally()
    assert before == {
        "contributed_microcents": 15,
        "paid_cents": 300,
        "reversed_microcents": 0,
        "acks": 2,
    }
    outbox.compact()
    assert outbox.last_position() == JournalPosition("abc", 9)
    assert outbox.tally() == before
    assert outbox.last_round_id() == 2

"""The agent's durable outbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jackpot.epochs import JournalPosition
from jackpot.kinds import WagerKind
from table_agent.outbox import OUTBOX_VERSION, Outbox, OutboxVersionError
from table_agent.wagers import PlacedWager

PROGRESSIVE = WagerKind.PROGRESSIVE


def test_pending_until_acknowledged(tmp_path: Path) -> None:
    box = Outbox(tmp_path, "t1")
    box.put("10:lockout", "lockout", 10, {"wagers": [PlacedWager(1, PROGRESSIVE, 100).to_data()]})
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


def test_every_line_carries_the_current_version_and_reads_back(tmp_path: Path) -> None:
    box = Outbox(tmp_path, "t1")
    box.put("13:lockout", "lockout", 13, {"wagers": []})
    box.ack("13:lockout", position=JournalPosition("e1", 4), sums={"contributed_microcents": 0})
    box.put("13:void", "void", 13, {"reason": "misdeal"})
    box.ack("13:void", position=JournalPosition("e1", 5), sums={})
    box.compact()
    box.put("14:lockout", "lockout", 14, {"wagers": []})
    lines = [json.loads(line) for line in box.path.read_text(encoding="utf-8").splitlines()]
    assert [line["v"] for line in lines] == [OUTBOX_VERSION] * 2
    again = Outbox(tmp_path, "t1")
    assert again.last_position() == JournalPosition("e1", 5)
    assert [r["id"] for r in again.pending()] == ["14:lockout"]
    assert "v" not in again.pending()[0]


@pytest.mark.parametrize(
    ("line", "text"),
    [
        ({"report": {"id": "9:void"}}, "line 2 has no version"),
        ({"report": {"id": "9:void"}, "v": OUTBOX_VERSION + 1}, "line 2 has version 2;"),
        ({"report": {"id": "9:void"}, "v": "1"}, "line 2 has version '1';"),
    ],
)
def test_a_line_of_another_version_is_refused_with_its_line_number(
    tmp_path: Path, line: dict[str, object], text: str
) -> None:
    box = Outbox(tmp_path, "t1")
    box.put("8:lockout", "lockout", 8, {"wagers": []})
    with box.path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    with pytest.raises(OutboxVersionError, match=text):
        box.pending()


def test_acknowledged_answers_are_kept_through_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a restore of the controller from an older export, the outbox is the table's
    record of what it was answered (controller/actions/reconcile.py reads it): compaction keeps the
    newest answers, never the tally twice."""
    import table_agent.outbox as outbox_module

    monkeypatch.setattr(outbox_module, "KEEP_ANSWERS", 2)
    box = Outbox(tmp_path, "t1")
    for round_id in (1, 2, 3):
        box.put(f"{round_id}:lockout", "lockout", round_id, {"wagers": []})
        box.ack(
            f"{round_id}:lockout",
            position=JournalPosition("e", round_id * 10),
            sums={"contributed_microcents": 5},
            answer={"table_id": "t1", "round_id": round_id, "accepted": []},
        )
        box.put(f"{round_id}:void", "void", round_id, {"reason": "x"})
        box.ack(f"{round_id}:void", refused="no")  # a refusal is no answer
    assert [(a["id"], a["seq"]) for a in box.answered()] == [
        ("1:lockout", 10),
        ("2:lockout", 20),
        ("3:lockout", 30),
    ]
    before = box.tally()
    box.compact()
    kept = Outbox(tmp_path, "t1")
    assert [a["id"] for a in kept.answered()] == ["2:lockout", "3:lockout"]
    assert kept.answered()[-1] == {
        "id": "3:lockout",
        "phase": "lockout",
        "round_id": 3,
        "epoch": "e",
        "seq": 30,
        "answer": {"table_id": "t1", "round_id": 3, "accepted": []},
        "payload": {"wagers": []},
    }
    assert kept.tally() == before and kept.pending() == [] and kept.unfinished_rounds() == []
    assert kept.last_position() == JournalPosition("e", 30)

"""The controller's reader of a table's outbox (controller/actions/reconcile.py) reads what the
agent's outbox (table_agent/outbox.py) writes, and refuses what it does not know."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.actions import reconcile
from jackpot.epochs import JournalPosition
from table_agent.outbox import Outbox


def settled_outbox(tmp_path: Path) -> Outbox:
    box = Outbox(tmp_path, "t1")
    box.put("1:lockout", "lockout", 1, {"wagers": []})
    box.ack(
        "1:lockout",
        position=JournalPosition("e0", 5),
        answer={"table_id": "t1", "round_id": 1, "accepted": []},
    )
    box.put("1:settle", "settle", 1, {"hands": {"2": ["AS", "KS", "QS", "JS", "TS"]}})
    box.ack(
        "1:settle",
        position=JournalPosition("e0", 9),
        answer={
            "table_id": "t1",
            "round_id": 1,
            "results": [
                {"seat": 2, "hand": "royal_flush", "outcome": "paid", "amount_cents": 1000000}
            ],
        },
    )
    return box


def test_the_reader_reads_what_the_agent_keeps_before_and_after_compaction(
    tmp_path: Path,
) -> None:
    box = settled_outbox(tmp_path)
    for _ in range(2):  # as written, then compacted
        read = reconcile.read_outbox(box.path)
        assert read.table_id == "t1" and read.last == JournalPosition("e0", 9)
        assert list(read.answers) == box.answered()
        steps = reconcile.steps_after(read, "e0", 5)
        assert [(s["id"], s["seq"]) for s in steps] == [("t1:1:settle", 9)]
        assert steps[0]["awards"][0]["cards"] == "AS KS QS JS TS"
        assert steps[0]["awards"][0]["amount_cents"] == "1000000"  # money as decimal text
        assert reconcile.steps_after(read, "other-epoch", 0) == []
        box.compact()


def test_a_line_of_another_version_or_a_foreign_answer_is_refused(tmp_path: Path) -> None:
    box = settled_outbox(tmp_path)
    with box.path.open("a") as handle:
        handle.write(json.dumps({"ack": "x", "v": 2}) + "\n")
    with pytest.raises(reconcile.OutboxError, match="line 5 is not an outbox line of version 1"):
        reconcile.read_outbox(box.path)
    other = settled_outbox(tmp_path / "other")
    text = other.path.read_text().replace('"table_id": "t1"', '"table_id": "t2"')
    other.path.write_text(text)
    with pytest.raises(reconcile.OutboxError, match="not one for round 1 of table t1"):
        reconcile.steps_after(reconcile.read_outbox(other.path), "e0", 0)
    renamed = tmp_path / "t1.jsonl"
    renamed.write_text("")
    with pytest.raises(reconcile.OutboxError, match="give --table"):
        reconcile.read_outbox(renamed)


def test_the_numbering_continues_above_every_outbox_with_the_margin(tmp_path: Path) -> None:
    read = reconcile.read_outbox(settled_outbox(tmp_path).path)
    assert reconcile.seq_above([read], 9) == 9  # nothing after the export: no jump
    assert reconcile.seq_above([read], 5) == 9 + reconcile.SEQ_MARGIN
    assert reconcile.seq_above([], 5) == 5


def test_answers_that_go_backwards_are_refused(tmp_path: Path) -> None:
    box = settled_outbox(tmp_path)
    box.path.write_text(box.path.read_text().replace('"seq": 9', '"seq": 4'))
    with pytest.raises(reconcile.OutboxError, match="only go forward"):
        reconcile.steps_after(reconcile.read_outbox(box.path), "e0", 0)

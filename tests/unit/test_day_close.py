"""The gaming day's statement from a hand-written journal: the roll-forward on 23- and 25-hour
days and across UTC midnight, and each refusal naming the meter, the entry and the difference
(an entry that moved other money than it states, a broken chain, a tampered meter, an opening
that is not the previous close, a trimmed day)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, date, datetime

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.domain import day_close
from controller.domain.day_close import BalanceError
from controller.domain.gaming_day import GamingDay
from controller.domain.journal_chain import GENESIS, entry_hash
from controller.domain.records import Checkpoint, JournalEntry, MeterBalance
from controller.journal import checkpoint_signature
from controller.journal.audit import entry_problems
from controller.journal.export import ExportError
from controller.journal.restore import _compare_days_closed, _Replay

NEW_YORK_6AM = GamingDay("America/New_York", 6)
MICRO = 1_000_000
SEED = 1_000_000 * MICRO  # $10,000 in microcents


def _ms(text: str) -> int:
    """``2026-03-08 10:00`` (UTC) in ms since the Unix epoch."""
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp()) * 1000


class Journal:
    """Entries chained as the scripts chain them, each at a given UTC time."""

    def __init__(self) -> None:
        self.entries: list[JournalEntry] = []
        self.last_hash = GENESIS

    def add(
        self,
        at: str,
        kind: str,
        meter: str = "",
        d_meter: int = 0,
        d_reserve: int = 0,
        extra: dict[str, int] | None = None,
        **f: object,
    ) -> JournalEntry:
        seq = len(self.entries) + 1
        fields = {"seq": str(seq), "type": kind, "meter": meter, "d_meter": str(d_meter)}
        fields |= {"d_reserve": str(d_reserve)} | {k: str(v) for k, v in (extra or {}).items()}
        fields |= {k: str(v) for k, v in f.items()}
        fields["hash"] = entry_hash(self.last_hash, fields)
        self.last_hash = fields["hash"]
        entry = JournalEntry(f"{_ms(at) + seq}-0", seq, kind, meter, d_meter, d_reserve, fields)
        self.entries.append(entry)
        return entry

    def round(self, at: str, table: str, round_id: int, wagers: int, *, cents: int = 100) -> None:
        """A lockout of ``wagers`` $1 progressive wagers: 15% to the meter, 5% to the reserve."""
        self.add(
            at, "wagers_accepted", table=table, round=round_id,
            extra={"count:progressive": wagers, "cents:progressive": wagers * cents},
        )  # fmt: skip
        for seat in range(1, wagers + 1):
            self.add(
                at, "contribution", "m1", cents * 15 * MICRO // 100, cents * 5 * MICRO // 100,
                table=table, round=round_id, seat=seat, wager="progressive", amount_cents=cents,
            )  # fmt: skip

    def royal(self, at: str, table: str, round_id: int, meter_microcents: int, reserve: int) -> int:
        """A 100% award of the meter and its reset to $10,000 (reserve first, then seed)."""
        amount = meter_microcents // MICRO
        self.add(
            at, "award", "m1", -amount * MICRO, table=table, round=round_id, seat=1,
            wager="progressive", amount_cents=amount, meter_before_cents=amount,
            meter_after_cents=0, hand="royal_flush", award="100% of meter",
        )  # fmt: skip
        left = meter_microcents - amount * MICRO
        from_reserve = min(reserve, SEED - left)
        self.add(
            at, "reset", "m1", SEED - left, -from_reserve, table=table, round=round_id,
            operator_seed_microcents=SEED - left - from_reserve, reset_cents=SEED // MICRO,
        )  # fmt: skip
        return amount


def _floor() -> Journal:
    journal = Journal()
    journal.add("2026-03-06 12:00", "link_group_created")
    journal.add("2026-03-06 12:00", "meter_created", "m1", SEED, game="caribbean-stud")
    return journal


def test_the_spring_day_of_23_hours_rolls_forward_to_the_microcent() -> None:
    journal = _floor()
    journal.round("2026-03-06 20:00", "t1", 1, 3)  # gaming day 6 March
    # Gaming day 7 March (23 hours): 11:00 UTC on the 7th to 10:00 UTC on the 8th.
    journal.round("2026-03-07 11:00", "t1", 2, 2)
    journal.round("2026-03-08 01:30", "t2", 1, 4)  # after UTC midnight: still the 7th
    meter = SEED + 9 * 15 * MICRO
    paid = journal.royal("2026-03-08 09:59", "t2", 1, meter, 9 * 5 * MICRO)
    journal.add("2026-03-08 09:59", "fixed_award", table="t1", round=2, seat=1, amount_cents=10_000)
    journal.round("2026-03-08 10:00", "t1", 3, 1)  # 06:00 EDT: the 8th
    statement = day_close.compute("floor", NEW_YORK_6AM, date(2026, 3, 7), journal.entries)
    document = statement.document()
    assert document["hours"] == 23
    assert (document["from_ms"], document["to_ms"]) == (
        _ms("2026-03-07 11:00"),
        _ms("2026-03-08 10:00"),
    )
    [m1] = document["meters"]
    assert m1["opening_microcents"] == SEED + 3 * 20 * MICRO
    assert (m1["handle_count"], m1["handle_cents"]) == (6, 600)
    assert m1["contributions_microcents"] == 6 * 20 * MICRO
    assert (m1["percent_hits"], m1["percent_cents"]) == (1, paid)
    assert paid == 1_000_135
    seed = SEED - 9 * 5 * MICRO  # the reserve's 45 cents first
    assert (m1["resets"], m1["seed_microcents"]) == (1, seed)
    assert m1["closing_microcents"] == SEED  # the reset, the reserve spent
    assert (
        m1["opening_microcents"]
        + m1["contributions_microcents"]
        - m1["awards_microcents"]
        + m1["seed_microcents"]
        + m1["adjustments_microcents"]
        == m1["closing_microcents"]
    )
    assert m1["hit_frequency"] == "1/6"
    tables = {t["table_id"]: t for t in document["tables"]}
    assert tables["t1"]["wagers"] == {"progressive": 2}
    assert (tables["t1"]["fixed_awards"], tables["t1"]["fixed_cents"]) == (1, 10_000)
    assert (tables["t2"]["wager_count"], tables["t2"]["percent_cents"]) == (4, paid)
    assert document["totals"]["closing_microcents"] == SEED
    assert statement.through_seq == journal.entries[-3].seq  # not the 8th's lockout (2 entries)


def test_the_autumn_day_has_25_hours_and_the_next_opens_at_its_close() -> None:
    journal = Journal()
    journal.add("2026-10-31 12:00", "meter_created", "m1", SEED)
    journal.round("2026-11-01 10:30", "t1", 1, 2)  # 05:30 EST, after the change: the 31st
    journal.round("2026-11-01 11:00", "t1", 2, 1)  # 06:00 EST: 1 November
    first = day_close.compute("floor", NEW_YORK_6AM, date(2026, 10, 31), journal.entries)
    assert first.document()["hours"] == 25
    assert first.meters["m1"].handle_count == 2
    assert first.meters["m1"].seed_microcents == SEED  # created that day: the operator's seed
    document = first.document()
    journal.add(
        "2026-11-01 11:30", "day_closed", day="2026-10-31",
        statement=json.dumps(document), digest=day_close.digest(document),
    )  # fmt: skip
    second = day_close.compute("floor", NEW_YORK_6AM, date(2026, 11, 1), journal.entries)
    assert second.meters["m1"].opening_microcents == first.meters["m1"].closing_microcents
    assert second.previous_close_seq == len(journal.entries)


def test_an_award_that_moved_other_money_than_it_states_is_refused_naming_it() -> None:
    journal = _floor()
    journal.round("2026-03-07 12:00", "t1", 1, 1)
    # A consistent forgery: chained anew, but the award takes a cent more than it states.
    meter = SEED + 15 * MICRO
    journal.add(
        "2026-03-07 13:00", "award", "m1", -(meter // MICRO) * MICRO - MICRO, table="t1",
        round=1, seat=1, amount_cents=meter // MICRO, meter_before_cents=meter // MICRO,
    )  # fmt: skip
    with pytest.raises(BalanceError) as refused:
        day_close.compute("floor", NEW_YORK_6AM, date(2026, 3, 7), journal.entries)
    text = str(refused.value)
    assert "meter m1, journal #5 (award)" in text
    assert "difference -$0.01" in text
    assert "does not balance" in text


def test_an_edited_entry_and_a_tampered_meter_are_named() -> None:
    journal = _floor()
    journal.round("2026-03-07 12:00", "t1", 1, 2)
    edited = journal.entries[3]
    journal.entries[3] = JournalEntry(
        edited.entry_id, edited.seq, edited.type, edited.meter_id,
        edited.delta_meter_microcents * 2, edited.delta_reserve_microcents,
        edited.fields | {"d_meter": str(edited.delta_meter_microcents * 2)},
    )  # fmt: skip
    with pytest.raises(BalanceError) as refused:
        day_close.compute("floor", NEW_YORK_6AM, date(2026, 3, 7), journal.entries)
    assert "journal entry #4" in str(refused.value)
    assert "does not match its hash" in str(refused.value)
    honest = _floor()
    honest.round("2026-03-07 12:00", "t1", 2, 1)
    summed = SEED + 15 * MICRO
    tampered = [MeterBalance("m1", summed + 7, 5 * MICRO, 0)]
    with pytest.raises(BalanceError) as refused:
        day_close.compute(
            "floor", NEW_YORK_6AM, date(2026, 3, 7), honest.entries, meters_now=tampered
        )
    assert "meter m1: its value is $10,000.15 +7u" in str(refused.value)
    assert "difference $0.00 +7u" in str(refused.value)
    fine = [MeterBalance("m1", summed, 5 * MICRO, 0)]
    day_close.compute("floor", NEW_YORK_6AM, date(2026, 3, 7), honest.entries, meters_now=fine)


def test_an_opening_that_is_not_the_previous_close_is_refused() -> None:
    journal = _floor()
    journal.round("2026-03-06 20:00", "t1", 1, 1)
    document = day_close.compute(
        "floor", NEW_YORK_6AM, date(2026, 3, 6), journal.entries
    ).document()
    document["meters"][0]["closing_microcents"] += 1  # a close that claimed a microcent more
    journal.add("2026-03-07 12:00", "day_closed", day="2026-03-06", statement=json.dumps(document))
    with pytest.raises(BalanceError) as refused:
        day_close.compute("floor", NEW_YORK_6AM, date(2026, 3, 7), journal.entries)
    assert "meter m1: opens at $10,000.20" in str(refused.value)
    assert "(journal #5)" in str(refused.value)
    assert "difference -$0.00 +1u" in str(refused.value)


def test_a_day_counted_with_another_start_hour_than_the_previous_close_is_refused() -> None:
    journal = _floor()
    journal.round("2026-03-06 20:00", "t1", 1, 1)
    document = day_close.compute(
        "floor", NEW_YORK_6AM, date(2026, 3, 6), journal.entries
    ).document()
    journal.add("2026-03-07 12:00", "day_closed", day="2026-03-06", statement=json.dumps(document))
    with pytest.raises(BalanceError) as refused:  # 08:00 leaves two hours of the 7th uncounted
        day_close.compute(
            "floor", GamingDay("America/New_York", 8), date(2026, 3, 7), journal.entries
        )
    assert "zone or start hour changed between the closes" in str(refused.value)


def test_a_day_trimmed_from_redis_is_refused() -> None:
    journal = _floor()
    journal.round("2026-03-07 12:00", "t1", 1, 1)
    kept = journal.entries[3:]
    checkpoint = Checkpoint(seq=3, hash=journal.entries[2].fields["hash"])
    checkpoint.value_microcents["m1"] = SEED  # what #1 to #3 summed to
    with pytest.raises(BalanceError, match="trimmed from Redis"):
        day_close.compute("floor", NEW_YORK_6AM, date(2026, 3, 7), kept, checkpoint=checkpoint)
    statement = day_close.compute(
        "floor", NEW_YORK_6AM, date(2026, 3, 8), kept, checkpoint=checkpoint
    )
    assert statement.meters["m1"].opening_microcents == SEED + 20 * MICRO


def test_restore_refuses_a_closed_day_no_entry_closed() -> None:
    replay = _Replay("floor", 0, Counter())
    entry = {"seq": "9", "type": "day_closed", "day": "2026-03-07", "digest": "ab" * 32}
    _compare_days_closed(replay, [entry], {"days_closed": {"2026-03-07": f"9 {'ab' * 32}"}})
    with pytest.raises(ExportError, match="no journal entry closed it"):
        _compare_days_closed(replay, [], {"days_closed": {"2026-03-07": f"9 {'ab' * 32}"}})
    with pytest.raises(ExportError, match="closed by journal entry #9"):
        _compare_days_closed(replay, [entry], {"days_closed": {"2026-03-07": "9 " + "cd" * 32}})


def test_the_audit_checks_a_day_closed_entry_digest_signature_and_closing() -> None:
    journal = _floor()
    journal.round("2026-03-07 12:00", "t1", 1, 2)
    statement = day_close.compute("floor", NEW_YORK_6AM, date(2026, 3, 7), journal.entries)
    journal.round("2026-03-08 12:00", "t1", 2, 1)  # after the day, before the close entry
    document = statement.document()
    digest = day_close.digest(document)
    key = Ed25519PrivateKey.generate()
    fields = {
        "type": "day_closed",
        "day": "2026-03-07",
        "statement": day_close.canonical(document).decode(),
        "digest": digest,
        "after_day": json.dumps({"m1": [15 * MICRO, 5 * MICRO]}),
        "signature": key.sign(day_close.signed_message("floor", "2026-03-07", digest)).hex(),
        "signed_by": checkpoint_signature.key_id(key.public_key()),
    }
    value = Counter({"m1": SEED + 3 * 15 * MICRO})
    reserve = Counter({"m1": 3 * 5 * MICRO})
    assert entry_problems("floor", 9, fields, value, reserve, key.public_key()) == []
    altered = json.loads(fields["statement"])
    altered["meters"][0]["closing_value_microcents"] += 1
    forged = fields | {"statement": json.dumps(altered)}
    [digest_problem, closing_problem] = entry_problems(
        "floor", 9, forged, value, reserve, key.public_key()
    )
    assert "is not the one its digest names" in digest_problem
    assert "meter m1 closes with value" in closing_problem
    assert "(difference $0.00 +1u)" in closing_problem
    resigned = fields | {"digest": "0" * 64}
    problems = entry_problems("floor", 9, resigned, value, reserve, key.public_key())
    assert any("does not match its signature" in problem for problem in problems)
    other = Ed25519PrivateKey.generate().public_key()
    [problem] = entry_problems("floor", 9, fields, value, reserve, other)
    assert "not by a key given" in problem
    moved = Counter({"m1": SEED + 3 * 15 * MICRO + MICRO})  # a microcent the journal lacks
    [problem] = entry_problems("floor", 9, fields, moved, reserve, key.public_key())
    assert "journal #9 (gaming day 2026-03-07 closed): meter m1 closes with value" in problem

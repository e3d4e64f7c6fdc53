"""A link group's journal, read from Redis, grouped by table and report.

Which entries each report writes, and what they move, is read from the scripts:
controller/store/scripts/lockout.lua writes one ``contribution`` entry per wager and meter
(``d_meter`` + ``d_reserve`` microcents), settle.lua an ``award`` (percentage of a meter,
``amount_cents``, then a ``reset`` when the meter resets) or a ``fixed_award``
(``amount_cents``) per paid result, void_round.lua one ``void`` entry per contribution taken
back (``-(d_meter + d_reserve)``) and a ``round_voided`` marker. Every entry of one script
run has consecutive sequence numbers (a script is atomic).

The whole journal is read from Redis's stream: the chaos rig never runs ``jackpotctl journal
trim`` (a scenario that does must read the export as well).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import redis

from controller.store import keys
from jackpot.money import MICROCENTS_PER_CENT, format_cents
from table_agent.outbox import SUMS
from tests.chaos.agents import SUM_OF_PHASE

PHASE_OF_ENTRY = {
    "wagers_accepted": "lockout",  # the round's handle by wager kind; moves no meter
    "contribution": "lockout",
    "award": "settle",
    "reset": "settle",  # the meter refilled after a 100% award, in the same script
    "fixed_award": "settle",
    "void": "void",
    "round_voided": "void",
}
"""Which report wrote each kind of journal entry that belongs to a table's round."""


def money(name: str, amount: int) -> str:
    """``amount`` of the sum ``name`` for people: cents, or cents and microcents."""
    if not name.endswith("microcents"):
        return format_cents(amount)
    cents, rest = divmod(abs(amount), MICROCENTS_PER_CENT)
    sign = "-" if amount < 0 else ""
    return f"{sign}{format_cents(cents)}" + (f" + {rest} microcents" if rest else "")


def _amount(kind: str, entry: dict[str, str]) -> int:
    if kind == "contribution":
        return int(entry["d_meter"]) + int(entry["d_reserve"])
    if kind in ("award", "fixed_award"):
        return int(entry["amount_cents"])
    if kind == "void":
        return -(int(entry["d_meter"]) + int(entry["d_reserve"]))
    return 0  # a reset refills the meter (not the table's money); round_voided marks the void


@dataclass
class JournalReport:
    """The journal entries one report of one table wrote."""

    seqs: list[int] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    amount: int = 0  # in the unit of its phase's sum (SUM_OF_PHASE)


class Journal:
    """The journal of ``link_group_id`` and its tables' last rounds, read from Redis now."""

    def __init__(self, redis_url: str, link_group_id: str, tables: tuple[str, ...]) -> None:
        group = keys.LinkGroupKeys(link_group_id)
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        try:
            rows: list[Any] = client.xrange(group.journal) or []
            self.last_rounds = {
                table_id: int(client.hget(group.table(table_id), "last_round") or 0)
                for table_id in tables
            }
        finally:
            client.close()
        self.entries = [{str(k): str(v) for k, v in fields.items()} for _, fields in rows]
        self.reports: dict[str, dict[str, JournalReport]] = {t: {} for t in tables}
        """By table, then by report id ("<round>:<phase>", as the outbox names reports)."""
        self.strange: list[str] = []
        """Entries that move a table's money but belong to no report of a known table."""
        for entry in self.entries:
            self._add(entry)

    def _add(self, entry: dict[str, str]) -> None:
        kind = entry["type"]
        phase = PHASE_OF_ENTRY.get(kind)
        if phase is None:
            moves = int(entry["d_meter"]) != 0 or int(entry["d_reserve"]) != 0
            if "table" in entry and moves:
                self.strange.append(f"journal #{entry['seq']} moves a table's money: {entry}")
            return
        table_id = entry["table"]
        if table_id not in self.reports:
            self.strange.append(f"journal #{entry['seq']} names an unknown table: {entry}")
            return
        report = self.reports[table_id].setdefault(f"{entry['round']}:{phase}", JournalReport())
        report.seqs.append(int(entry["seq"]))
        report.types.append(kind)
        report.amount += _amount(kind, entry)

    def totals(self, table_id: str) -> dict[str, int]:
        """What the table's entries moved, named as the outbox names its sums."""
        totals = dict.fromkeys(SUMS, 0)
        for report_id, report in self.reports[table_id].items():
            totals[SUM_OF_PHASE[report_id.partition(":")[2]]] += report.amount
        return totals

    def of_type(self, kind: str) -> list[dict[str, str]]:
        """Every entry of one type, oldest first."""
        return [entry for entry in self.entries if entry["type"] == kind]

    def rounds_voided(self, table_id: str, reason: str) -> list[int]:
        """The rounds of ``table_id`` voided for ``reason``."""
        return [
            int(entry["round"])
            for entry in self.of_type("round_voided")
            if entry["table"] == table_id and entry["reason"] == reason
        ]

"""A durable outbox: every report is on disk before it is sent, and marked when acknowledged.

One JSON object a line, appended and fsynced: ``{"report": ...}`` before a report is sent,
``{"ack": id, "epoch": ..., "seq": ..., "mac": ..., "sums": {...}}`` once the controller
acknowledged it: the journal position it answered and the controller's mac over it (sent
with every later call, so that a controller whose Redis lost it stops rather than serve lost
state; the mac lets the controller trust it) and what the answer moved, in integers
(``contributed_microcents`` of a lockout, ``paid_cents`` of a settlement,
``reversed_microcents`` of a void) - the table's own record of the money, which an auditor can
hold against the controller's journal (:meth:`Outbox.tally`). At start,
:meth:`Outbox.pending` gives the reports that were never acknowledged, in order, to be sent
again with the same key; the controller answers a repeat with its original answer, so
nothing is applied twice.

A report's payload is the full content of the call, so that a re-send is identical: a lockout
``{"wagers": [PlacedWager.to_data(), ...]}`` (seat, kind, amount_cents, on_dealer_hand, envy),
a settlement :meth:`SettleReport.to_data` (hands, folded, dealer, community cards,
rest_of_round_void, base-game wins), a void ``{"reason": ...}``.

An acknowledgement also keeps the answer itself (``"answer"``: the result record of
:mod:`jackpot.results` as plain data - a lockout's accepted wagers and contributions, a
settlement's results with their amounts, meters and jackpot ids, a void's reversal), so that
after a restore of the controller's Redis from an older export the table can show exactly
what it was answered and the state lacks (:meth:`Outbox.answered`; ``jackpotctl restore
collect``, docs/journal.md "Reconciling tables after a restore"). Compaction keeps the last
:data:`KEEP_ANSWERS` of them, as ``{"answered": {...}}`` lines.

Every line carries the version it was written in (``"v"``, :data:`OUTBOX_VERSION`) and is read
through :func:`upgraded`, the one place where a line of an older version would be migrated; a
line without a version, or of a version this agent does not know, is refused with its line
number (never guessed at).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from jackpot.epochs import JournalPosition

SUMS = ("contributed_microcents", "paid_cents", "reversed_microcents")
"""What an acknowledgement records the answer moved (integers)."""

OUTBOX_VERSION = 1
"""The version of the lines this agent writes (the field ``v`` of each)."""

KEEP_ANSWERS = 10_000
"""How many acknowledged answers a compaction keeps (the newest): weeks of a busy table's
rounds, far more than lie between two exports of the controller's journal."""

_NOT_FINISHING = frozenset({"chip_count", "irregularity"})
"""Reports that leave a round to be settled or voided (an irregularity's void is told by its
acknowledgement)."""


class OutboxVersionError(ValueError):
    """An outbox line without a version, or of a version this agent does not read."""


def upgraded(record: dict[str, Any], where: str) -> dict[str, Any]:
    """The outbox line ``record`` (``where`` names it: file and line) as this agent reads it,
    without its version. Version 1 is the current one, so nothing is migrated yet; a later
    version that changes a line's shape rewrites the older shape here."""
    version = record.pop("v", None)
    if version is None:
        raise OutboxVersionError(
            f"{where} has no version; this agent reads outbox versions 1 to {OUTBOX_VERSION} "
            "and does not guess"
        )
    if not isinstance(version, int) or not 1 <= version <= OUTBOX_VERSION:
        raise OutboxVersionError(
            f"{where} has version {version!r}; this agent reads outbox versions 1 to "
            f"{OUTBOX_VERSION} (a later release wrote it: run that release)"
        )
    return record


def _line(record: dict[str, Any]) -> str:
    """One outbox line: ``record`` with its version."""
    return json.dumps({**record, "v": OUTBOX_VERSION}, sort_keys=True) + "\n"


class Outbox:
    """The outbox file of one table (``<dir>/<table_id>.outbox.jsonl``)."""

    def __init__(self, directory: Path, table_id: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{table_id}.outbox.jsonl"

    def _append(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(_line(record))
            handle.flush()
            os.fsync(handle.fileno())

    def put(self, report_id: str, phase: str, round_id: int, payload: dict[str, Any]) -> None:
        """Persist a report before it is sent."""
        self._append(
            {"report": {"id": report_id, "phase": phase, "round_id": round_id, "payload": payload}}
        )

    def ack(
        self,
        report_id: str,
        refused: str = "",
        *,
        position: JournalPosition | None = None,
        sums: dict[str, int] | None = None,
        answer: dict[str, Any] | None = None,
    ) -> None:
        """Mark a report answered: acknowledged at journal ``position`` having moved ``sums``
        (see :data:`SUMS`) with ``answer`` (the result as plain data), or ``refused`` with
        the controller's reason."""
        if refused:
            self._append({"ack": report_id, "refused": refused})
            return
        record: dict[str, Any] = {"ack": report_id, "sums": sums or {}}
        if position is not None:
            record |= _position_fields(position)
        if answer is not None:
            record["answer"] = answer
        self._append(record)

    def answered(self) -> list[dict[str, Any]]:
        """Every acknowledged answer this outbox keeps, oldest first: ``{"id", "phase",
        "round_id", "epoch", "seq", "answer", "payload"}`` (the report's payload beside
        it; an acknowledgement written before answers were kept has none, left out)."""
        reports: dict[str, dict[str, Any]] = {}
        answers: list[dict[str, Any]] = []
        for record in self._records():
            if "report" in record:
                reports[record["report"]["id"]] = record["report"]
            elif "answered" in record:
                answers.append(record["answered"])
            elif "answer" in record and not record.get("refused"):
                report = reports.get(record["ack"])
                if report is not None and "epoch" in record:
                    answers.append(
                        {
                            "id": record["ack"],
                            "phase": report["phase"],
                            "round_id": report["round_id"],
                            "epoch": record["epoch"],
                            "seq": record["seq"],
                            "answer": record["answer"],
                            "payload": report["payload"],
                        }
                    )
        return answers

    def last_position(self) -> JournalPosition:
        """The last journal position the controller acknowledged (none for a new outbox)."""
        position = JournalPosition()
        for record in self._records():
            if "epoch" in record:
                position = position.later(
                    JournalPosition(record["epoch"], record["seq"], record.get("mac", ""))
                )
        return position

    def tally(self) -> dict[str, int]:
        """What every acknowledged report moved, summed (:data:`SUMS`, plus ``acks``), over
        the whole life of the outbox (compaction keeps the sums)."""
        totals: Counter[str] = Counter({name: 0 for name in (*SUMS, "acks")})
        for record in self._records():
            if "totals" in record:
                totals.update(record["totals"])
            elif "ack" in record and not record.get("refused"):
                totals.update(record.get("sums", {}))
                totals["acks"] += 1
        return dict(totals)

    def _records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        records = []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # torn by a crash mid-write: that record was never acted on
            records.append(upgraded(record, f"{self.path} line {number}"))
        return records

    def pending(self) -> list[dict[str, Any]]:
        """Reports never acknowledged, oldest first."""
        reports: dict[str, dict[str, Any]] = {}
        for record in self._records():
            if "report" in record:
                reports[record["report"]["id"]] = record["report"]
            elif "ack" in record:
                reports.pop(record["ack"], None)
        return list(reports.values())

    def unfinished_rounds(self) -> list[int]:
        """Rounds with a lockout report but neither a settle nor a void report, nor an
        irregularity acknowledged as their void (its ``reversed_microcents``), nor any refused
        report (a chip count's report does not finish a round)."""
        phases: dict[int, set[str]] = {}
        for record in self._records():
            if "report" in record:
                report = record["report"]
                phases.setdefault(report["round_id"], set()).add(report["phase"])
            elif record.get("refused"):
                round_id, _, phase = record["ack"].partition(":")
                phases.setdefault(int(round_id), set()).add(f"refused {phase}")
            elif "reversed_microcents" in record.get("sums", {}):
                round_id, _, phase = record["ack"].partition(":")
                phases.setdefault(int(round_id), set()).add(f"voided by {phase}")
        return sorted(r for r, seen in phases.items() if seen - _NOT_FINISHING == {"lockout"})

    def last_round_id(self) -> int:
        """The highest round id this table ever reported (0 if none)."""
        ids = [r["report"]["round_id"] for r in self._records() if "report" in r]
        ids += [r["last_round_id"] for r in self._records() if "last_round_id" in r]
        return max(ids, default=0)

    def compact(self) -> None:
        """Rewrite the file as the last round id, the last journal position, the tally and
        the newest :data:`KEEP_ANSWERS` answers; only call with nothing pending."""
        if self.pending() or self.unfinished_rounds():
            raise RuntimeError("the outbox still holds reports to deliver")
        position = self.last_position()
        record = {
            "last_round_id": self.last_round_id(),
            "totals": self.tally(),
            **(_position_fields(position) if position.epoch else {}),
        }
        kept = [_line({"answered": answer}) for answer in self.answered()[-KEEP_ANSWERS:]]
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(_line(record) + "".join(kept), encoding="utf-8")
        with temporary.open("rb") as handle:
            os.fsync(handle.fileno())
        temporary.replace(self.path)


def _position_fields(position: JournalPosition) -> dict[str, Any]:
    """A position as an outbox record keeps it: epoch, seq and the controller's mac (when
    it answered one: the mac is what lets the controller trust the position later)."""
    fields: dict[str, Any] = {"epoch": position.epoch, "seq": position.seq}
    if position.mac:
        fields["mac"] = position.mac
    return fields

"""The journal's staged table changes, followed in order (docs/staged-changes.md).

A change of a table's definition staged for the next hit or reset of a meter it feeds
(``table_change_staged``) waits until the settlement that pays that hit applies it
(``table_change_applied``) or drops it (``table_change_dropped``), or an operator cancels it
(``table_change_cancelled``). :class:`TableStagedCheck` is the audit's check of that life
(controller/journal/audit.py): one change waits per table; each end names the change that waits; an
applied change gives exactly the definition that was staged, from the definition the journal
gave the table; and it is applied in the step of an award of the meter it waited for (for
``at = reset``, one that reset the meter). Pure: it reads entries' fields only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller.domain.config import TableConfig

AT = ("hit", "reset")
"""When a staged table change is applied: the meter's next hit, or its next reset."""


@dataclass(frozen=True, slots=True)
class StagedTableChange:
    """A table change waiting for a meter's next hit or reset."""

    at: str
    staged_seq: int
    meter_id: str
    table: TableConfig
    by: str
    reason: str


ENDS = frozenset({"table_change_applied", "table_change_dropped", "table_change_cancelled"})
"""The entry types that end a staged table change."""

_DEFINES = frozenset({"table_registered", "table_updated"})
"""The entries that give a table its definition (``config``), besides an applied change."""


class TableStagedCheck:
    """Follows every journal entry in order and names each staged table change's entry that
    does not fit. A change staged before the journal's first entry (a trimmed journal) is not
    known: its end is accepted, and so is a definition no entry seen gave; but a table whose
    registration the journal holds has every staging entry in it, so an end with nothing
    waiting is named."""

    def __init__(self, link_group_id: str) -> None:
        self._group = link_group_id
        self._waiting: dict[str, Mapping[str, str]] = {}  # table -> its staging entry
        self._ended: set[str] = set()  # tables whose staging or registration entry was seen
        self._config: dict[str, str] = {}  # table -> its definition, as the journal gave it
        self._awards: dict[str, tuple[str, str]] = {}  # award seq -> (meter, round)
        self._resets: dict[str, str] = {}  # meter -> the seq of its last reset
        self.problems: list[str] = []
        self.applied = 0

    def add(self, fields: Mapping[str, str]) -> None:
        """One journal entry's fields (others than these: ignored)."""
        kind, table = fields.get("type"), fields.get("table", "")
        if kind in _DEFINES:
            self._config[table] = fields.get("config", "")
            if kind == "table_registered":
                self._ended.add(table)  # every change of it is staged in this journal
        elif kind == "award":
            self._awards[fields.get("seq", "")] = (fields.get("meter", ""), fields.get("round", ""))
        elif kind == "reset":
            self._resets[fields.get("meter", "")] = fields.get("seq", "")
        elif kind == "table_change_staged":
            if table in self._waiting:
                self._problem(
                    fields, f"stages a change while #{self._waiting[table].get('seq')} waits"
                )
            known = self._config.get(table)
            if known is not None and known != fields.get("old_config"):
                self._problem(fields, "is staged against another definition than the table's")
            self._waiting[table] = fields
        elif kind in ENDS:
            self._end(table, fields)

    def _end(self, table: str, fields: Mapping[str, str]) -> None:
        staged = self._waiting.pop(table, None)
        if staged is None:
            if table in self._ended:  # registered or ended in this journal: none waits
                self._problem(fields, f"ends staged change #{fields.get('staged_seq')}, none waits")
            return
        self._ended.add(table)
        if staged.get("seq") != fields.get("staged_seq"):
            self._problem(
                fields,
                f"ends staged change #{fields.get('staged_seq')} but #{staged.get('seq')} waits",
            )
            return
        if fields.get("type") == "table_change_cancelled":
            return
        if fields.get("at_meter") != staged.get("at_meter"):
            self._problem(fields, "is ended by a hit of another meter than it waited for")
            return
        meter, round_id = self._awards.get(fields.get("hit_seq", ""), ("", ""))
        if meter != staged.get("at_meter") or round_id != fields.get("round"):
            self._problem(fields, f"names hit #{fields.get('hit_seq')}, no award of its meter")
            return
        if fields.get("type") != "table_change_applied":
            return
        self.applied += 1
        for name in ("old_config", "config", "at"):
            if fields.get(name) != staged.get(name):
                self._problem(fields, f"applies another {name} than was staged")
                return
        if staged.get("at") == "reset" and not (
            int(self._resets.get(str(meter), "0") or 0) > int(fields.get("hit_seq") or 0)
        ):
            self._problem(fields, "is applied at a hit that did not reset the meter")
            return
        self._config[table] = fields.get("config", "")

    def _problem(self, fields: Mapping[str, str], text: str) -> None:
        where = f"{self._group}/table {fields.get('table', '')}: journal #{fields.get('seq', '?')}"
        self.problems.append(f"{where} ({fields.get('type')}) {text}")


def describe(staged: StagedTableChange | None) -> str:
    """A table's staged change for people (``tables list``, the floor view, reports): "" when
    none, e.g. "at the next reset of cs-main (journal #12): paytable C; staged by ...: why"."""
    if staged is None:
        return ""
    wagers = ", ".join(f"{o.wager} {o.paytable.name}" for o in staged.table.wagers)
    return (
        f"at the next {staged.at} of meter {staged.meter_id} (journal #{staged.staged_seq}): "
        f"{staged.table.seats} seats, wagers {wagers}, meters "
        f"{', '.join(staged.table.meter_ids) or 'none'}; staged by {staged.by}: {staged.reason}"
    )

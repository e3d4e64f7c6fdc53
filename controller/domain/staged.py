"""The journal's staged meter changes, followed in order (docs/staged-changes.md).

A change staged for a meter's next hit or reset (``meter_change_staged``) waits until the step
that pays the hit applies it (``meter_change_applied``) or drops it (``meter_change_dropped``),
or an operator cancels it (``meter_change_cancelled``). :class:`StagedCheck` is the offline
audit's check of that life (controller/journal/audit.py): one change waits per meter; each end names
the change that waits; an applied change gives exactly the parameters that were staged; and
when the hit reset the meter, the reset was to the new reset amount (the money the reset put
on the meter is what the change says). Pure: it reads entries' fields only.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.domain.records import MeterState
from jackpot.money import format_cents, format_percent

STAGED_PARAMETERS = ("reset_cents", "rate_ppm", "reserve_rate_ppm", "ceiling_cents")
"""The meter parameters a staged change sets (cents; parts per million of each wager)."""

ENDS = frozenset({"meter_change_applied", "meter_change_dropped", "meter_change_cancelled"})
"""The entry types that end a staged change."""


class StagedCheck:
    """Follows the journal's staged-change entries (every entry, in order) and names each one
    that does not fit: a second change staged while one waits, an end of a change that does
    not wait, an applied change with other parameters than staged, or a hit's reset to
    another amount than the applied change's reset. A change staged before the journal's
    first entry (a trimmed journal) is not known: its end is accepted; but a meter whose
    creation the journal holds has every staging entry in it, so an end with nothing waiting
    is named."""

    def __init__(self, link_group_id: str) -> None:
        self._group = link_group_id
        self._waiting: dict[str, Mapping[str, str]] = {}  # meter -> its staging entry
        self._ended: set[str] = set()  # meters created, or whose staging entry ended, here
        self._last_reset: dict[str, Mapping[str, str]] = {}  # meter -> its last reset entry
        self.problems: list[str] = []
        self.applied = 0

    def add(self, fields: Mapping[str, str]) -> None:
        """One journal entry's fields (others than the staged changes' and resets: ignored)."""
        kind, meter = fields.get("type"), fields.get("meter", "")
        if kind == "reset":
            self._last_reset[meter] = fields
        elif kind == "meter_created":
            self._ended.add(meter)  # every change of it is staged in this journal
        elif kind == "meter_change_staged":
            if meter in self._waiting:
                self._problem(
                    fields, f"stages a change while #{self._waiting[meter].get('seq')} waits"
                )
            self._waiting[meter] = fields
        elif kind in ENDS:
            self._end(meter, fields)

    def _end(self, meter: str, fields: Mapping[str, str]) -> None:
        staged = self._waiting.pop(meter, None)
        if staged is None:
            if meter in self._ended:  # created or ended in this journal: none waits
                self._problem(fields, f"ends staged change #{fields.get('staged_seq')}, none waits")
            return
        self._ended.add(meter)
        if staged.get("seq") != fields.get("staged_seq"):
            self._problem(
                fields,
                f"ends staged change #{fields.get('staged_seq')} but #{staged.get('seq')} waits",
            )
            return
        if fields.get("type") != "meter_change_applied":
            return
        self.applied += 1
        for name in STAGED_PARAMETERS:
            for when in ("old", "new"):
                if fields.get(f"{when}_{name}") != staged.get(f"{when}_{name}"):
                    self._problem(fields, f"applies another {when}_{name} than was staged")
                    return
        reset = self._last_reset.get(meter)
        try:
            hit_seq = int(fields.get("hit_seq") or 0)
            reset_seq = int(reset.get("seq") or 0) if reset is not None else 0
        except ValueError:  # named, and the audit goes on
            self._problem(fields, "names a hit or a reset whose journal number does not read")
            return
        if reset is not None and reset_seq > hit_seq:
            if reset.get("reset_cents") != fields.get("new_reset_cents"):
                self._problem(
                    fields,
                    f"applies reset {fields.get('new_reset_cents')} cents but the hit's reset "
                    f"(#{reset.get('seq')}) was to {reset.get('reset_cents')}",
                )

    def _problem(self, fields: Mapping[str, str], text: str) -> None:
        where = f"{self._group}/{fields.get('meter', '')}: journal #{fields.get('seq', '?')}"
        self.problems.append(f"{where} ({fields.get('type')}) {text}")


def describe(meter: MeterState) -> str:
    """A meter's staged change and wind-down for people (the floor view, reports): "" when
    neither, e.g. "at the next reset (journal #12): reset $10,500.00, rate 12.5%, reserve
    rate 0%, ceiling none; staged by ...: why"."""
    parts: list[str] = []
    staged = meter.staged_change
    if staged is not None:
        ceiling = format_cents(staged.new_ceiling_cents) if staged.new_ceiling_cents else "none"
        parts.append(
            f"at the next {staged.at} (journal #{staged.staged_seq}): reset "
            f"{format_cents(staged.new_reset_cents)}, rate {format_percent(staged.new_rate_ppm)}%, "
            f"reserve rate {format_percent(staged.new_reserve_rate_ppm)}%, ceiling {ceiling}; "
            f"staged by {staged.by}: {staged.reason}"
        )
    if meter.wound_down_seq:
        parts.append(
            f"winding down since journal #{meter.wound_down_seq}: no contributions; stays "
            "until won or retired"
        )
    return "; ".join(parts)

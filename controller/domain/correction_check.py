"""The audit's replay of corrections of a settled round (docs/corrections.md § Audit).

:class:`CorrectionCheck` follows the journal's correction entries in order and names every
one whose sums do not add up: a request's totals (what is paid, recovered and funded by the
operator) against its lines; an application (``round_corrected``) against the request it
names (the same lines and totals, decided once); each ``correction_contribution`` against the
wager change it applies (a removed wager's exact recorded contribution, an added wager's
contribution of at most its amount, and nothing else); each ``correction_award`` against a
line awaiting validation with that exact positive difference. The meters' sums themselves are
the audit's (every entry's ``d_meter``/``d_reserve``). Amounts are cents, contributions
microcents. A correction requested before a trimmed journal's first entry is checked by its
application's own lines only.
"""

from __future__ import annotations

import json
from typing import Any

PERCENT_BASES = frozenset(
    {
        "kept",
        "meter_before_original_award",
        "meter_after_original_settlement",
        "recovered_from_seat",
    }
)
"""The bases of a percentage line (its difference is never the live meter's)."""


def totals(lines: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(paid to the seats, recovered from them, funded by the operator) of a correction's
    lines, in cents."""
    pay = recover = funded = 0
    for line in lines:
        delta = int(line["due_cents"]) - int(line["paid_cents"])
        if delta > 0:
            pay += delta
            if line.get("basis") in PERCENT_BASES:
                funded += delta
        else:
            recover -= delta
    return pay, recover, funded


def _lines(value: str) -> list[dict[str, Any]]:
    decoded = json.loads(value or "[]")
    return decoded if isinstance(decoded, list) else []  # cjson: an empty array is {}


class CorrectionCheck:
    """Follows the correction entries of one link group's journal (every entry; others are
    ignored) and lists what does not add up in :attr:`problems`."""

    def __init__(self, link_group_id: str) -> None:
        self._group = link_group_id
        self._requests: dict[str, dict[str, str]] = {}  # correction id -> its request entry
        self._applied: set[str] = set()
        self._moved: set[tuple[str, str, str, bool, str]] = set()  # contributions journaled
        self._held: dict[str, list[int]] = {}  # correction id -> award cents not yet held
        self.problems: list[str] = []
        self.corrections = 0

    def _where(self, fields: dict[str, str]) -> str:
        return f"{self._group}: the {fields.get('type')} at journal #{fields.get('seq', '?')}"

    def add(self, fields: dict[str, str]) -> None:
        """One journal entry's fields."""
        kind = fields.get("type")
        try:
            if kind == "correction_requested":
                self._requested(fields)
            elif kind == "correction_contribution":
                self._contribution(fields)
            elif kind == "round_corrected":
                self._corrected(fields)
            elif kind == "correction_award":
                self._award(fields)
        except (KeyError, ValueError, TypeError) as error:
            self.problems.append(f"{self._where(fields)} does not read: {error}")

    def _check_totals(self, fields: dict[str, str], lines: list[dict[str, Any]]) -> None:
        found = totals(lines)
        declared = (
            int(fields["pay_cents"]),
            int(fields["recover_cents"]),
            int(fields["operator_funded_cents"]),
        )
        if found != declared:
            self.problems.append(
                f"{self._where(fields)} declares pay, recover and operator-funded cents "
                f"{declared} but its lines sum to {found}"
            )

    def _requested(self, fields: dict[str, str]) -> None:
        self._check_totals(fields, _lines(fields["lines"]))
        self._requests[f"{self._group}:{fields['seq']}"] = fields

    def _contribution(self, fields: dict[str, str]) -> None:
        correction_id = fields["correction"]
        request = self._requests.get(correction_id)
        if request is None:
            return  # requested before the journal's first entry (trimmed)
        d = int(fields["d_meter"]) + int(fields["d_reserve"])
        seat, wager, removed = fields["seat"], fields["wager"], fields["removed"] == "1"
        changes = [
            w
            for w in _lines(request["wagers"])
            if str(w["seat"]) == seat and w["kind"] == wager and bool(w["removed"]) == removed
        ]
        meter = fields.get("meter", "")
        moved = (correction_id, seat, wager, removed, meter)
        if moved in self._moved:  # one entry per wager and meter, once
            self.problems.append(
                f"{self._where(fields)} moves seat {seat}'s {wager} wager on meter {meter} for "
                f"correction {correction_id} again"
            )
            return
        self._moved.add(moved)
        allowed = []
        for change in changes:
            for number, meter_id in enumerate(change.get("meter_ids") or []):
                if meter_id != meter:
                    continue
                if removed:
                    allowed.append(
                        -int(change["to_meter_microcents"][number])
                        - int(change["to_reserve_microcents"][number])
                    )
                else:
                    allowed.append(int(change["amount_cents"]) * 1_000_000)  # at most the wager
        if removed and d not in allowed:
            self.problems.append(
                f"{self._where(fields)} moves {d} microcents of meter {meter}, not the recorded "
                f"contribution of seat {seat}'s {wager} wager that correction {correction_id} "
                "removes"
            )
        elif not removed and not any(0 <= d <= cap for cap in allowed):
            self.problems.append(
                f"{self._where(fields)} adds {d} microcents to meter {meter}: correction "
                f"{correction_id} adds no such wager, or not that much"
            )

    def _corrected(self, fields: dict[str, str]) -> None:
        correction_id = fields["correction"]
        self.corrections += 1
        lines = _lines(fields["lines"])
        self._check_totals(fields, lines)
        if correction_id in self._applied:
            self.problems.append(f"{self._where(fields)} applies correction {correction_id} again")
        self._applied.add(correction_id)
        request = self._requests.get(correction_id)
        if request is None:
            return  # requested before the journal's first entry (trimmed)
        requester = (request.get("by", ""), request.get("by_cert", ""))
        if (
            fields.get("requested_by") != requester[0]
            or fields.get("by") == requester[0]
            or (requester[1] and fields.get("by_cert") == requester[1])
        ):
            self.problems.append(
                f"{self._where(fields)} is applied by {fields.get('by')}, not by a second "
                f"identity after {requester[0]} who requested correction {correction_id}"
            )
        if lines != _lines(request["lines"]) or (fields["table"], fields["round"]) != (
            request["table"],
            request["round"],
        ):
            self.problems.append(
                f"{self._where(fields)} applies other lines, or another round, than correction "
                f"{correction_id} requested (journal #{request['seq']})"
            )

    def _award(self, fields: dict[str, str]) -> None:
        correction_id = fields["correction"]
        request = self._requests.get(correction_id)
        if request is None:
            return
        amount = int(fields["amount_cents"])
        due = [
            int(line["due_cents"]) - int(line["paid_cents"])
            for line in _lines(request["lines"])
            if str(line["seat"]) == fields["seat"]
            and line["kind"] == fields["wager"]
            and line.get("needs_validation")
        ]
        held = self._held.setdefault(
            correction_id,
            [
                int(line["due_cents"]) - int(line["paid_cents"])
                for line in _lines(request["lines"])
                if line.get("needs_validation")
            ],
        )
        if correction_id not in self._applied or amount not in due or amount not in held:
            self.problems.append(
                f"{self._where(fields)} holds {amount} cents for seat {fields['seat']}, which "
                f"no line of correction {correction_id} awaiting validation is due (or it "
                "was held already, or the correction was not applied first)"
            )
        else:
            held.remove(amount)  # each line is held once

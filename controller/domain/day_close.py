"""The gaming day's statement: a link group's liability rolled forward from the journal.

Pure: the caller gives the link group's journal entries in order (from its first entry or its
trim checkpoint on) and, when it has them, the meters as Redis holds them now; nothing here
does I/O. The gaming day is :class:`controller.domain.gaming_day.GamingDay`'s window
``[from_ms, to_ms)``; an entry belongs to it by the millisecond Redis wrote it (its stream id).

Money is integers only: microcents (1 cent = 1,000,000) for everything a meter or reserve
holds or moves, cents where the journal writes cents (wagers, awards). A meter's **liability**
is what it holds for the players: its value plus its reserve. Per meter, the statement holds

    opening + contributions - awards + seed + adjustments = closing

where ``opening`` is the liability the journal sums to before the day, ``contributions`` the
wagers' contributions (meter, reserve and overflow) less those voids took back,
``awards`` the percentage and must-hit-by (mystery) awards at the amounts their entries state
(``amount_cents``) less those a supervisor rejected or a void reversed, ``seed`` the operator's
money (the seed of a meter created that day, each reset's ``operator_seed_microcents``, less
what a rejection undid), ``adjustments`` every other movement (approved adjustments,
transfers, retirements) by entry type, and ``closing`` the liability the journal sums to at
the day's end. Awards and seeds are taken from what their entries *say*, the closing from the
deltas the entries *moved*: an entry whose deltas disagree with what it says makes the
roll-forward miss, and :func:`compute` refuses, naming the meter, the entry and the
difference. It refuses as well (:class:`BalanceError`, every finding listed) a journal whose
hash chain breaks (:class:`controller.domain.journal_chain.ChainCheck`), an award whose
``meter_before_cents`` is not the meter the journal sums to there, meters in Redis that are
not what the whole journal sums to, and an opening that is not the previous day's closing
(when that day was closed: its ``day_closed`` entry).

The statement is one JSON document (:meth:`Statement.document`); its digest
(:func:`digest`, SHA-256 of the compact sorted JSON) is what the checkpoint key signs
(:func:`signed_message`) and what the ``day_closed`` journal entry records.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from fractions import Fraction
from typing import Any

from controller.domain.gaming_day import GamingDay
from controller.domain.journal_chain import GENESIS, ChainCheck
from controller.domain.records import Checkpoint, JournalEntry, MeterBalance
from controller.domain.reports import CENTS_PREFIX, COUNT_PREFIX, entry_ms
from jackpot.errors import FailedPrecondition
from jackpot.money import MICROCENTS_PER_CENT

STATEMENT_KIND = "jackpot-day-statement-v1"
"""The statement document's ``kind`` and the domain of its signature."""
ENTRY_TYPE = "day_closed"
"""The journal entry a day close writes (``controller/store/scripts/close_day.lua``)."""
MAX_FINDINGS = 20
"""The most differences a refusal lists (the first ones, in journal order)."""

_AWARDS = ("award", "mystery_hit")
_RETURNS = ("jackpot_rejected", "jackpot_voided")


class BalanceError(FailedPrecondition):
    """The day does not balance: ``findings`` names each place (meter, entry, difference)."""

    def __init__(self, link_group_id: str, day: date, findings: Sequence[str]) -> None:
        self.findings = list(findings)
        shown = "; ".join(self.findings[:MAX_FINDINGS])
        more = len(self.findings) - MAX_FINDINGS
        super().__init__(
            f"link group {link_group_id}: gaming day {day} is not closed, it does not balance: "
            f"{shown}" + (f" (and {more} more)" if more > 0 else "")
        )


def money(microcents: int) -> str:
    """Microcents for a finding: ``$12.34`` or ``$12.34 +56u`` (u: microcents), signed."""
    cents, rest = divmod(abs(microcents), MICROCENTS_PER_CENT)
    sign = "-" if microcents < 0 else ""
    return f"{sign}${cents // 100:,}.{cents % 100:02d}" + (f" +{rest}u" if rest else "")


@dataclass
class MeterDay:
    """One meter's gaming day. Movements in microcents unless named ``_cents``.

    ``handle_count``/``handle_cents``: the wagers that fed it (less voided ones).
    ``contributions_microcents``: net of ``voided_microcents`` (negative: taken back).
    ``percent_*``, ``mystery_*``: the awards by kind; ``returned_*``: awards given back
    (rejected, or voided with their round). ``awards_microcents``: what the awards took,
    net. ``resets``: refills after a 100% award or a must-hit-by hit; ``seed_microcents``:
    the operator's money. ``adjustments``: every other movement by entry type."""

    meter_id: str
    opening_value_microcents: int = 0
    opening_reserve_microcents: int = 0
    handle_count: int = 0
    handle_cents: int = 0
    contributions_microcents: int = 0
    voided_microcents: int = 0
    percent_hits: int = 0
    percent_cents: int = 0
    mystery_hits: int = 0
    mystery_cents: int = 0
    returned_hits: int = 0
    returned_cents: int = 0
    resets: int = 0
    seed_microcents: int = 0
    adjustments: dict[str, int] = field(default_factory=dict)
    closing_value_microcents: int = 0
    closing_reserve_microcents: int = 0

    @property
    def opening_microcents(self) -> int:
        """The liability before the day: value plus reserve."""
        return self.opening_value_microcents + self.opening_reserve_microcents

    @property
    def closing_microcents(self) -> int:
        """The liability at the day's end, as the journal's deltas sum."""
        return self.closing_value_microcents + self.closing_reserve_microcents

    @property
    def hits(self) -> int:
        """Hits that stand (percentage and must-hit-by, less given back)."""
        return self.percent_hits + self.mystery_hits - self.returned_hits

    @property
    def awards_microcents(self) -> int:
        """What the awards that stand took from the meter."""
        cents = self.percent_cents + self.mystery_cents - self.returned_cents
        return cents * MICROCENTS_PER_CENT

    @property
    def adjustments_microcents(self) -> int:
        """Every other movement, summed."""
        return sum(self.adjustments.values())

    @property
    def rolled_microcents(self) -> int:
        """opening + contributions - awards + seed + adjustments."""
        return (
            self.opening_microcents
            + self.contributions_microcents
            - self.awards_microcents
            + self.seed_microcents
            + self.adjustments_microcents
        )

    @property
    def hit_frequency(self) -> Fraction | None:
        """Hits per wager that fed the meter (None without wagers)."""
        return Fraction(self.hits, self.handle_count) if self.handle_count > 0 else None


@dataclass
class TableDay:
    """One table's gaming day: its handle (wagers accepted at lockout less those of voided
    rounds, count and cents, by wager kind), its contributions (microcents) and its awards
    by kind (cents; ``fixed_*`` paid by the table, not from a meter)."""

    table_id: str
    wagers: dict[str, int] = field(default_factory=dict)
    handle_cents: dict[str, int] = field(default_factory=dict)
    contributions_microcents: int = 0
    percent_hits: int = 0
    percent_cents: int = 0
    mystery_hits: int = 0
    mystery_cents: int = 0
    fixed_awards: int = 0
    fixed_cents: int = 0
    returned_hits: int = 0
    returned_cents: int = 0

    @property
    def wager_count(self) -> int:
        """Every wager that stood."""
        return sum(self.wagers.values())

    @property
    def awards(self) -> int:
        """Awards that stand, every kind."""
        return self.percent_hits + self.mystery_hits + self.fixed_awards - self.returned_hits

    @property
    def hit_frequency(self) -> Fraction | None:
        """Awards per wager (None without wagers)."""
        count = self.wager_count
        return Fraction(self.awards, count) if count > 0 else None


@dataclass
class Statement:
    """A link group's statement of one gaming day (see the module)."""

    link_group_id: str
    day: date
    gaming_day: GamingDay
    from_ms: int
    to_ms: int
    first_seq: int = 0
    """The day's first entry (0: none)."""
    through_seq: int = 0
    """The last entry of the day or before it: the closing is the journal up to it."""
    meters: dict[str, MeterDay] = field(default_factory=dict)
    tables: dict[str, TableDay] = field(default_factory=dict)
    previous_close_seq: int = 0
    """The ``day_closed`` entry of the previous day the opening was checked against (0:
    that day was not closed). Not in the document: closing the previous day later must not
    change this day's statement."""

    def document(self) -> dict[str, Any]:
        """The statement as JSON data: integers, frequencies as "n/d" strings."""
        meters = []
        for meter in sorted(self.meters.values(), key=lambda m: m.meter_id):
            row = asdict(meter)
            row |= {
                "opening_microcents": meter.opening_microcents,
                "awards_microcents": meter.awards_microcents,
                "adjustments_microcents": meter.adjustments_microcents,
                "closing_microcents": meter.closing_microcents,
                "hits": meter.hits,
                "hit_frequency": _ratio(meter.hit_frequency),
            }
            meters.append(row)
        tables = []
        for table in sorted(self.tables.values(), key=lambda t: t.table_id):
            row = asdict(table) | {
                "wager_count": table.wager_count,
                "awards": table.awards,
                "hit_frequency": _ratio(table.hit_frequency),
            }
            tables.append(row)
        return {
            "kind": STATEMENT_KIND,
            "link_group": self.link_group_id,
            "gaming_day": self.day.isoformat(),
            "zone": self.gaming_day.zone,
            "start_hour": self.gaming_day.start_hour,
            "from_ms": self.from_ms,
            "to_ms": self.to_ms,
            "hours": self.gaming_day.hours(self.day),
            "first_seq": self.first_seq,
            "through_seq": self.through_seq,
            "meters": meters,
            "tables": tables,
            "totals": totals(meters),
        }


_TOTALLED = (
    "opening_microcents",
    "handle_count",
    "handle_cents",
    "contributions_microcents",
    "voided_microcents",
    "percent_hits",
    "percent_cents",
    "mystery_hits",
    "mystery_cents",
    "returned_hits",
    "returned_cents",
    "resets",
    "seed_microcents",
    "awards_microcents",
    "adjustments_microcents",
    "closing_microcents",
    "hits",
)


def totals(meter_rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The link group's total of every summed column of the meters' rows."""
    summed: Counter[str] = Counter()
    for row in meter_rows:
        for name in _TOTALLED:
            summed[name] += int(row[name])
    return {name: summed[name] for name in _TOTALLED}


def _ratio(value: Fraction | None) -> str:
    return "" if value is None else f"{value.numerator}/{value.denominator}"


def canonical(document: Mapping[str, Any]) -> bytes:
    """The bytes a statement is digested as: compact JSON, keys sorted."""
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def digest(document: Mapping[str, Any]) -> str:
    """The statement's SHA-256 (64 hex digits) over :func:`canonical`."""
    return hashlib.sha256(canonical(document)).hexdigest()


def signed_message(link_group_id: str, day: str, statement_digest: str) -> bytes:
    """What the checkpoint key signs for a day's statement."""
    return canonical(
        {
            "domain": STATEMENT_KIND,
            "link_group": link_group_id,
            "gaming_day": day,
            "digest": statement_digest,
        }
    )


@dataclass
class _Walk:
    """The running sums of a walk over the journal, and what it found wrong."""

    value: Counter[str]
    reserve: Counter[str]
    findings: list[str] = field(default_factory=list)
    closes: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    """Each closed day's ``day_closed`` entry met: its seq and statement."""


def compute(
    link_group_id: str,
    gaming_day: GamingDay,
    day: date,
    entries: Iterable[JournalEntry],
    *,
    checkpoint: Checkpoint | None = None,
    meters_now: Sequence[MeterBalance] | None = None,
    head_seq: int | None = None,
) -> Statement:
    """The statement of gaming ``day`` of ``link_group_id``, from ``entries`` (every entry
    of the journal in order, after ``checkpoint`` when it was trimmed); :class:`BalanceError`
    naming where when it does not balance. ``meters_now``: the meters as Redis holds them at
    ``head_seq`` (the journal's last entry read), checked against the whole journal's sums;
    None for an export, whose caller checks its snapshot the same way."""
    start = checkpoint or Checkpoint()
    from_ms, to_ms = gaming_day.window_ms(day)
    statement = Statement(link_group_id, day, gaming_day, from_ms, to_ms)
    walk = _Walk(Counter(start.value_microcents), Counter(start.reserve_microcents))
    chain = ChainCheck(start.seq, start.hash if start.seq else GENESIS)
    first, last = _walk_entries(statement, walk, chain, entries)
    if start.seq and (first is None or entry_ms(first) >= from_ms):
        walk.findings.insert(
            0,
            f"the journal up to #{start.seq} was trimmed from Redis and the day may hold some "
            "of it: close from the export (--file DIR)",
        )
    chain.finish(head_seq if head_seq is not None else (last.seq if last else start.seq))
    walk.findings += [str(problem) for problem in chain.problems]
    _check_roll_forward(statement, walk)
    _check_previous(statement, walk)
    if meters_now is not None:
        walk.findings += meter_differences(walk.value, walk.reserve, meters_now)
    if walk.findings:
        raise BalanceError(link_group_id, day, walk.findings)
    return statement


def _walk_entries(
    statement: Statement, walk: _Walk, chain: ChainCheck, entries: Iterable[JournalEntry]
) -> tuple[JournalEntry | None, JournalEntry | None]:
    """Walk the journal: the opening and closing sums, the day's figures, the closes met;
    answer the first and last entries walked."""
    from_ms, to_ms = statement.from_ms, statement.to_ms
    first: JournalEntry | None = None
    last: JournalEntry | None = None
    opened = closed = False
    rounds: dict[tuple[str, str], dict[str, str]] = {}
    for entry in entries:
        chain.add(entry.entry_id, entry.fields)
        first = first or entry
        if entry.problem:
            walk.findings.append(f"journal #{entry.seq}: {entry.problem}")
        at = entry_ms(entry)
        if at >= from_ms and not opened:
            _open(statement, walk)
            opened = True
        if at >= to_ms and not closed:
            _close(statement, walk)
            closed = True
        if from_ms <= at < to_ms:
            statement.first_seq = statement.first_seq or entry.seq
            _day_entry(statement, walk, entry, rounds)
        elif at < from_ms:
            _check_award_meter(walk, entry)
        if at < to_ms:
            statement.through_seq = entry.seq
        _sum(walk, entry)
        if entry.type == ENTRY_TYPE:
            _closed(walk, entry)
        last = entry
    if not opened:
        _open(statement, walk)
    if not closed:
        _close(statement, walk)
    return first, last


def _open(statement: Statement, walk: _Walk) -> None:
    """Each meter's opening: the sums before the day's first millisecond."""
    for meter_id in sorted(set(walk.value) | set(walk.reserve)):
        meter = _meter(statement, meter_id)
        meter.opening_value_microcents = walk.value[meter_id]
        meter.opening_reserve_microcents = walk.reserve[meter_id]


def _close(statement: Statement, walk: _Walk) -> None:
    """Each meter's closing: the sums before the next day's first millisecond."""
    for meter_id in sorted(set(walk.value) | set(walk.reserve)):
        meter = _meter(statement, meter_id)
        meter.closing_value_microcents = walk.value[meter_id]
        meter.closing_reserve_microcents = walk.reserve[meter_id]


def _sum(walk: _Walk, entry: JournalEntry) -> None:
    if entry.meter_id:
        walk.value[entry.meter_id] += entry.delta_meter_microcents
        walk.reserve[entry.meter_id] += entry.delta_reserve_microcents


def _closed(walk: _Walk, entry: JournalEntry) -> None:
    try:
        document = json.loads(entry.fields.get("statement", ""))
        day = str(document["gaming_day"])
    except (ValueError, KeyError, TypeError):
        walk.findings.append(
            f"journal #{entry.seq}: a day_closed entry whose statement is not JSON"
        )
        return
    walk.closes[day] = (entry.seq, document)


def _check_award_meter(walk: _Walk, entry: JournalEntry) -> None:
    """An award states the meter it was computed from: it must be the journal's sum there."""
    if entry.type == "award" and entry.meter_id:
        stated = int(entry.fields.get("meter_before_cents", "0"))
        summed = walk.value[entry.meter_id] // MICROCENTS_PER_CENT
        if stated != summed:
            walk.findings.append(
                f"meter {entry.meter_id}, journal #{entry.seq}: the award was computed from a "
                f"meter of {money(stated * MICROCENTS_PER_CENT)} but the journal sums it to "
                f"{money(walk.value[entry.meter_id])} there (difference "
                f"{money(stated * MICROCENTS_PER_CENT - walk.value[entry.meter_id])})"
            )


def _meter(statement: Statement, meter_id: str) -> MeterDay:
    if meter_id not in statement.meters:
        statement.meters[meter_id] = MeterDay(meter_id)
    return statement.meters[meter_id]


def _table(statement: Statement, table_id: str) -> TableDay:
    if table_id not in statement.tables:
        statement.tables[table_id] = TableDay(table_id)
    return statement.tables[table_id]


def _stated(walk: _Walk, entry: JournalEntry, what: str, stated: int) -> None:
    """An entry whose deltas are not the liability it states it moved."""
    moved = entry.delta_meter_microcents + entry.delta_reserve_microcents
    if moved != stated:
        walk.findings.append(
            f"meter {entry.meter_id}, journal #{entry.seq} ({entry.type}): {what} "
            f"{money(stated)} but the entry moved {money(moved)} (difference "
            f"{money(moved - stated)})"
        )


def _day_entry(
    statement: Statement,
    walk: _Walk,
    entry: JournalEntry,
    rounds: dict[tuple[str, str], dict[str, str]],
) -> None:
    """Count one entry of the day into its table's and its meter's figures."""
    table_id = entry.fields.get("table", "")
    table = _table(statement, table_id) if table_id else None
    if table is not None:
        _table_entry(table, entry, rounds)
    if entry.meter_id:
        _meter_entry(_meter(statement, entry.meter_id), walk, entry)


def _table_entry(
    table: TableDay, entry: JournalEntry, rounds: dict[tuple[str, str], dict[str, str]]
) -> None:
    f, kind = entry.fields, entry.type
    cents = int(f.get("amount_cents", "0") or "0")
    moved = entry.delta_meter_microcents + entry.delta_reserve_microcents
    if kind == "wagers_accepted":
        rounds[(table.table_id, f.get("round", ""))] = f
        _wagers(table, f, 1)
    elif kind == "round_voided":
        locked = rounds.get((table.table_id, f.get("round", "")))
        if locked is not None:  # a round locked out before the day: its handle is that day's
            _wagers(table, locked, -1)
    elif kind == "fixed_award":
        table.fixed_awards += 1
        table.fixed_cents += cents
    elif kind in ("contribution", "void"):
        table.contributions_microcents += moved
    elif kind == "award":
        table.percent_hits += 1
        table.percent_cents += cents
    elif kind == "mystery_hit":
        table.mystery_hits += 1
        table.mystery_cents += cents
    elif kind in _RETURNS:
        table.returned_hits += 1
        table.returned_cents += cents


def _meter_entry(meter: MeterDay, walk: _Walk, entry: JournalEntry) -> None:
    f, kind = entry.fields, entry.type
    cents = int(f.get("amount_cents", "0") or "0")
    moved = entry.delta_meter_microcents + entry.delta_reserve_microcents
    if kind in ("contribution", "void"):
        sign = 1 if kind == "contribution" else -1
        meter.handle_count += sign
        meter.handle_cents += sign * cents
        meter.contributions_microcents += moved
        meter.voided_microcents += moved if sign < 0 else 0
        if not 0 <= sign * moved <= cents * MICROCENTS_PER_CENT:
            walk.findings.append(
                f"meter {entry.meter_id}, journal #{entry.seq} ({kind}): moved {money(moved)} "
                f"on a wager of {money(cents * MICROCENTS_PER_CENT)}"
            )
    elif kind in _AWARDS:
        _check_award_meter(walk, entry)
        if kind == "award":
            meter.percent_hits += 1
            meter.percent_cents += cents
        else:
            meter.mystery_hits += 1
            meter.mystery_cents += cents
        _stated(walk, entry, "the award states", -cents * MICROCENTS_PER_CENT)
    elif kind == "reset":
        meter.resets += 1
        seed = int(f.get("operator_seed_microcents", "0"))
        meter.seed_microcents += seed
        _stated(walk, entry, "the reset states an operator seed of", seed)
    elif kind in _RETURNS:
        meter.returned_hits += 1
        meter.returned_cents += cents
        meter.seed_microcents += moved - cents * MICROCENTS_PER_CENT  # the reset it undid
    elif kind == "meter_created":
        meter.seed_microcents += moved
    elif moved:
        meter.adjustments[kind] = meter.adjustments.get(kind, 0) + moved
        if kind == "adjustment_approved":
            _stated(walk, entry, "the adjustment states", cents * MICROCENTS_PER_CENT)


def _wagers(table: TableDay, fields: Mapping[str, str], sign: int) -> None:
    for name, value in fields.items():
        if name.startswith(COUNT_PREFIX):
            wager = name[len(COUNT_PREFIX) :]
            table.wagers[wager] = table.wagers.get(wager, 0) + sign * int(value)
            cents = sign * int(fields.get(CENTS_PREFIX + wager, "0"))
            table.handle_cents[wager] = table.handle_cents.get(wager, 0) + cents


def meter_differences(
    value: Mapping[str, int], reserve: Mapping[str, int], meters: Sequence[MeterBalance]
) -> list[str]:
    """Each meter whose value or reserve is not what the journal sums to."""
    found = []
    for meter in meters:
        for name, held, summed in (
            ("value", meter.value_microcents, value.get(meter.meter_id, 0)),
            ("reserve", meter.reserve_microcents, reserve.get(meter.meter_id, 0)),
        ):
            if held != summed:
                found.append(
                    f"meter {meter.meter_id}: its {name} is {money(held)} but the journal sums "
                    f"it to {money(summed)} (difference {money(held - summed)})"
                )
    return found


def _check_roll_forward(statement: Statement, walk: _Walk) -> None:
    """opening + contributions - awards + seed + adjustments = closing, per meter."""
    for meter in statement.meters.values():
        if meter.rolled_microcents != meter.closing_microcents:
            walk.findings.append(
                f"meter {meter.meter_id}: opening {money(meter.opening_microcents)} + "
                f"contributions {money(meter.contributions_microcents)} - awards "
                f"{money(meter.awards_microcents)} + seed {money(meter.seed_microcents)} + "
                f"adjustments {money(meter.adjustments_microcents)} = "
                f"{money(meter.rolled_microcents)}, but the journal closes it at "
                f"{money(meter.closing_microcents)} (difference "
                f"{money(meter.closing_microcents - meter.rolled_microcents)})"
            )


def _check_previous(statement: Statement, walk: _Walk) -> None:
    """The opening against the previous day's close, when that day was closed."""
    previous = walk.closes.get(date.fromordinal(statement.day.toordinal() - 1).isoformat())
    if previous is None:
        return
    seq, document = previous
    statement.previous_close_seq = seq
    if int(document.get("to_ms", statement.from_ms)) != statement.from_ms:
        walk.findings.append(
            f"the previous day's close (journal #{seq}) ended at {document.get('to_ms')} ms, "
            f"but this day starts at {statement.from_ms} ms: the gaming day's zone or start "
            "hour changed between the closes, so the days would leave a gap or overlap"
        )
    closed = {str(row["meter_id"]): int(row["closing_microcents"]) for row in document["meters"]}
    for meter_id in sorted(set(closed) | set(statement.meters)):
        opening = (
            statement.meters[meter_id].opening_microcents if meter_id in statement.meters else 0
        )
        if closed.get(meter_id, 0) != opening:
            walk.findings.append(
                f"meter {meter_id}: opens at {money(opening)} but the previous day's close "
                f"(journal #{seq}) closed it at {money(closed.get(meter_id, 0))} (difference "
                f"{money(opening - closed.get(meter_id, 0))})"
            )

"""Regulator reports: from the journal entries of a time window to the figures.

Pure: the caller reads the window (:meth:`controller.store.redis_store.RedisStore.journal_window`)
and the link group's meters and tables; nothing here does I/O. Money is integers only: cents
where the journal writes cents (wagers, awards), microcents (1 cent = 1,000,000) where it
writes microcents (contributions and every meter or reserve movement). Frequencies are exact
fractions.

- :func:`handle_report`, per table and wager kind: every accepted wager (``wagers_accepted``,
  written at lockout for every wager, whether it feeds a meter or not) less the wagers of
  rounds voided in the window, the wins split into percentage-of-meter and fixed, and the hit
  frequency beside the one the paytable's odds expect.
- :func:`meter_report`, per meter: the handle that fed it, contributions to the meter, the
  reserve and the overflow above the ceiling, voids, hits and percentage wins, reset
  top-ups, rejections, every other movement by entry type, the window's net movement (which
  over the whole journal is the meter's value: the audit's recomputation), the current
  amount and reserve, and the cumulative payout meter that never resets.
- :func:`hit_report`: the last :data:`LAST_HITS` hits, newest first.
- :func:`change_report`: every configuration change (any entry that is not a step of play),
  each with all its fields, so that entry types added later appear with their fields.

A window is ``from_ms <= t < to_ms`` in milliseconds since the Unix epoch, ``t`` being the
time Redis gave the entry (its stream id).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from controller.domain.config import TableConfig
from controller.domain.odds import paytable_odds
from controller.domain.records import JournalEntry, MeterState
from controller.domain.staged import describe as describe_staged
from controller.domain.staged_tables import StagedTableChange
from controller.domain.staged_tables import describe as describe_staged_table
from jackpot.errors import FailedPrecondition
from jackpot.kinds import AwardKind
from jackpot.times import format_time

LAST_HITS = 25
"""How many hits the hit report lists."""

PLAY_TYPES = frozenset(
    {
        "wagers_accepted",
        "contribution",
        "award",
        "reset",
        "fixed_award",
        "void",
        "round_voided",
        "jackpot_approved",
        "jackpot_rejected",
        "jackpot_voided",  # a must-hit-by hit reversed by the void of its round
        "jackpot_paid",
        "jackpot_witnessed",  # payout compliance: a hand-pay's witness
    }
)
"""Journal entries written by play and its jackpots; every other type is a change."""

_CHANGE_HIDDEN = frozenset({"seq", "type", "meter", "hash", "d_meter", "d_reserve"})

COUNT_PREFIX, CENTS_PREFIX = "count:", "cents:"
"""A ``wagers_accepted`` entry's fields per wager kind: ``count:<kind>``, ``cents:<kind>``."""


def entry_ms(entry: JournalEntry) -> int:
    """When Redis wrote the entry: its stream id's milliseconds."""
    return int(entry.entry_id.partition("-")[0])


def _ratio(numerator: int, denominator: int) -> Fraction | None:
    return Fraction(numerator, denominator) if denominator else None


# ----------------------------------------------------------------------------- handle


@dataclass
class HandleLine:
    """One table's wagers of one kind in the window.

    ``count``/``cents``: accepted at lockout less ``voided_*`` (the wagers of rounds locked out
    and voided in the window). ``wins``: awards paid on these wagers (``percent_*`` from a
    meter, ``fixed_*`` fixed amounts); ``rejected_*``: of those, awards a supervisor rejected
    in the window. ``expected_hit_frequency``: the probability that one wager wins anything,
    from the table's paytable (None for an unknown table or wager)."""

    table_id: str
    game: str
    wager: str
    accepted_count: int = 0
    accepted_cents: int = 0
    voided_count: int = 0
    voided_cents: int = 0
    percent_wins: int = 0
    percent_cents: int = 0
    fixed_wins: int = 0
    fixed_cents: int = 0
    rejected_wins: int = 0
    rejected_cents: int = 0
    expected_hit_frequency: Fraction | None = None

    @property
    def count(self) -> int:
        """Wagers that stood (accepted less voided)."""
        return self.accepted_count - self.voided_count

    @property
    def cents(self) -> int:
        """Their amount in cents."""
        return self.accepted_cents - self.voided_cents

    @property
    def wins(self) -> int:
        """Awards that stand (paid, less rejected)."""
        return self.percent_wins + self.fixed_wins - self.rejected_wins

    @property
    def wins_cents(self) -> int:
        """What those awards pay, cents."""
        return self.percent_cents + self.fixed_cents - self.rejected_cents

    @property
    def hit_frequency(self) -> Fraction | None:
        """Wins per wager that stood (None without wagers)."""
        return _ratio(self.wins, self.count)


@dataclass
class HandleReport:
    """The handle lines by (table, wager kind), and the voids of rounds whose lockout lies
    before the window (their wagers are in an earlier window's handle)."""

    lines: list[HandleLine]
    earlier_voids: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total_count(self) -> int:
        """Every wager that stood."""
        return sum(line.count for line in self.lines)

    @property
    def total_cents(self) -> int:
        """Their amount, cents."""
        return sum(line.cents for line in self.lines)


def _expected_win_frequency(table: TableConfig, wager: str) -> Fraction | None:
    offer = table.offer(wager)
    if offer is None:
        return None
    counts = table.game_rules.wager(wager).line_counts()
    return paytable_odds(offer.paytable, counts, meter_cents=0, wager_cents=1).hit_frequency


def _awards_by_seq(entries: Iterable[JournalEntry]) -> dict[int, JournalEntry]:
    return {e.seq: e for e in entries if e.type in ("award", "fixed_award")}


def _award_seq(jackpot_id: str) -> int:
    """A jackpot id is "<link group>:<journal seq of its award>"."""
    return int(jackpot_id.rpartition(":")[2] or 0)


class _HandleLines:
    """The handle lines being added up, created on first use."""

    def __init__(self, tables: Sequence[TableConfig]) -> None:
        self.by_table = {t.table_id: t for t in tables}
        self.lines: dict[tuple[str, str], HandleLine] = {}

    def __call__(self, table_id: str, wager: str) -> HandleLine:
        key = (table_id, wager)
        if key not in self.lines:
            table = self.by_table.get(table_id)
            self.lines[key] = HandleLine(
                table_id,
                table.game if table else "",
                wager,
                expected_hit_frequency=_expected_win_frequency(table, wager) if table else None,
            )
        return self.lines[key]

    def wagers(self, fields: dict[str, str], *, voided: bool = False) -> None:
        """Add a ``wagers_accepted`` entry's wagers, or take a voided round's back out."""
        for wager, count, cents in _kinds(fields):
            handle = self(fields["table"], wager)
            if voided:
                handle.voided_count += count
                handle.voided_cents += cents
            else:
                handle.accepted_count += count
                handle.accepted_cents += cents


def handle_report(entries: Sequence[JournalEntry], tables: Sequence[TableConfig]) -> HandleReport:
    """The handle per table and wager kind (see :class:`HandleLine`)."""
    line = _HandleLines(tables)
    accepted: dict[tuple[str, str], JournalEntry] = {}
    awards = _awards_by_seq(entries)
    report = HandleReport([])
    for e in entries:
        f = e.fields
        if e.type == "wagers_accepted":
            accepted[(f["table"], f["round"])] = e
            line.wagers(f)
        elif e.type == "round_voided":
            locked = accepted.get((f["table"], f["round"]))
            if locked is None:
                report.earlier_voids.append((f["table"], f["round"]))
            else:
                line.wagers(locked.fields, voided=True)
        elif e.type in ("award", "fixed_award"):
            handle = line(f["table"], f["wager"])
            if e.type == "award":
                handle.percent_wins += 1
                handle.percent_cents += int(f["amount_cents"])
            else:
                handle.fixed_wins += 1
                handle.fixed_cents += int(f["amount_cents"])
        elif e.type == "jackpot_rejected" and _award_seq(f["jackpot"]) in awards:
            award = awards[_award_seq(f["jackpot"])].fields
            handle = line(award["table"], award["wager"])
            handle.rejected_wins += 1
            handle.rejected_cents += int(f["amount_cents"])
    report.lines = sorted(line.lines.values(), key=lambda h: (h.table_id, h.wager))
    return report


def _kinds(fields: dict[str, str]) -> list[tuple[str, int, int]]:
    """A ``wagers_accepted`` entry's (wager kind, count, cents), by kind."""
    return [
        (
            name[len(COUNT_PREFIX) :],
            int(value),
            int(fields[CENTS_PREFIX + name[len(COUNT_PREFIX) :]]),
        )
        for name, value in sorted(fields.items())
        if name.startswith(COUNT_PREFIX)
    ]


# ----------------------------------------------------------------------------- meters


@dataclass
class MeterLine:
    """One meter's figures in the window (movements in microcents, wins in cents) and now.

    ``handle_*``: the wagers that fed it, less those voided. ``to_meter``/``to_reserve``/
    ``overflow``: their contributions; the overflow (above the ceiling) went to the reserve
    and is not in ``to_reserve``. ``voided_*``: contributions taken back by voids.
    ``hits``/``percent_wins_cents``: percentage awards paid from it (``rejected_*``: of
    those, rejected in the window and returned). ``reset_*``: the refills after 100% awards,
    from the reserve and from the operator. ``other_microcents``: every other movement by
    entry type (the meter's seed, transfers, adjustments, ...). ``net_*``: everything the
    window moved. ``amount``/``reserve``: now. ``cumulative_*``: since the meter was created
    (the payout meter that never resets: percentage wins less rejected ones)."""

    meter_id: str
    game: str
    handle_count: int = 0
    handle_cents: int = 0
    to_meter_microcents: int = 0
    to_reserve_microcents: int = 0
    overflow_microcents: int = 0
    voided_count: int = 0
    voided_meter_microcents: int = 0
    voided_reserve_microcents: int = 0
    hits: int = 0
    percent_wins_cents: int = 0
    rejected_hits: int = 0
    rejected_meter_microcents: int = 0
    reset_microcents: int = 0
    reset_from_reserve_microcents: int = 0
    operator_seed_microcents: int = 0
    other_microcents: dict[str, int] = field(default_factory=dict)
    net_meter_microcents: int = 0
    net_reserve_microcents: int = 0
    amount_microcents: int = 0
    reserve_microcents: int = 0
    cumulative_hits: int = 0
    cumulative_paid_cents: int = 0
    expected_hit_frequency: Fraction | None = None
    staged_change: str = ""
    """Now: its staged change and wind-down, if any (:func:`controller.domain.staged.describe`)."""

    @property
    def hit_frequency(self) -> Fraction | None:
        """Hits that stand per wager that fed the meter (None without wagers)."""
        return _ratio(self.hits - self.rejected_hits, self.handle_count)


def _meter_line_probability(table: TableConfig, wager: str, meter_id: str) -> Fraction:
    """The probability that one wager of ``wager`` at ``table`` hits ``meter_id``."""
    offer = table.offer(wager)
    if offer is None:
        return Fraction(0)
    counts = table.game_rules.wager(wager).line_counts()
    odds = paytable_odds(offer.paytable, counts, meter_cents=0, wager_cents=1)
    return sum(
        (
            line.probability
            for line in odds.lines
            if line.award.kind is AwardKind.PERCENT_OF_METER
            and offer.meter_of(line.award) == meter_id
        ),
        Fraction(0),
    )


def meter_report(
    entries: Sequence[JournalEntry],
    meters: Sequence[MeterState],
    tables: Sequence[TableConfig],
    staged_tables: Sequence[StagedTableChange] = (),
) -> list[MeterLine]:
    """The figures of each meter (see :class:`MeterLine`), in meter id order. The expected
    hit frequency weighs each table's and wager's odds of hitting the meter by its wagers
    that fed it in the window. ``staged_tables``: the table changes waiting now for a
    meter's next hit or reset, shown in its ``staged_change`` after its own."""
    by_table = {t.table_id: t for t in tables}
    waiting: dict[str, list[str]] = {}
    for change in staged_tables:
        text = f"table {change.table.table_id} {describe_staged_table(change)}"
        waiting.setdefault(change.meter_id, []).append(text)
    lines = {
        m.meter_id: MeterLine(
            m.meter_id,
            m.game,
            amount_microcents=m.amount_microcents,
            reserve_microcents=m.reserve_microcents,
            cumulative_hits=m.hits_total,
            cumulative_paid_cents=m.awards_cents_total,
            staged_change="; ".join(
                text for text in (describe_staged(m), *waiting.get(m.meter_id, ())) if text
            ),
        )
        for m in meters
    }
    fed: dict[str, Counter[tuple[str, str]]] = {m: Counter() for m in lines}
    for e in entries:
        line = lines.get(e.meter_id)
        if line is None:
            continue
        f = e.fields
        line.net_meter_microcents += e.delta_meter_microcents
        line.net_reserve_microcents += e.delta_reserve_microcents
        if e.type == "contribution":
            overflow = int(f.get("overflow_microcents", "0"))
            line.handle_count += 1
            line.handle_cents += int(f["amount_cents"])
            line.to_meter_microcents += e.delta_meter_microcents
            line.to_reserve_microcents += e.delta_reserve_microcents - overflow
            line.overflow_microcents += overflow
            fed[e.meter_id][(f["table"], f["wager"])] += 1
        elif e.type == "void":
            line.handle_count -= 1
            line.handle_cents -= int(f["amount_cents"])
            line.voided_count += 1
            line.voided_meter_microcents += e.delta_meter_microcents
            line.voided_reserve_microcents += e.delta_reserve_microcents
            line.operator_seed_microcents += int(f.get("operator_seed_microcents", "0"))
            fed[e.meter_id][(f["table"], f["wager"])] -= 1
        elif e.type == "award":
            line.hits += 1
            line.percent_wins_cents += int(f["amount_cents"])
        elif e.type == "reset":
            line.reset_microcents += e.delta_meter_microcents
            line.reset_from_reserve_microcents -= e.delta_reserve_microcents
            line.operator_seed_microcents += int(f.get("operator_seed_microcents", "0"))
        elif e.type in ("jackpot_rejected", "jackpot_voided"):  # given back alike
            line.rejected_hits += 1
            line.rejected_meter_microcents += e.delta_meter_microcents
            line.reset_from_reserve_microcents -= e.delta_reserve_microcents
        elif e.delta_meter_microcents or e.delta_reserve_microcents:
            other = line.other_microcents
            other[e.type] = other.get(e.type, 0) + e.delta_meter_microcents
    for meter_id, line in lines.items():
        weights = +fed[meter_id]
        total = sum(weights.values())
        if total:
            line.expected_hit_frequency = sum(
                (
                    Fraction(count, total)
                    * _meter_line_probability(by_table[table_id], wager, meter_id)
                    for (table_id, wager), count in weights.items()
                    if table_id in by_table
                ),
                Fraction(0),
            )
    return [lines[m] for m in sorted(lines)]


# ----------------------------------------------------------------------------- hits


@dataclass(frozen=True, slots=True)
class Hit:
    """One percentage-of-meter award: where, when (ms), how much (cents), and whether a
    supervisor rejected it in the window."""

    seq: int
    at_ms: int
    meter_id: str
    table_id: str
    round_id: str
    seat: str
    wager: str
    hand: str
    award: str
    amount_cents: int
    meter_before_cents: int
    meter_after_cents: int
    rejected: bool
    # payout compliance (docs/payout-compliance.md), from its jackpot_paid entry in the window
    tax_form_ref: str = ""
    tax_form_override: str = ""
    witnessed_by: str = ""


def _meter_after(entries: Sequence[JournalEntry], index: int) -> int:
    """The meter after the award at ``entries[index]`` (:data:`jackpot.results.METER_AFTER`):
    after a 100% award, the reset amount its ``reset`` entry (the next one, same script) set;
    after any other award, the meter as the award left it."""
    award = entries[index]
    following = entries[index + 1] if index + 1 < len(entries) else None
    if (
        following is not None
        and following.type == "reset"
        and following.seq == award.seq + 1
        and following.meter_id == award.meter_id
    ):
        return int(following.fields["reset_cents"])
    return int(award.fields["meter_after_cents"])


def hit_report(entries: Sequence[JournalEntry], limit: int = LAST_HITS) -> list[Hit]:
    """The last ``limit`` hits of the window, newest first; ``meter_after_cents`` as the
    hand-pay slip has it (:data:`jackpot.results.METER_AFTER`: a 100% award's includes its
    reset)."""
    rejected = {_award_seq(e.fields["jackpot"]) for e in entries if e.type == "jackpot_rejected"}
    paid = {_award_seq(e.fields["jackpot"]): e.fields for e in entries if e.type == "jackpot_paid"}
    indexes = [i for i, e in enumerate(entries) if e.type == "award"][-limit:] if limit else []
    hits = [(entries[i], _meter_after(entries, i)) for i in indexes]
    return [
        Hit(
            seq=e.seq,
            at_ms=entry_ms(e),
            meter_id=e.meter_id,
            table_id=e.fields["table"],
            round_id=e.fields["round"],
            seat=e.fields["seat"],
            wager=e.fields["wager"],
            hand=e.fields["hand"],
            award=e.fields["award"],
            amount_cents=int(e.fields["amount_cents"]),
            meter_before_cents=int(e.fields["meter_before_cents"]),
            meter_after_cents=after,
            rejected=e.seq in rejected,
            tax_form_ref=paid.get(e.seq, {}).get("tax_form_ref", ""),
            tax_form_override=paid.get(e.seq, {}).get("tax_form_override", ""),
            witnessed_by=paid.get(e.seq, {}).get("witness", ""),
        )
        for e, after in reversed(hits)
    ]


# ----------------------------------------------------------------------------- changes


@dataclass(frozen=True, slots=True)
class Change:
    """A configuration change: its entry's type, meter (or ""), money moved (microcents) and
    every other field as the journal holds it."""

    seq: int
    at_ms: int
    type: str
    meter_id: str
    d_meter_microcents: int
    d_reserve_microcents: int
    fields: dict[str, str]


def change_report(entries: Sequence[JournalEntry]) -> list[Change]:
    """Every entry of the window that is not a step of play (:data:`PLAY_TYPES`), oldest
    first: creations, registrations, rebases, stops, resumes, restores, and whatever control
    a later release journals, each with all its fields."""
    return [
        Change(
            seq=e.seq,
            at_ms=entry_ms(e),
            type=e.type,
            meter_id=e.meter_id,
            d_meter_microcents=e.delta_meter_microcents,
            d_reserve_microcents=e.delta_reserve_microcents,
            fields={k: v for k, v in sorted(e.fields.items()) if k not in _CHANGE_HIDDEN},
        )
        for e in entries
        if e.type not in PLAY_TYPES
    ]


def for_table(entries: Iterable[JournalEntry], table_id: str) -> list[JournalEntry]:
    """The entries that name ``table_id`` (every entry when it is empty)."""
    if not table_id:
        return list(entries)
    return [e for e in entries if e.fields.get("table") == table_id]


# ----------------------------------------------------------------------------- coverage


def check_covered(
    link_group_id: str, from_ms: int, first: JournalEntry | None, *, source: str, remedy: str
) -> None:
    """Refuse (:class:`FailedPrecondition`) a window that starts before what ``source``
    holds of the link group's journal: ``first`` is the first entry it holds, and the
    entries before it (``first.seq`` above 1) were trimmed from it or never written to it. A
    report over such a window would silently miss them (a trimmed day's hits read as "no
    hits"). ``from_ms`` 0 is the journal's start; a window starting at or before the first
    held entry's millisecond may hold trimmed entries of that same millisecond. ``remedy``
    says where the rest is."""
    if first is None or first.seq <= 1 or from_ms > entry_ms(first):
        return
    start = f"at {_utc(from_ms)}" if from_ms else "at the journal's start"
    raise FailedPrecondition(
        f"link group {link_group_id}: {source} holds its journal from entry #{first.seq} "
        f"(written {_utc(entry_ms(first))}) on; entries #1 to #{first.seq - 1} are not in it "
        f"(trimmed), and this window starts {start}, before that: a report would miss them; "
        f"{remedy}"
    )


def _utc(ms: int) -> str:
    """Milliseconds since the Unix epoch as people read a time here (:mod:`jackpot.times`)."""
    return format_time(ms)

"""Translate between the store's JSON/hash encodings and the domain's dataclasses.

Scripts encode every amount as a decimal string (Lua would print large doubles with an
exponent), so each amount is read back with ``int()``; ``cjson`` encodes an empty array as
``{}``, which :func:`_items` reads as no items.

Every stored record - a link group's description, a meter, a table's registration, a round,
a jackpot - carries the schema version it was written in, the field ``v``
(:data:`SCHEMA_VERSION`; the scripts write it too, :mod:`controller.store.scripts` gives it to
them). Each is read here through :func:`upgraded`, the one boundary where a record of an
older version would be migrated to the current one, and where a record without a version, or
of a version this release does not know, is refused with its name.

A record that does not decode - JSON that does not parse, an amount that is not an integer
written as the scripts write it (``-?[0-9]+``), a field missing or of the wrong type - raises
:class:`CorruptRecord` naming its kind, its id and its Redis key (the caller passes the key),
never a guess (no amount is read as 0) and never anything that would stop the caller's other
records: the store skips and reports it in a listing, and refuses it alone where it is needed.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

from controller.domain.config import TableConfig
from controller.domain.records import (
    Adjustment,
    Checkpoint,
    Irregularity,
    Jackpot,
    LinkGroupSnapshot,
    Maintenance,
    MeterBalance,
    MeterState,
    RetiredMeter,
    StagedChange,
)
from controller.domain.rounds import Wager
from jackpot.data import compile_decoders, items, record_from_data
from jackpot.errors import CorruptRecord, FailedPrecondition, JackpotError, StoreUnavailable
from jackpot.results import (
    AcceptedWager,
    ChipCountResult,
    IrregularityResult,
    LockoutResult,
    MeterValue,
    SettleResult,
    VoidResult,
)

compile_decoders(  # every record this module decodes, compiled now (jackpot.codegen)
    AcceptedWager,
    LockoutResult,
    VoidResult,
    SettleResult,
    ChipCountResult,
    IrregularityResult,
    Irregularity,
    Jackpot,
    Adjustment,
    RetiredMeter,
)

SCHEMA_VERSION = 1
"""The version of the records this release writes (the field ``v`` of each)."""

RecordKind = Literal[
    "link group", "meter", "table", "round", "jackpot", "irregularity", "adjustment"
]


def _unchanged(record: Mapping[str, Any], version: int) -> Mapping[str, Any]:
    """Version 1 is the current one: nothing to migrate."""
    return record


MIGRATIONS: dict[RecordKind, Callable[[Mapping[str, Any], int], Mapping[str, Any]]] = {
    "link group": _unchanged,
    "meter": _unchanged,
    "table": _unchanged,
    "round": _unchanged,
    "jackpot": _unchanged,
    "irregularity": _unchanged,
    "adjustment": _unchanged,
}
"""Per record kind: the step that upgrades a record of an older version (its second
argument) to :data:`SCHEMA_VERSION`. A release that changes a record's shape raises the
version and makes that kind's step rewrite the older shape."""


def upgraded(kind: RecordKind, where: str, record: Mapping[str, Any]) -> Mapping[str, Any]:
    """``record`` (the ``kind`` record named by ``where``, e.g. "table cs-1") as this release
    reads it. A record without a schema version, or of a version other than 1 to
    :data:`SCHEMA_VERSION`, raises :class:`StoreUnavailable` naming it (never a guess: the
    caller may retry, e.g. on a replica of the release that wrote it)."""
    version = record.get("v")
    if version is None:
        raise StoreUnavailable(
            f"the stored record of {kind} {where} has no schema version; this controller reads "
            f"versions 1 to {SCHEMA_VERSION} and does not guess"
        )
    number = int(version) if str(version).isdigit() else 0
    if not 1 <= number <= SCHEMA_VERSION:
        raise StoreUnavailable(
            f"the stored record of {kind} {where} has schema version {version}; this "
            f"controller reads versions 1 to {SCHEMA_VERSION} (a later release wrote it: serve "
            "it with that release)"
        )
    return MIGRATIONS[kind](record, number)


R = TypeVar("R")

CORRUPT_KINDS: tuple[str, ...] = (
    "link group",
    "meter",
    "table",
    "round",
    "jackpot",
    "irregularity",
    "adjustment",
    "journal entry",
    "record",
)
"""Every kind of record a :class:`CorruptRecord` names (the ``kind`` label of
``jackpot_corrupt_records_total``); ``record``: a stored number a script met that is not an
integer, in a record it does not name."""

_INTEGER = re.compile(r"-?[0-9]+")


def integer(name: str, value: Any) -> int:
    """A stored integer as the scripts write it (``'%d'``: an optional minus and ASCII
    digits) or as JSON carries it; anything else - ``'abc'``, ``''``, ``'1e3'``, ``' 5'``,
    ``1.5``, ``true`` - raises :class:`ValueError` naming the field ``name``."""
    if type(value) is int:
        return value
    if type(value) is str and _INTEGER.fullmatch(value):
        return int(value)
    raise ValueError(f"{name} is {_shown(value)}, not an integer")


def _shown(value: Any) -> str:
    """A stored value for a message: at most 40 characters of it."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@contextlib.contextmanager
def reading(kind: RecordKind, name: str, key: str = "") -> Iterator[None]:
    """Decode one stored record (``kind`` ``name`` at Redis key ``key``): any failure to read
    it becomes a :class:`CorruptRecord` naming it. A refusal by version (
    :class:`StoreUnavailable`) and a :class:`CorruptRecord` pass unchanged."""
    try:
        yield
    except (CorruptRecord, StoreUnavailable):
        raise
    except (ValueError, KeyError, TypeError, AttributeError, JackpotError) as error:
        detail = str(error) if not isinstance(error, KeyError) else f"{error} is missing"
        raise CorruptRecord(kind, name, key, detail) from None


def _json(raw: str | bytes) -> dict[str, Any]:
    """A stored JSON record: an object, or :class:`ValueError`."""
    try:
        stored = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"its JSON does not parse ({error})") from None
    if not isinstance(stored, dict):
        raise ValueError(f"its JSON is a {type(stored).__name__}, not an object")
    return stored


def _integers(stored: Mapping[str, Any], names: Sequence[str]) -> None:
    """Each of ``names`` that ``stored`` holds is an integer (:func:`integer`)."""
    for name in names:
        if name in stored:
            integer(name, stored[name])


_JACKPOT_INTEGERS = (
    "round_id",
    "seat",
    "amount_cents",
    "meter_before_cents",
    "meter_after_cents",
    "journal_seq",
    "wager_cents",
    "hit_at_ms",
    "witnessed_at_ms",
    "witness_seq",
)


def locked_wagers(where: str, fields: Mapping[str, str], key: str = "") -> tuple[Wager, ...]:
    """The wagers stored by a lockout in the record of round ``where`` (its ``v`` and
    ``wagers`` fields, at Redis key ``key``), as the settlement plans them."""
    record = upgraded("round", where, fields)
    with reading("round", where, key):
        return tuple(
            Wager(a.seat, a.kind, a.amount_cents, a.on_dealer_hand, a.envy, a.player_token)
            for a in (
                record_from_data(AcceptedWager, item)
                for item in items(json.loads(record["wagers"]))
            )
        )


def _result(record_type: type[R], raw: Sequence[str]) -> R:
    """A phase script's answer [reply JSON, "new" | "replay", epoch id, journal seq] as its
    result record: the reply's keys are the record's field names."""
    reply = json.loads(raw[0])
    reply["replayed"] = raw[1] == "replay"
    reply["journal"] = {"epoch": raw[2], "seq": raw[3]}
    return record_from_data(record_type, reply)


def lockout_result(raw: Sequence[str]) -> LockoutResult:
    """Decode the lockout script's reply."""
    return _result(LockoutResult, raw)


def void_result(raw: Sequence[str]) -> VoidResult:
    """Decode the void script's reply."""
    return _result(VoidResult, raw)


def settle_result(raw: Sequence[str]) -> SettleResult:
    """Decode the settle script's reply."""
    return _result(SettleResult, raw)


def chip_count_result(raw: Sequence[str]) -> ChipCountResult:
    """Decode the chip count script's reply."""
    return _result(ChipCountResult, raw)


def irregularity_result(raw: Sequence[str]) -> IrregularityResult:
    """Decode the irregularity script's reply (an irregularity that leaves the round to
    settle; one that voids it is built from the void's answer)."""
    return _result(IrregularityResult, raw)


def irregularity(raw: str | bytes, *, name: str = "", key: str = "") -> Irregularity:
    """Decode a stored irregularity record (``name``, its field ``<table>:<round>:<kind>``,
    and ``key`` name it if it is corrupt)."""
    with reading("irregularity", name or "?", key):
        stored = _json(raw)
        where = name or (
            f"{stored.get('table_id', '?')}:{stored.get('round_id', '?')}:{stored.get('kind')}"
        )
        with reading("irregularity", where, key):
            return record_from_data(Irregularity, upgraded("irregularity", where, stored))


def jackpot(raw: str | bytes, *, key: str = "", name: str = "") -> Jackpot:
    """Decode a stored jackpot record (``name``, its id, and ``key`` name it if it is
    corrupt; its amounts must be integers)."""
    with reading("jackpot", name or "?", key):
        stored = _json(raw)
        where = name or str(stored.get("jackpot_id", "?"))
        with reading("jackpot", where, key):
            record = upgraded("jackpot", where, stored)
            _integers(record, _JACKPOT_INTEGERS)
            return record_from_data(Jackpot, record)


def meter_state(fields: Mapping[str, str], *, key: str = "", name: str = "") -> MeterState:
    """Decode a meter hash (``name``, its id, and ``key`` name it if it is corrupt: a
    missing field, or an amount or count that is not an integer)."""
    where = name or fields.get("meter_id", "?")
    fields = upgraded("meter", where, fields)
    with reading("meter", where, key):
        return MeterState(
            meter_id=fields["meter_id"],
            link_group_id=fields["link_group_id"],
            game=fields["game"],
            reset_cents=integer("reset_cents", fields["reset_cents"]),
            rate_ppm=integer("rate_ppm", fields["rate_ppm"]),
            reserve_rate_ppm=integer("reserve_rate_ppm", fields["reserve_rate_ppm"]),
            ceiling_cents=integer("ceiling_cents", fields["ceiling_cents"]),
            amount_microcents=integer("value_microcents", fields["value_microcents"]),
            reserve_microcents=integer("reserve_microcents", fields["reserve_microcents"]),
            pending_jackpots=integer("pending_jackpots", fields["pending_jackpots"]),
            wagers_total=integer("wagers_total", fields["wagers_total"]),
            hits_total=integer("hits_total", fields["hits_total"]),
            awards_cents_total=integer("awards_cents_total", fields["awards_cents_total"]),
            operator_seed_microcents_total=integer(
                "operator_seed_microcents_total", fields["operator_seed_microcents_total"]
            ),
            kind=fields.get("kind", "progressive"),
            must_hit_by_cents=integer("must_hit_by_cents", fields.get("must_hit_by_cents", 0)),
            mystery_cycle=integer("mystery_cycle", fields.get("mystery_cycle", 0)),
            mystery_commitment=fields.get("mystery_commitment", ""),
            staged_change=staged_change(fields.get("staged_change"), fields.get("staged_seq")),
            wound_down_seq=integer("wound_down_seq", fields.get("wound_down_seq", 0)),
        )


def staged_change(raw: str | None, seq: str | None) -> StagedChange | None:
    """A meter's staged change (its fields ``staged_change``, JSON of strings, and
    ``staged_seq``; stage_meter_change.lua), None when none waits; ValueError when corrupt."""
    if raw is None:
        return None
    stored = _json(raw)
    at = stored.get("at")
    if at not in ("hit", "reset"):
        raise ValueError(f"its staged change waits for {_shown(at)}, not 'hit' or 'reset'")
    numbers = {
        f"{when}_{name}": integer(f"staged {when}_{name}", stored.get(f"{when}_{name}"))
        for when in ("old", "new")
        for name in ("reset_cents", "rate_ppm", "reserve_rate_ppm", "ceiling_cents")
    }
    return StagedChange(
        at=at,
        staged_seq=integer("staged_seq", seq),
        by=str(stored.get("by", "")),
        reason=str(stored.get("reason", "")),
        **numbers,
    )


def adjustment(raw: str | bytes, *, key: str = "", name: str = "") -> Adjustment:
    """Decode a stored adjustment record (``name``, its id, and ``key`` name it if it is
    corrupt)."""
    with reading("adjustment", name or "?", key):
        stored = _json(raw)
        where = name or str(stored.get("adjustment_id", "?"))
        with reading("adjustment", where, key):
            return record_from_data(Adjustment, upgraded("adjustment", where, stored))


def retired_meter(raw: str | bytes) -> RetiredMeter:
    """Decode a retired meter's record (its last meter fields and its retirement)."""
    with reading("meter", "?"):
        stored = _json(raw)
        where = str(stored.get("meter_id"))
        with reading("meter", where):
            return record_from_data(RetiredMeter, upgraded("meter", where, stored))


def maintenance(fields: Mapping[str, str]) -> Maintenance:
    """Decode a link group's maintenance hash (empty: never in maintenance)."""
    return Maintenance(
        active=fields.get("state") == "maintenance",
        by=fields.get("entered_by", ""),
        reason=fields.get("entered_reason", ""),
        since_seq=integer("entered_seq", fields.get("entered_seq") or 0),
        since_ms=integer("entered_at_ms", fields.get("entered_at_ms") or 0),
        left_by=fields.get("left_by", ""),
        left_reason=fields.get("left_reason", ""),
        left_seq=integer("left_seq", fields.get("left_seq") or 0),
    )


def meter_value(meter_id: str, fields: Mapping[str, str], *, key: str = "") -> MeterValue:
    """A meter's value from its hash's ``v`` and ``value_microcents`` fields."""
    fields = upgraded("meter", meter_id, fields)
    with reading("meter", meter_id, key):
        return MeterValue(meter_id, integer("value_microcents", fields["value_microcents"]))


def link_group_description(link_group_id: str, fields: Mapping[str, str]) -> str:
    """A link group's description from its info hash's ``v`` and ``description`` fields."""
    return str(upgraded("link group", link_group_id, fields)["description"])


def table_json(table: TableConfig) -> str:
    """A table's configuration as canonical JSON with its schema version (compared byte for
    byte on re-registration)."""
    record = {**table.to_data(), "v": SCHEMA_VERSION}
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def table_config(raw: str | bytes, *, key: str = "", name: str = "") -> TableConfig:
    """Decode a stored table configuration (``name``, its id, and ``key`` name it if it is
    corrupt: JSON that does not parse, or a definition that is not a table's)."""
    with reading("table", name or "?", key):
        stored = _json(raw)
        where = name or str(stored.get("table_id", "?"))
        with reading("table", where, key):
            record = upgraded("table", where, stored)
            return TableConfig.from_data({k: v for k, v in record.items() if k != "v"})


def link_group_snapshot(
    raw: str | bytes, meter_keys: Mapping[str, str] | None = None, jackpots_key: str = ""
) -> LinkGroupSnapshot:
    """Decode the audit snapshot script's reply. A meter whose value, reserve or pending
    count is not an integer is left out of its meters and named in ``corrupt`` (with its key
    from ``meter_keys``), as is a pending jackpot whose record does not read (in
    ``jackpots_key``): the audit reports them and goes on."""
    reply = json.loads(raw)
    meters: list[MeterBalance] = []
    corrupt: list[str] = []
    corrupt_meters: list[str] = []
    for m in items(reply.get("meters")):
        meter_id = str(m["meter_id"])
        try:
            with reading("meter", meter_id, (meter_keys or {}).get(meter_id, "")):
                meters.append(
                    MeterBalance(
                        meter_id,
                        integer("value_microcents", m["value"]),
                        integer("reserve_microcents", m["reserve"]),
                        integer("pending_jackpots", m["pending"]),
                    )
                )
        except CorruptRecord as error:
            corrupt.append(str(error))
            corrupt_meters.append(meter_id)
    for bad in items(reply.get("corrupt_jackpots")):
        corrupt.append(str(CorruptRecord("jackpot", str(bad["id"]), jackpots_key, bad["why"])))
    return LinkGroupSnapshot(
        seq=int(reply["seq"]),
        meters_unchanged=reply["same_meters"] is True,
        meters=tuple(meters),
        pending_jackpot_meters=tuple(str(m) for m in items(reply.get("pending_meters"))),
        checkpoint=checkpoint(reply.get("checkpoint") or {}),
        last_entry_id=str(reply.get("last_entry_id", "")),
        corrupt=tuple(corrupt),
        corrupt_meters=tuple(corrupt_meters),
    )


CHECKPOINT_FIELDS = frozenset(
    {
        "seq",
        "hash",
        "signature",
        "signed_by",
        "signed_as",
        "epoch",
        "signed_exported_seq",
        "key_handovers",
        "signed_handovers",
        "exported_seq",
        "exported_at_ms",
    }
)
"""The fields of a checkpoint hash besides the sums ``value:<meter>``/``reserve:<meter>``."""
CHECKPOINT_UNSIGNED = frozenset({"exported_seq", "exported_at_ms", "key_handovers"})
"""What a checkpoint at journal #0 (nothing trimmed) may hold: the export marker and key
handovers (each signed by its old key); sums, a hash or a signature need a trimmed position."""


def _count(name: str, value: Any) -> int:
    text = str(value)
    if not text.isdigit():
        raise FailedPrecondition(f"the checkpoint's {name} is {text[:40]!r}, not a count")
    return int(text)


def _microcents(name: str, value: Any) -> int:
    text = str(value)
    if not text.removeprefix("-").isdigit():
        raise FailedPrecondition(f"the checkpoint's {name} is {text[:40]!r}, not microcents")
    return int(text)


def checkpoint(fields: Mapping[str, str]) -> Checkpoint:
    """Decode a checkpoint hash (``cjson`` encodes an empty one as ``[]``: no fields).

    Refused (:class:`FailedPrecondition`, naming what is wrong) when it holds a field no
    checkpoint has, a count or amount that is not a decimal integer, anything but the export
    marker and key handovers at journal #0 (``seq`` absent or 0: nothing trimmed, so no sums,
    hash or signature can be explained by the chain), or, above #0, no hash, signature or
    signer. The signature itself is checked by :mod:`controller.journal.checkpoint_signature`."""
    fields = fields if isinstance(fields, Mapping) else {}
    sums: dict[str, dict[str, int]] = {"value": {}, "reserve": {}}
    for name, value in fields.items():
        kind, _, meter_id = name.partition(":")
        if meter_id and kind in sums:
            sums[kind][meter_id] = _microcents(name, value)
        elif name not in CHECKPOINT_FIELDS:
            raise FailedPrecondition(f"the checkpoint holds a field no checkpoint has: {name!r}")
    seq = _count("seq", fields.get("seq", 0))
    if not seq:
        stray = sorted(name for name in fields if name not in CHECKPOINT_UNSIGNED and name != "seq")
        if stray:
            raise FailedPrecondition(
                f"the checkpoint holds {', '.join(stray)[:200]} but no trimmed position "
                "(journal #0): only a signed trim writes those; it was forged"
            )
    else:
        missing = [name for name in ("hash", "signature", "signed_by") if not fields.get(name)]
        if missing:
            raise FailedPrecondition(
                f"the checkpoint at journal #{seq} has no {', '.join(missing)}: a trim writes "
                "them with its signature; it was altered"
            )
    return Checkpoint(
        seq=seq,
        value_microcents=sums["value"],
        reserve_microcents=sums["reserve"],
        exported_seq=_count("exported_seq", fields.get("exported_seq", 0)),
        exported_at_ms=_count("exported_at_ms", fields.get("exported_at_ms", 0)),
        hash=str(fields.get("hash", "")),
        signature=str(fields.get("signature", "")),
        signed_by=str(fields.get("signed_by", "")),
        signed_as=str(fields.get("signed_as", "")),
        epoch=str(fields.get("epoch", "")),
        signed_exported_seq=_count("signed_exported_seq", fields.get("signed_exported_seq", 0)),
        key_handovers=str(fields.get("key_handovers", "")),
        signed_handovers=_count("signed_handovers", fields.get("signed_handovers", 0)),
    )

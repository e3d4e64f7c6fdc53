"""Closing a gaming day: compute its statement from the journal, sign it, journal it once.

:func:`close` reads a link group's whole journal from Redis (from its trim checkpoint on) and
its meters at one instant, computes the gaming day's statement
(:func:`controller.domain.day_close.compute`, which refuses one that does not balance, naming
where), signs its digest with the checkpoint key (the Ed25519 key ``journal trim`` signs
with, :mod:`controller.journal.checkpoint_signature`), and journals it in one atomic step
(``close_day.lua``): a ``day_closed`` entry holding the statement, its digest and signature,
the gaming-day definition, and ``after_day``: what each meter's value and reserve moved after
the day up to the entry (so the audit checks the closing against its own sums there). Closing
a closed day again answers the same entry; another statement for it is refused.

:func:`from_export` recomputes a day from an export directory alone
(``jackpotctl journal export``), and :func:`verify` checks a journaled statement: its digest,
its signature, and that recomputing the day from the journal gives the same statement.
:func:`controller.journal.audit.entry_problems` is the audit's check of one ``day_closed`` entry.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.domain import day_close
from controller.domain.day_close import Statement
from controller.domain.gaming_day import GamingDay
from controller.domain.records import Checkpoint, JournalEntry, MeterBalance
from controller.journal import checkpoint_signature
from controller.journal import export as journal_export
from controller.journal.audit import entry_problems
from controller.store import codec
from controller.store.redis_store import RedisStore
from jackpot.errors import FailedPrecondition, InvalidArgument, NotFound, StoreUnavailable

ENTRY_TYPE = day_close.ENTRY_TYPE
"""The journal entry a close writes: ``day_closed``."""
RACES = 20
"""How many times a close computes again when play wrote entries meanwhile."""


@dataclass(frozen=True, slots=True)
class Closed:
    """A closed (or recomputed) day: the statement, its document and digest, and the seq of
    its ``day_closed`` entry (0: recomputed, not journaled)."""

    statement: Statement
    document: dict[str, Any]
    digest: str
    seq: int = 0


async def _read(store: RedisStore, group: str) -> tuple[Any, list[JournalEntry]]:
    snapshot = await store.journal.audit_snapshot(group)
    entries = [
        entry
        async for entry in store.journal.entries(
            group, end=snapshot.last_entry_id or "+", unreadable=True
        )
    ]
    return snapshot, entries


def _after_day(statement: Statement, entries: Sequence[JournalEntry]) -> dict[str, list[int]]:
    """Per meter, [value, reserve] moved by the entries after the statement's last one."""
    moved: dict[str, list[int]] = {}
    for entry in entries:
        if entry.seq > statement.through_seq and entry.meter_id:
            pair = moved.setdefault(entry.meter_id, [0, 0])
            pair[0] += entry.delta_meter_microcents
            pair[1] += entry.delta_reserve_microcents
    return moved


async def close(
    store: RedisStore,
    group: str,
    gaming_day: GamingDay,
    day: date,
    signing_key: Ed25519PrivateKey,
    actor: str,
) -> Closed:
    """Close gaming ``day`` of link group ``group`` (see the module)."""
    _, to_ms = gaming_day.window_ms(day)
    snapshot, entries = await _read(store, group)
    _, epochs = await store.epochs.epoch_ids(group)
    opening = checkpoint_signature.check(
        signing_key.public_key(), group, snapshot.checkpoint, epochs=epochs or None
    )
    if opening.problems:  # the statement opens from the checkpoint's sums: they must hold
        raise FailedPrecondition("; ".join(opening.problems))
    statement = day_close.compute(
        group,
        gaming_day,
        day,
        entries,
        checkpoint=snapshot.checkpoint,
        meters_now=snapshot.meters,
        head_seq=snapshot.seq,
    )
    document = statement.document()
    digest = day_close.digest(document)
    signature = signing_key.sign(day_close.signed_message(group, day.isoformat(), digest))
    for _ in range(RACES):
        fields = [
            digest,
            to_ms,
            snapshot.seq,
            day_close.canonical(document).decode(),
            json.dumps(_after_day(statement, entries), sort_keys=True, separators=(",", ":")),
            signature.hex(),
            checkpoint_signature.key_id(signing_key.public_key()),
            gaming_day.zone,
            gaming_day.start_hour,
            statement.through_seq,
            actor,
        ]
        try:
            seq = await store.journal.close_day(group, day.isoformat(), fields)
        except StoreUnavailable as error:
            if "moved on" not in str(error):
                raise
            # Play wrote entries since the read. The script refuses a day that has not ended
            # before it says so, so they are after the day: they move only after_day. Read
            # just them, not the whole journal again.
            snapshot = await store.journal.audit_snapshot(group)
            after = f"({entries[-1].entry_id}" if entries else "-"
            entries += [
                entry
                async for entry in store.journal.entries(
                    group, start=after, end=snapshot.last_entry_id or "+", unreadable=True
                )
            ]
            continue
        return Closed(statement, document, digest, seq)
    raise StoreUnavailable(f"link group {group}: the journal kept moving; close the day again")


def exported(directory: Path, group: str) -> tuple[Checkpoint, list[JournalEntry], Any]:
    """An export's chain start, journal entries and snapshot."""
    target = journal_export.group_directory(directory, group)
    try:
        snapshot = json.loads((target / journal_export.SNAPSHOT_FILE).read_bytes())
        start_path = target / journal_export.CHAIN_START_FILE
        start = (
            codec.checkpoint(json.loads(start_path.read_bytes()))
            if start_path.exists()
            else Checkpoint()
        )
    except OSError as error:
        raise NotFound(f"cannot read the export of link group {group}: {error}") from None
    except ValueError as error:
        raise InvalidArgument(f"the export of link group {group} does not read: {error}") from None
    entries = journal_export.read_entries(target / journal_export.JOURNAL_FILE, group)
    return start, entries, snapshot


def _snapshot_meters(snapshot: Mapping[str, Any]) -> list[MeterBalance]:
    return [
        MeterBalance(
            str(meter_id),
            int(meter.get("value_microcents", 0)),
            int(meter.get("reserve_microcents", 0)),
            0,
        )
        for meter_id, meter in sorted((snapshot.get("meters") or {}).items())
    ]


def from_export(directory: Path, group: str, gaming_day: GamingDay, day: date) -> Closed:
    """Recompute gaming ``day`` of ``group`` from the export in ``directory`` alone; the
    snapshot's meters are checked against the exported journal's sums at its seq. When the
    export holds the day's ``day_closed`` entry, its seq is answered (compare the digests)."""
    start, entries, snapshot = exported(directory, group)
    seq = int(snapshot.get("seq", 0))
    kept = [entry for entry in entries if entry.seq <= seq]
    statement = day_close.compute(
        group,
        gaming_day,
        day,
        kept,
        checkpoint=start,
        meters_now=_snapshot_meters(snapshot),
        head_seq=seq,
    )
    document = statement.document()
    journaled = _journaled(kept, day)
    return Closed(
        statement, document, day_close.digest(document), journaled.seq if journaled else 0
    )


def _journaled(entries: Sequence[JournalEntry], day: date) -> JournalEntry | None:
    for entry in entries:
        if entry.type == day_close.ENTRY_TYPE and entry.fields.get("day") == day.isoformat():
            return entry
    return None


def verify(
    group: str,
    day: date,
    entries: Sequence[JournalEntry],
    keys: checkpoint_signature.PublicKeys,
    checkpoint: Checkpoint | None = None,
) -> tuple[JournalEntry, list[str]]:
    """Check the journaled statement of gaming ``day``: its digest and signature, and that
    the day recomputed from ``entries`` (with the definition the entry names) is the same
    statement. Answers the entry and the problems found (none: it verifies)."""
    entry = _journaled(entries, day)
    if entry is None:
        raise NotFound(f"link group {group}: gaming day {day} is not closed in this journal")
    f = entry.fields
    problems = []
    sums_value: Counter[str] = Counter(checkpoint.value_microcents if checkpoint else {})
    sums_reserve: Counter[str] = Counter(checkpoint.reserve_microcents if checkpoint else {})
    for before in entries:
        if before.seq >= entry.seq:
            break
        if before.meter_id:
            sums_value[before.meter_id] += before.delta_meter_microcents
            sums_reserve[before.meter_id] += before.delta_reserve_microcents
    problems += entry_problems(group, entry.seq, f, sums_value, sums_reserve, keys)
    if keys is not None and checkpoint is not None:  # the day opens from its sums
        problems += checkpoint_signature.check(keys, group, checkpoint).problems
    if keys is None:
        problems.append(f"{group}: give the checkpoint public key (--checkpoint-key) to verify")
    try:
        gaming_day = GamingDay(f.get("zone", ""), int(f.get("start_hour", "-1")))
        statement = day_close.compute(group, gaming_day, day, entries, checkpoint=checkpoint)
    except (FailedPrecondition, ValueError) as error:
        return entry, [*problems, str(error)]
    if day_close.digest(statement.document()) != f.get("digest"):
        problems.append(
            f"{group}: journal #{entry.seq}: the statement of gaming day {day} is not what the "
            "journal gives when the day is computed again"
        )
    return entry, problems

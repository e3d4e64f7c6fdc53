"""Restore verifies, then writes: a lost link group comes back only as its journal made it.

``jackpotctl restore --from DIR --link-group G --checkpoint-key FILE --reason ...`` rebuilds a
link group that Redis lost from its export (:mod:`controller.journal.export`). Nothing is
written until every check below passed; the first difference found is the refusal
(:class:`~controller.journal.export.ExportError`, naming the record and the journal entry):

1. **The offline audit** of the export (:func:`controller.journal.audit.verify_export` with the
   checkpoint public key, which a restore requires): the hash chain of ``journal.jsonl`` from
   its first entry or from the signed ``chain_start.json``, the snapshot's checkpoint
   (signature, hash, sums) and the snapshot's meters against the journal's sums. Then the
   signatures of the snapshot's checkpoint and of the chain start again,
   :func:`controller.journal.checkpoint_signature.problem`.
2. **The export is whole and agrees with itself** (:func:`read_export`): every entry from the
   file's first to the snapshot's sequence number, once; the chain; the sums; each pending set
   is exactly its records waiting; a retired id is not also live; held rounds and must-hit-by
   commitments as the scripts keep them.
3. **Every record is rebuilt from the entries that made it** (:func:`check_rebuilt`): the
   journal is replayed as the scripts write it (``controller/store/scripts/*.lua``) and each
   record of the snapshot is compared field by field with what the entries say:

   * a jackpot (``<group>:<seq>``) is made by entry ``seq``: an ``award`` (a percentage of
     the meter; the ``reset`` right after it gives its reset top-up), a ``fixed_award`` held
     for validation (one at or below its table's validation threshold was paid at the
     table: a jackpot of it is refused), or a ``mystery_hit`` (its ``reset`` likewise): its
     meter, table, round, seat, hand, wager, line, award, amount and the meter before and
     after it; then ``jackpot_approved`` / ``jackpot_rejected`` give its status, reviewer and
     note and ``jackpot_paid`` its payer (each repeating the jackpot's amount, table, round
     and meter, which must agree). The entries are checked against each other too: an award takes
     exactly its amount from the meter (``d_meter``), from the meter as the journal's sums
     have it at that entry (``meter_before_cents``), never more than it holds; the award is
     the line the table's paytable (its definition as the entries left it) gives that wager
     and hand: a percentage award exactly that share of the meter, a fixed award at most that
     line on the wager's largest amount (an envy bonus is not checked against its line); a
     jackpot is reviewed once, paid once and only once approved.
   * a jackpot's payout compliance (docs/payout-compliance.md): its witness by its
     ``jackpot_witnessed`` entry (once, while approved), and a payment held to a policy gives
     the slip that policy's requirements for its amount and wager, the tax-form reference or
     override and the witness the entry names; a jackpot no such entry touched has none.
   * an adjustment (``<group>:<seq>``) is made by ``adjustment_requested`` #seq (meter,
     amount, reason, reference, requester) and decided by ``adjustment_approved`` /
     ``adjustment_rejected`` (status, decider, note, decision's seq).
   * a correction of a settled round (``<group>:<seq>``) by ``correction_requested`` #seq
     (round, requester, reason, totals that are its lines' sums) and decided by
     ``round_corrected`` (the same lines; its ``correction_contribution`` entries each name
     it) or ``correction_rejected``; each ``correction_award`` makes a pending jackpot of no
     meter whose amount is a line of that applied correction awaiting validation.
   * a meter's definition (game, reset, rates, ceiling, kind, must-hit-by amount) by
     ``meter_created`` and each ``meter_updated``, ``meter_change_applied`` and
     ``meter_wound_down``; a change staged for its next hit by ``meter_change_staged`` until a
     ``meter_change_applied``, ``_dropped`` or ``_cancelled`` ends it (docs/staged-changes.md);
     its must-hit-by cycle and commitment by its
     last ``mystery_draw``; its last hit by its last ``award`` / ``mystery_hit``; its pending
     count by the jackpots found pending; a retired meter by ``meter_retired``.
   * a table's definition (``config``) by ``table_registered`` and each ``table_updated``, its
     revision by the number of updates, its last round is at least every round the journal
     locked out or rebased it to; a live table's definition must be one a registration makes
     (its game's printed paytables chosen by name, never rewritten: ``wager_offer``), of this
     link group, feeding its meters; a retired table by ``table_retired``.

   * a round exported open (it can still be settled) by its ``wagers_accepted`` entry: the
     count and cents of its wagers, per kind; no ``award``, ``fixed_award``, ``void`` or
     ``round_voided`` of it may follow (a settlement without any award writes no entry, so
     that one is the tables' outboxes' to tell, docs/journal.md).

   * the group's maintenance by its last ``maintenance_entered`` / ``maintenance_left``.

   * the closed gaming days (``days_closed``: day -> seq and digest) by the ``day_closed``
     entries (``jackpotctl day close``); the statement itself is the entry, checked by the
     offline audit (item 1: digest, signature, closing against the sums).

   A record no entry explains (a jackpot, adjustment, meter or table the journal never made),
   and an entry's record the snapshot lacks, are refused. Not rebuilt: a meter's statistics
   counters (``hits_total``, ``wagers_total``, ...), the group's event counters, times, a
   slip's cards and wager amount: none of them moves money or decides a payment (the
   reports and the audit read the journal); the description, the irregularities (checked
   against the held rounds, item 2) and the epoch record (its lineage is the epoch step's,
   :meth:`Snapshots.restore_epoch`).
4. **No other link group's table or meter is taken** (:meth:`Snapshots.restore_state`):
   a table or meter id of the export that the global table or meter index gives to another
   link group is refused before anything is written.

Then the records are written back as exported and, last and in one atomic step
(:meth:`Snapshots.restore_epoch`), the ``restored`` entry with who ran the restore (the
operator's identity), why, and the source: the directory, the SHA-256 of the export's files
(snapshot, journal and chain start) and the id of the checkpoint key that verified it.

**A trimmed export** (a first export of a journal Redis had already trimmed: its journal
starts after the signed checkpoint of ``chain_start.json``) cannot rebuild what was made
before that checkpoint: the checkpoint signs where the chain starts and what the trimmed
entries moved on each meter, not the records they made. The rule: a record made before the
export's first entry is accepted only when nothing can act on it any more and it moves no
money: a paid or rejected jackpot, a decided adjustment, a retired meter or table (their ids
stay taken); and a jackpot approved before it only when its ``jackpot_approved`` entry is in
the export (the entry repeats its amount, meter, table, round and reviewer). Anything else
that can still move money (a pending jackpot, an approved one whose approval was trimmed, a
waiting adjustment, a live meter's or table's definition, i.e. its paytable, an open round's
wagers) is refused: an attacker who can write the export could otherwise invent it. In
practice a trimmed export alone never restores a group whose meters and tables predate the
trim. Restore from the export directory that holds the journal from its first entry:
exports append to one directory (``journal.jsonl`` is then the whole journal, trims never
touch it), so that directory always can.

What stays the attacker's: someone who can rewrite the export *and* its journal after the
last signed checkpoint, consistently (new entries, renumbered, rechained, the sums and the
snapshot matching), writes a history that every check here accepts: the chain is not keyed.
The signed checkpoint (the key is required) anchors it up to the checkpoint; after it, only a
copy of a later head hash kept elsewhere (an earlier export, a printed audit) tells: given as
``--expect-head`` (:func:`head_problem`), the export must hold it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controller.domain import correction_check, payout_compliance
from controller.domain.config import TableConfig
from controller.domain.games import get_game
from controller.domain.journal_chain import GENESIS, ChainCheck, numbered_after
from controller.domain.offers import WagerDeclaration, wager_offer
from controller.domain.paytables import AwardRule
from controller.domain.records import Adjustment, Checkpoint, Irregularity, Jackpot
from controller.journal import checkpoint_signature
from controller.journal.audit import verify_export
from controller.journal.export import (
    CHAIN_START_FILE,
    JOURNAL_FILE,
    SNAPSHOT_FILE,
    ExportError,
    group_directory,
)
from controller.store import codec
from controller.store.redis_store import RedisStore
from jackpot.epochs import Epoch
from jackpot.errors import InvalidConfiguration, JackpotError
from jackpot.kinds import AwardKind
from jackpot.money import FULL_PPM, MICROCENTS_PER_CENT

MAX_SHOWN_DIFFERENCES = 5
"""How many of the offline audit's differences a refused restore prints."""
FINAL_JACKPOT = ("paid", "rejected")
"""Jackpot statuses nothing acts on any more."""
FINAL_ADJUSTMENT = ("approved", "rejected")
"""Adjustment statuses nothing acts on any more."""


@dataclass(frozen=True, slots=True)
class Export:
    """A link group's export as read back and checked: the snapshot; ``entries``, the
    journal entries after the snapshot's checkpoint (what a restore writes into the stream);
    ``history``, every entry the file holds up to the snapshot's sequence number (what the
    records are rebuilt from), starting after ``history_start`` (0, or the chain start's
    seq), and ``chain_start``, the checkpoint it chains to (``chain_start.json``, or none);
    ``checkpoint``, the snapshot's;
    ``sha256`` of the export's files (snapshot, journal, chain start if any)."""

    snapshot: dict[str, Any]
    entries: list[dict[str, Any]]
    sha256: str
    history: list[dict[str, Any]] = field(default_factory=list)
    history_start: int = 0
    chain_start: Checkpoint = field(default_factory=Checkpoint)
    checkpoint: Checkpoint = field(default_factory=Checkpoint)


def _numbered_in_order(history: list[dict[str, Any]], after: int, end: int) -> bool:
    """Whether ``history`` runs #``after``+1 .. #``end`` with no gap but a ``restored``
    entry's recorded jump (docs/journal.md, "Numbering across a restore")."""
    last = after
    for line in history:
        raw = line.get("fields")
        fields: dict[str, str] = raw if isinstance(raw, dict) else {}
        if int(line["seq"]) != numbered_after(fields, last) + 1:
            return False
        last = int(line["seq"])
    return last == end


def read_export(directory: Path, link_group_id: str) -> Export:
    """Read and check an export (see the module, checks 2 and 3); :class:`ExportError` says
    what is wrong. The checkpoint's signature is :func:`restore`'s (it needs the key)."""
    target = group_directory(directory, link_group_id)
    snapshot_path, journal_path = target / SNAPSHOT_FILE, target / JOURNAL_FILE
    start_path = target / CHAIN_START_FILE
    digest = hashlib.sha256()
    try:
        snapshot_bytes = snapshot_path.read_bytes()
        journal_bytes = journal_path.read_bytes()
        start_bytes = start_path.read_bytes() if start_path.exists() else b""
    except OSError as error:
        raise ExportError(f"cannot read the export of {link_group_id}: {error}") from None
    for part in (snapshot_bytes, journal_bytes, start_bytes):
        digest.update(part)
    try:
        snapshot = json.loads(snapshot_bytes)
        lines = [json.loads(line) for line in journal_bytes.splitlines() if line.strip()]
        start_fields = json.loads(start_bytes) if start_bytes else {}
        if not isinstance(snapshot, dict) or not all(isinstance(x, dict) for x in lines):
            raise ExportError(f"the export of {link_group_id} is not a snapshot and entries")
        if snapshot.get("link_group_id") != link_group_id:
            raise ExportError(f"{snapshot_path} is not an export of link group {link_group_id}")
        checkpoint = snapshot.get("checkpoint") or {}
        start, end = int(checkpoint.get("seq", 0)), int(snapshot["seq"])
        history_start = int(lines[0]["seq"]) - 1 if lines else end
        history = [line for line in lines if int(line["seq"]) <= end]
        entries = [line for line in history if start < int(line["seq"])]
    except json.JSONDecodeError as error:
        raise ExportError(f"the export of {link_group_id} is not valid JSON: {error}") from None
    except (KeyError, TypeError, ValueError) as error:
        raise ExportError(f"the export of {link_group_id} cannot be read: {error!r}") from None
    if history_start > start:
        raise ExportError(
            f"{journal_path} starts at #{history_start + 1}, after the snapshot's checkpoint "
            f"#{start}: the entries between are not in this export"
        )
    if not _numbered_in_order(history, history_start, end):  # a restore's jump accepted
        expected = list(range(history_start + 1, end + 1))
        have = [int(line["seq"]) for line in history]
        missing = sorted(set(expected) - set(have))[:5]
        raise ExportError(
            f"{journal_path} lacks journal entries the snapshot needs (#{start + 1}..#{end}; "
            f"missing e.g. {missing}) or holds some twice"
        )
    chain_start, checkpoint_record = _check_all(
        link_group_id, snapshot, history, entries, history_start, start_fields
    )
    return Export(
        snapshot,
        entries,
        digest.hexdigest(),
        history,
        history_start,
        chain_start,
        checkpoint_record,
    )


def _check_all(
    link_group_id: str,
    snapshot: dict[str, Any],
    history: list[dict[str, Any]],
    entries: list[dict[str, Any]],
    history_start: int,
    start_fields: Any,
) -> tuple[Checkpoint, Checkpoint]:
    """:func:`read_export`'s checks of a whole export (chain, sums, records, rebuilt
    records); answer the chain start's and the snapshot's checkpoints. Anything unreadable
    is an :class:`ExportError`."""
    try:
        chain_start = codec.checkpoint(start_fields if history_start else {})
        checkpoint_record = codec.checkpoint(snapshot.get("checkpoint") or {})
        if history_start and chain_start.seq != history_start:
            raise ExportError(
                f"the export of {link_group_id}: {JOURNAL_FILE} starts at "
                f"#{history_start + 1} but {CHAIN_START_FILE} is the checkpoint at "
                f"#{chain_start.seq}"
            )
        _check_history(link_group_id, snapshot, history, chain_start)
        _check_chain(link_group_id, snapshot, entries)
        _check_sums(link_group_id, snapshot, entries)
        _check_records(link_group_id, snapshot)
        check_rebuilt(
            link_group_id,
            snapshot,
            history,
            history_start,
            Counter(chain_start.value_microcents),
        )
    except ExportError:
        raise
    except JackpotError as error:  # e.g. a checkpoint the codec refuses (data at seq 0)
        raise ExportError(f"the export of {link_group_id} is refused: {error}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        # a field missing or not the number it must be: not what the scripts write
        raise ExportError(
            f"the export of {link_group_id} holds a record or entry that cannot be read: {error!r}"
        ) from None
    return chain_start, checkpoint_record


def _check_history(
    link_group_id: str,
    snapshot: dict[str, Any],
    history: list[dict[str, Any]],
    chain_start: Checkpoint,
) -> None:
    """Every entry the records are rebuilt from must run on the hash chain from the chain
    start (the journal's first entry, or ``chain_start.json``), and reach the snapshot's
    checkpoint with its hash and its sums: the same bytes the offline audit checked (a file
    changed between the audit and this read is refused here)."""
    checkpoint = codec.checkpoint(snapshot.get("checkpoint") or {})
    chain = ChainCheck(chain_start.seq, chain_start.hash if chain_start.seq else GENESIS)
    value, reserve = Counter(chain_start.value_microcents), Counter(chain_start.reserve_microcents)
    for entry in history:
        if chain.last_seq == checkpoint.seq and checkpoint.seq > chain_start.seq:
            break
        fields = entry["fields"]
        chain.add(str(entry["id"]), fields)
        if fields.get("meter"):
            value[fields["meter"]] += int(fields["d_meter"])
            reserve[fields["meter"]] += int(fields["d_reserve"])
    if not chain.ok:
        raise ExportError(f"the export of {link_group_id} is altered: {chain.problems[0]}")
    if checkpoint.seq > chain_start.seq and (
        chain.last_hash != checkpoint.hash
        or _nonzero(value) != _nonzero(checkpoint.value_microcents)
        or _nonzero(reserve) != _nonzero(checkpoint.reserve_microcents)
    ):
        raise ExportError(
            f"the export of {link_group_id} is altered: the checkpoint at journal "
            f"#{checkpoint.seq} is not where its entries lead (hash or sums)"
        )


def _nonzero(sums: Mapping[str, int]) -> dict[str, int]:
    """Sums per meter without the meters at zero (a checkpoint need not name them)."""
    return {meter_id: amount for meter_id, amount in sums.items() if amount}


def _check_chain(
    link_group_id: str, snapshot: dict[str, Any], entries: list[dict[str, Any]]
) -> None:
    """The entries must run on the hash chain from the snapshot's checkpoint."""
    checkpoint = codec.checkpoint(snapshot.get("checkpoint") or {})
    chain = ChainCheck(checkpoint.seq, checkpoint.hash if checkpoint.seq else GENESIS)
    for entry in entries:
        chain.add(str(entry["id"]), entry["fields"])
    if not chain.ok:
        raise ExportError(f"the export of {link_group_id} is altered: {chain.problems[0]}")


def _check_sums(
    link_group_id: str, snapshot: dict[str, Any], entries: list[dict[str, Any]]
) -> None:
    """The checkpoint plus the entries must give every meter's value and reserve exactly."""
    value: Counter[str] = Counter()
    reserve: Counter[str] = Counter()
    for name, amount in (snapshot.get("checkpoint") or {}).items():
        kind, _, meter_id = name.partition(":")
        if kind == "value" and meter_id:
            value[meter_id] += int(amount)
        elif kind == "reserve" and meter_id:
            reserve[meter_id] += int(amount)
    for entry in entries:
        fields = entry["fields"]
        if fields.get("meter"):
            value[fields["meter"]] += int(fields["d_meter"])
            reserve[fields["meter"]] += int(fields["d_reserve"])
    for meter_id, meter in snapshot["meters"].items():
        if (int(meter["value_microcents"]), int(meter["reserve_microcents"])) != (
            value[meter_id],
            reserve[meter_id],
        ):
            raise ExportError(
                f"the export of {link_group_id} is inconsistent: meter {meter_id} is "
                f"{meter['value_microcents']} (reserve {meter['reserve_microcents']}) "
                f"microcents but its journal sums to {value[meter_id]} ({reserve[meter_id]})"
            )


def _check_records(link_group_id: str, snapshot: dict[str, Any]) -> None:
    """The snapshot's records must agree with each other, as the scripts keep them: each
    pending set is exactly its hash's waiting records, a retired meter or table is no longer
    in the group, an open irregularity's round is exported still held, every must-hit-by
    meter carries its cycle's commitment and no secret; older exports lack the newer records
    (empty)."""
    where = f"the export of {link_group_id} is inconsistent:"
    meters, tables = snapshot["meters"], snapshot.get("tables") or {}
    retired_meters = snapshot.get("retired_meters") or {}
    retired_tables = snapshot.get("retired_tables") or {}
    try:
        jackpots = {key: codec.jackpot(raw) for key, raw in snapshot["jackpots"].items()}
        adjustments = {
            key: codec.adjustment(raw) for key, raw in (snapshot.get("adjustments") or {}).items()
        }
        irregularities = [
            codec.irregularity(raw) for raw in (snapshot.get("irregularities") or {}).values()
        ]
    except (ValueError, KeyError, TypeError, JackpotError) as error:
        raise ExportError(f"{where} a record cannot be read: {error}") from None
    waiting: list[tuple[str, list[str], dict[str, Jackpot | Adjustment], str]] = [
        ("pending jackpots", snapshot["pending"], dict(jackpots), "pending"),
        (
            "pending adjustments",
            snapshot.get("pending_adjustments") or [],
            dict(adjustments),
            "requested",
        ),
    ]
    for name, listed, records, status in waiting:
        due = {key for key, record in records.items() if record.status == status}
        if set(listed) != due:
            raise ExportError(
                f"{where} its {name} {sorted(listed)} are not the ones with status {status!r} "
                f"{sorted(due)}"
            )
    for what, live, retired in (
        ("meter", meters, retired_meters),
        ("table", tables, retired_tables),
    ):
        both = sorted(set(live) & set(retired))
        if both:
            raise ExportError(f"{where} {what} {both[0]} is both in the group and retired")
    for table_id, fields in retired_tables.items():
        if not fields.get("retired_seq"):
            raise ExportError(f"{where} retired table {table_id} has no retirement")
    for adjustment in adjustments.values():
        if adjustment.meter_id not in meters and adjustment.meter_id not in retired_meters:
            raise ExportError(
                f"{where} adjustment {adjustment.adjustment_id} is of meter "
                f"{adjustment.meter_id}, which the export does not hold"
            )
    _check_held_and_mystery(where, snapshot, irregularities)


def _check_held_and_mystery(
    where: str, snapshot: dict[str, Any], irregularities: list[Irregularity]
) -> None:
    """The maintenance state, held rounds and must-hit-by meters (:func:`_check_records`)."""
    state = (snapshot.get("maintenance") or {}).get("state", "play")
    if state not in ("maintenance", "play"):
        raise ExportError(f"{where} its maintenance state is {state!r}")
    rounds = snapshot.get("rounds") or {}
    for irregularity in irregularities:
        name = f"{irregularity.table_id}:{irregularity.round_id}"
        if irregularity.status == "open" and (rounds.get(name) or {}).get("state") != "irregular":
            raise ExportError(
                f"{where} round {irregularity.round_id} of table {irregularity.table_id} "
                f"waits for a supervisor ({irregularity.kind}) but is not exported as held"
            )
    for meter_id, fields in snapshot["meters"].items():
        if fields.get("kind") != "must_hit_by":
            continue
        if not fields.get("mystery_cycle") or not fields.get("mystery_commitment"):
            raise ExportError(f"{where} must-hit-by meter {meter_id} has no cycle commitment")
        if "hit_cents" in fields or "salt" in fields:
            raise ExportError(f"{where} must-hit-by meter {meter_id} carries its secret")


# ---------------------------------------------------------------- rebuilding the records


def _text(value: Any) -> str:
    """A record's or an entry's value as the decimal or plain string it stands for (JSON
    numbers, booleans as Lua's ``tostring``, a missing value as "")."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(slots=True)
class _Expected:
    """What the entries say one record's fields are: per field, the value and the entry
    (seq, type) that set it."""

    kind: str
    record_id: str
    fields: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    made_seq: int = 0
    """The entry that made the record (0: made before the export's first entry)."""

    def set(self, entry: Mapping[str, str], **values: Any) -> None:
        for name, value in values.items():
            self.fields[name] = (_text(value), int(entry["seq"]), entry["type"])

    def value(self, name: str) -> str:
        return self.fields[name][0] if name in self.fields else ""

    def compare(self, where: str, record: Mapping[str, Any]) -> None:
        """Refuse the first field of ``record`` that is not what its entry says."""
        for name, (value, seq, entry_type) in self.fields.items():
            if _text(record.get(name)) != value:
                raise ExportError(
                    f"{where} {self.kind} {self.record_id}: its {name} is "
                    f"{_text(record.get(name))!r} in the snapshot, but journal entry #{seq} "
                    f"({entry_type}) makes it {value!r}"
                )


def _table_changed(table: _Expected, entry: Mapping[str, str]) -> None:
    """A table's definition changed by ``entry`` (update_table.lua, _staged_tables.lua): the
    new one with the next revision, the one before kept (for a correction) with its revision."""
    rev = int(table.value("rev") or 0)
    table.set(
        entry,
        prev_config=table.value("config"),
        prev_rev=rev,
        config=entry.get("config"),
        rev=rev + 1,
    )


def _made_id(link_group_id: str, seq: int) -> str:
    """The id of the jackpot or adjustment journal entry ``seq`` made, as the scripts name it
    (``settle.lua``, ``lockout.lua``, ``request_adjustment.lua``): ``<group>:<seq>``."""
    return f"{link_group_id}:{seq}"


def _seq_of(record_id: str, link_group_id: str) -> int:
    """The journal seq an id ``<group>:<seq>`` names (0: not such an id)."""
    group, _, seq = record_id.rpartition(":")
    return int(seq) if group == link_group_id and seq.isdigit() else 0


@dataclass
class _Replay:
    """The journal replayed as the scripts write it: what each record should be."""

    link_group_id: str
    history_start: int
    value: Counter[str]
    where: str = ""
    jackpots: dict[str, _Expected] = field(default_factory=dict)
    held_maybe: set[str] = field(default_factory=set)
    """Jackpots a ``fixed_award`` may have made (a fixed award is held only above the
    table's validation threshold)."""
    trimmed_witness: set[str] = field(default_factory=set)
    """Jackpots whose payment names a witness recorded before the export's journal starts:
    the witness's certificate and note are not in the export (payout compliance)."""
    not_held: set[str] = field(default_factory=set)
    """Jackpot ids of fixed awards at or below their table's validation threshold: paid at
    the table, never held (a jackpot record of one would be paid a second time)."""
    adjustments: dict[str, _Expected] = field(default_factory=dict)
    meters: dict[str, _Expected] = field(default_factory=dict)
    retired_meters: dict[str, _Expected] = field(default_factory=dict)
    tables: dict[str, _Expected] = field(default_factory=dict)
    retired_tables: dict[str, _Expected] = field(default_factory=dict)
    last_round: Counter[str] = field(default_factory=Counter)
    configs: dict[str, str] = field(default_factory=dict)
    """Per table, its definition (JSON) as the entries so far left it."""
    decoded: dict[str, TableConfig] = field(default_factory=dict)
    max_wager: int = 0
    maintenance: _Expected | None = None
    """The group's maintenance as its last ``maintenance_entered``/``_left`` left it."""
    lockouts: dict[str, Mapping[str, str]] = field(default_factory=dict)
    """Per round ``<table>:<round>``, its ``wagers_accepted`` entry."""
    finished: dict[str, Mapping[str, str]] = field(default_factory=dict)
    """Per round, the first entry of its settlement (an award) or its void."""
    corrections: dict[str, _Expected] = field(default_factory=dict)
    """Per correction of a settled round, what its entries make of its record."""
    correction_entries: dict[str, Mapping[str, str]] = field(default_factory=dict)
    """Per correction, its ``correction_requested`` entry (docs/corrections.md)."""

    def __post_init__(self) -> None:
        self.where = f"the export of {self.link_group_id} is not what its journal made:"

    def refuse(self, entry: Mapping[str, str], message: str) -> ExportError:
        return ExportError(
            f"{self.where} journal entry #{entry['seq']} ({entry['type']}) {message}"
        )

    def _jackpot(self, entry: Mapping[str, str]) -> _Expected:
        """The jackpot a review or payment entry names, checked against what it repeats."""
        jackpot_id = entry.get("jackpot", "")
        expected = self.jackpots.get(jackpot_id)
        if expected is None:
            seq = _seq_of(jackpot_id, self.link_group_id)
            if not seq or seq > self.history_start:
                raise self.refuse(entry, f"names jackpot {jackpot_id!r}, which no entry made")
            expected = self.jackpots[jackpot_id] = _Expected("jackpot", jackpot_id)
            expected.set(
                entry,
                amount_cents=entry.get("amount_cents"),
                meter_id=entry.get("meter"),
                table_id=entry.get("table"),
                round_id=entry.get("round"),
                status="pending",
            )
        self.held_maybe.discard(jackpot_id)
        for name, repeated in (
            ("amount_cents", "amount_cents"),
            ("meter_id", "meter"),
            ("table_id", "table"),
            ("round_id", "round"),
        ):
            if expected.value(name) != _text(entry.get(repeated)):
                raise self.refuse(
                    entry,
                    f"says jackpot {jackpot_id} has {name} {entry.get(repeated)!r}, but "
                    f"entry #{expected.fields[name][1]} made it {expected.value(name)!r}",
                )
        return expected

    def add(self, entry: Mapping[str, str], following: Mapping[str, str] | None) -> None:
        """Replay one entry (``following``: the next one, for an award's reset)."""
        kind, seq = entry["type"], int(entry["seq"])
        meter_id = entry.get("meter", "")
        before = self.value[meter_id]
        if meter_id:
            self.value[meter_id] += int(entry.get("d_meter") or 0)
        if kind in _FINISHING and entry.get("table"):
            self.finished.setdefault(f"{entry.get('table')}:{entry.get('round')}", entry)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, entry, seq, before, following)

    # jackpots

    def _award(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        amount = int(entry.get("amount_cents") or 0)
        if int(entry.get("d_meter") or 0) != -amount * MICROCENTS_PER_CENT:
            raise self.refuse(entry, f"awards {amount} cents but takes {entry.get('d_meter')}")
        if int(entry.get("meter_before_cents") or -1) != before // MICROCENTS_PER_CENT:
            raise self.refuse(
                entry,
                f"says meter {entry.get('meter')} was {entry.get('meter_before_cents')} cents "
                f"but the journal sums it to {before // MICROCENTS_PER_CENT} cents there",
            )
        if int(entry.get("meter_after_cents") or -1) != (before // MICROCENTS_PER_CENT) - amount:
            raise self.refuse(entry, "leaves the meter at another amount than it took")
        if not 0 <= amount <= before // MICROCENTS_PER_CENT:
            raise self.refuse(
                entry, f"awards {amount} cents, more than the meter's {before} microcents"
            )
        rule = self._paytable_rule(entry)
        if rule is not None:
            due = (before // MICROCENTS_PER_CENT) * rule.meter_ppm // FULL_PPM
            percent = rule.kind is AwardKind.PERCENT_OF_METER
            if not percent or amount != due:
                gives = f"{due} cents" if percent else "no share of the meter"
                raise self.refuse(
                    entry,
                    f"awards {amount} cents where the table's paytable ({rule.text}) gives {gives}",
                )
        expected = self._held(entry, seq, following)
        expected.set(
            entry,
            award_kind="percent_of_meter",
            on_dealer_hand=entry.get("on_dealer"),
            meter_before_cents=entry.get("meter_before_cents"),
        )
        self.meters_hit(entry, seq)

    def _made_jackpot_id(self, entry: Mapping[str, str], seq: int) -> str:
        """The id of the jackpot an award entry makes: ``<group>:<its seq>``, or, for an award
        a restore's correction made again (restore_apply.lua: ``corrects``), the id the table
        was answered (``jackpot``), never one already made."""
        named = entry.get("jackpot", "")
        if not (entry.get("corrects") and named):
            return _made_id(self.link_group_id, seq)
        if named in self.jackpots:
            raise self.refuse(entry, f"makes jackpot {named} again")
        return named

    def _held(
        self, entry: Mapping[str, str], seq: int, following: Mapping[str, str] | None
    ) -> _Expected:
        """A jackpot made by a hit on a meter (an award or a mystery hit) and its reset."""
        jackpot_id = self._made_jackpot_id(entry, seq)
        expected = self.jackpots[jackpot_id] = _Expected("jackpot", jackpot_id, made_seq=seq)
        after = entry.get("meter_after_cents")
        topup, from_reserve = "0", "0"
        reset = (
            following
            if following is not None
            and following.get("type") == "reset"
            and following.get("meter") == entry.get("meter")
            else None
        )
        if reset is not None:
            topup, from_reserve = reset["d_meter"], str(-int(reset["d_reserve"]))
            after = reset.get("reset_cents")
        expected.set(
            reset if reset is not None else entry,
            reset_topup_microcents=topup,
            reset_from_reserve_microcents=from_reserve,
        )
        expected.set(
            entry,
            jackpot_id=jackpot_id,
            link_group_id=self.link_group_id,
            journal_seq=seq,
            meter_id=entry.get("meter"),
            table_id=entry.get("table"),
            round_id=entry.get("round"),
            seat=entry.get("seat"),
            wager=entry.get("wager"),
            amount_cents=entry.get("amount_cents"),
            status="pending",
            reviewed_by="",
            paid_by="",
        )
        expected.set(entry, player_token=entry.get("player") or "")  # the seat's, if given
        if entry["type"] == "award":
            expected.set(
                entry,
                hand=entry.get("hand"),
                line=entry.get("line"),
                award_text=entry.get("award"),
                meter_after_cents=after,
            )
        return expected

    def _table_at(self, entry: Mapping[str, str]) -> TableConfig | None:
        """The entry's table's definition as the entries so far left it (None: registered
        before the export's journal starts)."""
        config = self.configs.get(entry.get("table", ""))
        if config is None:
            return None
        table = self.decoded.get(config)
        if table is None:
            table = self.decoded[config] = codec.table_config(config)
        return table

    def _paytable_rule(self, entry: Mapping[str, str]) -> AwardRule | None:
        """The award the table's definition at that entry gives the entry's wager and line
        (refused when it gives none, or prints it otherwise than the entry); None when the
        table was registered before the export's journal starts, or for an envy bonus."""
        table = self._table_at(entry)
        if table is None or entry.get("envy_for_seat", "0") not in ("", "0"):
            return None
        offer = table.offer(entry.get("wager", ""))
        rule = offer.paytable.award_for(entry.get("line", "")) if offer is not None else None
        if offer is None or rule is None or rule.text != entry.get("award"):
            raise self.refuse(
                entry,
                f"pays {entry.get('award')!r} for {entry.get('line')!r} on the "
                f"{entry.get('wager')!r} wager, which table {table.table_id}'s paytable does not",
            )
        self.max_wager = offer.max_cents
        named = rule.meter or (offer.meter_ids[0] if offer.meter_ids else "")
        if rule.kind is AwardKind.PERCENT_OF_METER and entry.get("meter") != named:
            raise self.refuse(entry, f"takes from meter {entry.get('meter')}, not {named}")
        return rule

    def _fixed_award(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        rule = self._paytable_rule(entry)
        amount = int(entry.get("amount_cents") or 0)
        if rule is not None:
            if rule.kind is AwardKind.PERCENT_OF_METER:
                raise self.refuse(entry, "is a fixed award of a percentage-of-meter line")
            most = rule.fixed_award_cents(self.max_wager)
            if not 0 < amount <= most:
                raise self.refuse(
                    entry,
                    f"awards {amount} cents where the table's paytable ({rule.text}) pays at "
                    f"most {most} on its largest wager",
                )
        jackpot_id = self._made_jackpot_id(entry, seq)
        expected = self.jackpots[jackpot_id] = _Expected("jackpot", jackpot_id, made_seq=seq)
        table = self._table_at(entry)
        if table is None:
            self.held_maybe.add(jackpot_id)  # its validation threshold is not known
        elif table.validation_threshold_cents is None or amount <= table.validation_threshold_cents:
            # settlement.py: paid at the table, never held: a jackpot of it would be paid twice
            self.not_held.add(jackpot_id)
        expected.set(
            entry,
            jackpot_id=jackpot_id,
            link_group_id=self.link_group_id,
            journal_seq=seq,
            meter_id="",
            table_id=entry.get("table"),
            round_id=entry.get("round"),
            seat=entry.get("seat"),
            hand=entry.get("hand"),
            wager=entry.get("wager"),
            line=entry.get("line"),
            award_text=entry.get("award"),
            on_dealer_hand=entry.get("on_dealer"),
            envy_for_seat=entry.get("envy_for_seat") or "0",
            amount_cents=entry.get("amount_cents"),
            meter_before_cents="0",
            meter_after_cents="0",
            reset_topup_microcents="",
            reset_from_reserve_microcents="",
            status="pending",
            reviewed_by="",
            paid_by="",
        )
        expected.set(entry, player_token=entry.get("player") or "")  # the seat's, if given

    def _mystery_hit(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        amount = int(entry.get("amount_cents") or 0)
        if int(entry.get("d_meter") or 0) != -amount * MICROCENTS_PER_CENT or entry.get(
            "hit_cents"
        ) != entry.get("amount_cents"):
            raise self.refuse(entry, f"awards {amount} cents but takes {entry.get('d_meter')}")
        if not 0 < amount * MICROCENTS_PER_CENT <= before:
            raise self.refuse(
                entry, f"hits at {amount} cents, above the meter's {before} microcents"
            )
        expected = self._held(entry, seq, following)
        if following is not None and following.get("type") == "reset":
            # lockout.lua: the slip's meter after is the meter after the hit and its reset
            after = before - amount * MICROCENTS_PER_CENT + int(following.get("d_meter") or 0)
            expected.set(following, meter_after_cents=after // MICROCENTS_PER_CENT)
        expected.set(
            entry,
            hand="",
            line="must_hit_by",
            award_kind="must_hit_by",
            meter_before_cents=entry.get("amount_cents"),
            wager_cents=entry.get("wager_cents"),
        )
        self.meters_hit(entry, seq)

    def meters_hit(self, entry: Mapping[str, str], seq: int) -> None:
        meter = self.meters.get(entry.get("meter", ""))
        if meter is not None:
            meter.set(entry, last_hit_seq=seq)

    def _reviewed(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        expected = self._jackpot(entry)
        if expected.value("status") != "pending":
            raise self.refuse(entry, f"reviews jackpot {expected.record_id} again")
        if expected.made_seq:  # review_jackpot.lua: what a decision gives back to the meter
            moved = (int(entry.get("d_meter") or 0), int(entry.get("d_reserve") or 0))
            given_back = entry["type"] in ("jackpot_rejected", "jackpot_voided")
            if moved != self._given_back(expected, given_back):
                raise self.refuse(
                    entry, f"moves {moved} microcents (meter, reserve), not what it should"
                )
        expected.set(
            entry,
            status=entry["type"].removeprefix("jackpot_"),
            reviewed_by=entry.get("reviewer"),
            reviewed_by_cert=entry.get("reviewer_cert"),
            note=entry.get("note"),
        )

    @staticmethod
    def _given_back(expected: _Expected, rejected: bool) -> tuple[int, int]:
        """What a decision on a jackpot moves (microcents: meter, reserve): an approval
        nothing; a rejection gives a percentage award back to the meter less its reset's
        top-up (its reserve part to the reserve), a must-hit-by hit to the reserve."""
        if not rejected or not expected.value("meter_id"):
            return (0, 0)
        amount = int(expected.value("amount_cents") or 0) * MICROCENTS_PER_CENT
        if expected.value("award_kind") == "must_hit_by":
            return (0, amount)
        topup = int(expected.value("reset_topup_microcents") or 0)
        return (amount - topup, int(expected.value("reset_from_reserve_microcents") or 0))

    def _paid(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        expected = self._jackpot(entry)
        # a jackpot approved before the export's journal starts is known from this entry only
        only_here = not expected.made_seq and expected.fields["status"][1] == seq
        if int(entry.get("d_meter") or 0) or int(entry.get("d_reserve") or 0):
            raise self.refuse(entry, "moves money: a payment moves none")
        if expected.value("status") != "approved" and not only_here:
            raise self.refuse(
                entry, f"pays jackpot {expected.record_id}, {expected.value('status')}"
            )
        expected.set(
            entry,
            status="paid",
            paid_by=entry.get("payer"),
            paid_by_cert=entry.get("payer_cert"),
            paid_note=entry.get("note"),
        )
        if entry.get("compliance"):
            self._paid_compliance(entry, expected)

    def _paid_compliance(self, entry: Mapping[str, str], expected: _Expected) -> None:
        """A payment held to a payout policy (pay_jackpot.lua, docs/payout-compliance.md):
        the slip's requirements are the ones the entry's policy gives its amount and wager,
        its tax form and witness the ones the entry names (a witness the journal recorded
        must be the one the payment names)."""
        try:
            needs = payout_compliance.requirements(
                payout_compliance.entry_policy(entry),
                int(entry.get("amount_cents") or 0),
                int(entry.get("wager_cents") or 0),
            )
        except (InvalidConfiguration, ValueError) as error:
            raise self.refuse(entry, f"states a payout policy that is not one: {error}") from None
        witness = entry.get("witness", "")
        witness_seq = int(entry.get("witness_seq") or 0)
        if witness and "witnessed_by" not in expected.fields:
            if not 0 < witness_seq <= self.history_start:
                raise self.refuse(entry, f"names witness {witness!r}, whom no entry recorded")
            self.trimmed_witness.add(expected.record_id)
            expected.set(entry, witness_seq=witness_seq)
        if "witnessed_by" in expected.fields and expected.value("witnessed_by") != witness:
            raise self.refuse(
                entry,
                f"names witness {witness!r}, but entry #{expected.fields['witnessed_by'][1]} "
                f"recorded {expected.value('witnessed_by')!r}",
            )
        expected.set(
            entry,
            payout_compliance=entry.get("compliance"),
            tax_form_required=needs.tax_form_required,
            tax_form_reason=needs.tax_form_reason,
            tax_form_overridable=needs.tax_form_overridable,
            tax_form_ref=entry.get("tax_form_ref"),
            tax_form_override=entry.get("tax_form_override"),
            witness_required=needs.witness_required,
            witness_reason=needs.witness_reason,
            witnessed_by=witness,
        )

    def _witnessed(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        """witness_jackpot.lua: an approved jackpot's hand-pay witnessed, once, before it is
        paid; no money moves."""
        expected = self._jackpot(entry)
        if int(entry.get("d_meter") or 0) or int(entry.get("d_reserve") or 0):
            raise self.refuse(entry, "moves money: a witness moves none")
        if expected.value("status") != "approved" or expected.value("witnessed_by"):
            raise self.refuse(
                entry,
                f"witnesses jackpot {expected.record_id}, {expected.value('status')}"
                + (", witnessed already" if expected.value("witnessed_by") else ""),
            )
        expected.set(
            entry,
            witnessed_by=entry.get("witness"),
            witnessed_by_cert=entry.get("witness_cert"),
            witness_note=entry.get("note"),
            witness_seq=seq,
        )

    # adjustments

    def _adjustment_requested(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        adjustment_id = _made_id(self.link_group_id, seq)
        expected = _Expected("adjustment", adjustment_id, made_seq=seq)
        self.adjustments[adjustment_id] = expected
        expected.set(
            entry,
            adjustment_id=adjustment_id,
            link_group_id=self.link_group_id,
            meter_id=entry.get("meter"),
            amount_cents=entry.get("amount_cents"),
            reason=entry.get("reason"),
            reference=entry.get("reference"),
            requested_by=entry.get("by"),
            requested_by_cert=entry.get("by_cert"),
            request_seq=seq,
            request_id=entry.get("request_id"),
            status="requested",
            decided_by="",
            decision_seq="0",
        )

    def _adjustment_decided(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        adjustment_id = entry.get("adjustment", "")
        expected = self.adjustments.get(adjustment_id)
        if expected is None:
            at = _seq_of(adjustment_id, self.link_group_id)
            if not at or at > self.history_start:
                raise self.refuse(entry, f"names adjustment {adjustment_id!r}, which no entry made")
            expected = self.adjustments[adjustment_id] = _Expected("adjustment", adjustment_id)
            expected.set(
                entry,
                meter_id=entry.get("meter"),
                amount_cents=entry.get("amount_cents"),
                reason=entry.get("reason"),
                reference=entry.get("reference"),
                requested_by=entry.get("requested_by"),
                status="requested",
            )
        for name, repeated in (
            ("meter_id", "meter"),
            ("amount_cents", "amount_cents"),
            ("reason", "reason"),
            ("reference", "reference"),
            ("requested_by", "requested_by"),
        ):
            if expected.value(name) != _text(entry.get(repeated)):
                raise self.refuse(entry, f"says adjustment {adjustment_id} has another {name}")
        if expected.value("status") != "requested":
            raise self.refuse(entry, f"decides adjustment {adjustment_id} again")
        approved = entry["type"] == "adjustment_approved"
        if int(entry.get("d_meter") or 0) != (
            int(entry.get("amount_cents") or 0) * MICROCENTS_PER_CENT if approved else 0
        ):
            raise self.refuse(entry, "moves another amount than the adjustment's")
        expected.set(
            entry,
            status="approved" if approved else "rejected",
            decided_by=entry.get("by"),
            decided_by_cert=entry.get("by_cert"),
            note=entry.get("note"),
            decision_seq=seq,
        )

    # meters

    def _meter_created(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        meter_id = entry.get("meter", "")
        seed = int(entry.get("reset_cents") or 0) * MICROCENTS_PER_CENT
        if (int(entry.get("d_meter") or 0), int(entry.get("d_reserve") or 0)) != (seed, 0):
            raise self.refuse(entry, f"seeds meter {meter_id} with another amount than its reset")
        expected = self.meters[meter_id] = _Expected("meter", meter_id, made_seq=seq)
        expected.set(
            entry,
            meter_id=meter_id,
            link_group_id=self.link_group_id,
            game=entry.get("game"),
            reset_cents=entry.get("reset_cents"),
            rate_ppm=entry.get("rate_ppm"),
            reserve_rate_ppm=entry.get("reserve_rate_ppm"),
            ceiling_cents=entry.get("ceiling_cents"),
            kind=entry.get("kind") or "progressive",
            must_hit_by_cents=entry.get("must_hit_by_cents") or "0",
            last_hit_seq="",
        )
        expected.set(entry, **_UNSTAGED, staged_cancelled="", wound_down_seq="", staged_tables="")

    def _contribution(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        """lockout.lua: a wager of ``amount_cents`` gives ``rate_ppm`` microcents a cent to
        the meter and ``reserve_rate_ppm`` to the reserve, the part above the ceiling
        (``overflow_microcents``) to the reserve instead."""
        meter = self.meters.get(entry.get("meter", ""))
        if meter is None:
            return  # made before the export's journal starts: its rates are not known
        amount = int(entry.get("amount_cents") or 0)
        overflow = int(entry.get("overflow_microcents") or 0)
        to_meter = amount * int(meter.value("rate_ppm") or 0) - overflow
        to_reserve = amount * int(meter.value("reserve_rate_ppm") or 0) + overflow
        moved = (int(entry.get("d_meter") or 0), int(entry.get("d_reserve") or 0))
        if overflow < 0 or to_meter < 0 or moved != (to_meter, to_reserve):
            raise self.refuse(
                entry,
                f"moves {moved} microcents (meter, reserve) for a wager of {amount} cents, "
                f"where meter {meter.record_id}'s rates give {(to_meter, to_reserve)}",
            )

    def _meter_updated(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        meter = self._known("meter", self.meters, entry.get("meter", ""), entry)
        if meter is None:
            return
        for name in ("reset_cents", "rate_ppm", "reserve_rate_ppm", "ceiling_cents"):
            if _text(entry.get(f"old_{name}")) != meter.value(name):
                raise self.refuse(entry, f"changes meter {meter.record_id}'s {name} from another")
            meter.set(entry, **{name: entry.get(f"new_{name}")})

    def _mystery_draw(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        meter = self.meters.get(entry.get("meter", ""))
        if meter is not None:
            meter.set(
                entry, mystery_cycle=entry.get("cycle"), mystery_commitment=entry.get("commitment")
            )

    def _meter_retired(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        meter_id = entry.get("meter", "")
        self._known("meter", self.meters, meter_id, entry)
        self.meters.pop(meter_id, None)
        expected = self.retired_meters[meter_id] = _Expected(
            "retired meter", meter_id, made_seq=seq
        )
        expected.set(
            entry,
            retired_seq=seq,
            to_meter_id=entry.get("to_meter"),
            retired_by=entry.get("by"),
            retired_reason=entry.get("reason"),
            approval=entry.get("approval"),
        )

    def _known(
        self, kind: str, records: dict[str, _Expected], record_id: str, entry: Mapping[str, str]
    ) -> _Expected | None:
        """The record an entry changes: one the replay made, None for one made before the
        export's first entry (a trimmed export; see the module), else refused."""
        if record_id in records:
            return records[record_id]
        if self.history_start:
            return None
        raise self.refuse(entry, f"changes {kind} {record_id!r}, which no entry made")

    # tables

    def _table_registered(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        table_id = entry.get("table", "")
        expected = self.tables[table_id] = _Expected("table", table_id, made_seq=seq)
        expected.set(entry, config=entry.get("config"), rev="0", **_TABLE_UNSTAGED)
        expected.set(entry, staged_cancelled="", prev_config="", prev_rev="")
        self.configs[table_id] = entry.get("config", "")

    def _table_updated(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        table = self._known("table", self.tables, entry.get("table", ""), entry)
        if table is None:
            return
        if _text(entry.get("old_config")) != table.value("config"):
            raise self.refuse(entry, f"changes table {table.record_id} from another definition")
        _table_changed(table, entry)
        self.configs[table.record_id] = entry.get("config", "")

    def _table_retired(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        table_id = entry.get("table", "")
        table = self._known("table", self.tables, table_id, entry)
        self.tables.pop(table_id, None)
        expected = self.retired_tables[table_id] = _Expected(
            "retired table", table_id, made_seq=seq
        )
        if table is not None:
            if _text(entry.get("config")) != table.value("config"):
                raise self.refuse(entry, f"retires table {table_id} with another definition")
            expected.set(entry, rev=int(table.value("rev")) + 1)
        expected.set(
            entry,
            retired_config=entry.get("config"),
            retired_seq=seq,
            retired_by=entry.get("by"),
            retired_by_cert=entry.get("by_cert"),
            retired_reason=entry.get("reason"),
            config="",
        )

    def _maintenance(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        expected = _Expected("maintenance of", self.link_group_id, made_seq=seq)
        if entry["type"] == "maintenance_entered":
            expected.set(
                entry,
                state="maintenance",
                entered_by=entry.get("by"),
                entered_reason=entry.get("reason"),
                entered_seq=seq,
                left_seq="0",
            )
        else:
            if self.maintenance is not None:
                expected.fields = dict(self.maintenance.fields)
            expected.set(
                entry, state="play", left_by=entry.get("by"), left_reason=entry.get("reason")
            )
            expected.set(entry, left_seq=seq)
        self.maintenance = expected

    def _round(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        table_id = entry.get("table", "")
        round_id = int(entry.get("last_round") or entry.get("round") or 0)
        self.last_round[table_id] = max(self.last_round[table_id], round_id)
        if entry["type"] == "wagers_accepted":
            self.lockouts[f"{table_id}:{round_id}"] = entry

    # staged changes and winding down (docs/staged-changes.md)

    def _meter_change_staged(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        """stage_meter_change.lua: one change waits per meter, staged against the meter's
        parameters as they are, its record (``staged``) saying what the entry says."""
        meter = self._known("meter", self.meters, entry.get("meter", ""), entry)
        if meter is None:
            return
        if meter.value("staged_seq") or meter.value("wound_down_seq"):
            raise self.refuse(entry, f"stages a change of meter {meter.record_id}, which has one")
        try:
            record = json.loads(entry.get("staged", ""))
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict) or record.get("at") not in ("hit", "reset"):
            raise self.refuse(entry, "holds no staged change record")
        for name in ("at", "by", "reason", *_STAGED_FIELDS):
            if _text(record.get(name)) != _text(entry.get(name)):
                raise self.refuse(entry, f"stages another {name} than its record's")
        self._check_old(entry, meter)
        meter.set(entry, staged_change=entry.get("staged"), staged_seq=seq)

    def _meter_change_resolved(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        """The staged change ends: applied (its new parameters) or dropped by the step that
        paid the hit (settle.lua, lockout.lua), or cancelled (cancel_meter_change.lua)."""
        meter = self._known("meter", self.meters, entry.get("meter", ""), entry)
        if meter is None:
            return
        waiting = meter.value("staged_seq")
        if not waiting or waiting != _text(entry.get("staged_seq")):
            raise self.refuse(
                entry,
                f"ends staged change #{entry.get('staged_seq')} of meter {meter.record_id}, "
                f"but {'#' + waiting if waiting else 'none'} waits",
            )
        if entry["type"] == "meter_change_applied":
            staged = json.loads(meter.value("staged_change"))
            for name in _STAGED_FIELDS:
                if _text(staged.get(name)) != _text(entry.get(name)):
                    raise self.refuse(entry, f"applies another {name} than the change staged")
            self._check_old(entry, meter)
            meter.set(entry, **{name: entry.get(f"new_{name}") for name in _METER_PARAMETERS})
        if entry["type"] == "meter_change_cancelled":
            meter.set(entry, staged_cancelled=entry.get("cancelled"))
        meter.set(entry, **_UNSTAGED)

    def _meter_wound_down(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        """wind_down_meter.lua: the rates become 0 (no contributions from then on)."""
        meter = self._known("meter", self.meters, entry.get("meter", ""), entry)
        if meter is None:
            return
        if meter.value("staged_seq") or meter.value("wound_down_seq"):
            raise self.refuse(entry, f"winds meter {meter.record_id} down again, or while staged")
        for name in ("rate_ppm", "reserve_rate_ppm"):
            if _text(entry.get(f"old_{name}")) != meter.value(name) or entry.get(name) != "0":
                raise self.refuse(entry, f"winds meter {meter.record_id}'s {name} from another")
        meter.set(entry, rate_ppm="0", reserve_rate_ppm="0", wound_down_seq=seq)

    # staged table changes (docs/staged-changes.md)

    def _waits_for(self, entry: Mapping[str, str], table_id: str, add: bool) -> None:
        """The meter a table change waits for lists the table (``staged_tables``, in the
        order the scripts keep: a staged table last; none: no field). A change that ends
        after its meter was retired (a cancellation) changes no meter: the retired meter's
        record, 'staged_tables' with it, is gone."""
        meter_id = entry.get("at_meter", "")
        if not add and meter_id in self.retired_meters and meter_id not in self.meters:
            return
        meter = self._known("meter", self.meters, meter_id, entry)
        if meter is None:
            return
        listed = json.loads(meter.value("staged_tables") or "[]")
        listed = [name for name in listed if name != table_id] + ([table_id] if add else [])
        meter.set(entry, staged_tables=json.dumps(listed, separators=(",", ":")) if listed else "")

    def _table_change_staged(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        """stage_table_change.lua: one change waits per table, staged against the table's
        definition as it is, its record (``staged``) saying what the entry says."""
        table = self._known("table", self.tables, entry.get("table", ""), entry)
        if table is None:
            return
        if table.value("staged_seq"):
            raise self.refuse(entry, f"stages a change of table {table.record_id}, which has one")
        try:
            record = json.loads(entry.get("staged", ""))
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict) or record.get("at") not in ("hit", "reset"):
            raise self.refuse(entry, "holds no staged table change record")
        for name, field_name in (("meter", "at_meter"), ("at", "at"), ("config", "config")):
            if _text(record.get(name)) != _text(entry.get(field_name)):
                raise self.refuse(entry, f"stages another {name} than its record's")
        if _text(entry.get("old_config")) != table.value("config") or _text(
            record.get("old_config")
        ) != table.value("config"):
            raise self.refuse(entry, f"changes table {table.record_id} from another definition")
        table.set(entry, staged_change=entry.get("staged"), staged_seq=seq)
        self._waits_for(entry, table.record_id, add=True)

    def _table_change_resolved(
        self, entry: Mapping[str, str], seq: int, before: int, following: Mapping[str, str] | None
    ) -> None:
        """The staged table change ends: applied (the new definition, its revision up) or
        dropped by the settlement that paid the hit, or cancelled."""
        if entry.get("table", "") in self.retired_tables and entry["type"] != (
            "table_change_applied"
        ):  # retired while it waited: the hit drops it from the meter's list
            self._waits_for(entry, entry.get("table", ""), add=False)
            return
        table = self._known("table", self.tables, entry.get("table", ""), entry)
        if table is None:
            return
        waiting = table.value("staged_seq")
        if not waiting or waiting != _text(entry.get("staged_seq")):
            raise self.refuse(
                entry,
                f"ends staged change #{entry.get('staged_seq')} of table {table.record_id}, "
                f"but {'#' + waiting if waiting else 'none'} waits",
            )
        staged = json.loads(table.value("staged_change"))
        if _text(entry.get("at_meter")) != _text(staged.get("meter")):
            raise self.refuse(entry, "ends it at another meter than the one it waited for")
        if entry["type"] == "table_change_applied":
            for name in ("old_config", "config"):
                if _text(staged.get(name)) != _text(entry.get(name)):
                    raise self.refuse(entry, f"applies another {name} than the change staged")
            if _text(entry.get("old_config")) != table.value("config"):
                raise self.refuse(entry, f"changes table {table.record_id} from another one")
            _table_changed(table, entry)
            self.configs[table.record_id] = entry.get("config", "")
        if entry["type"] == "table_change_cancelled":
            table.set(entry, staged_cancelled=entry.get("cancelled"))
        table.set(entry, **_TABLE_UNSTAGED)
        self._waits_for(entry, table.record_id, add=False)

    def _check_old(self, entry: Mapping[str, str], meter: _Expected) -> None:
        for name in _METER_PARAMETERS:
            if _text(entry.get(f"old_{name}")) != meter.value(name):
                raise self.refuse(entry, f"changes meter {meter.record_id}'s {name} from another")


_METER_PARAMETERS = ("reset_cents", "rate_ppm", "reserve_rate_ppm", "ceiling_cents")
"""The parameters a staged change changes (stage_meter_change.lua)."""
_STAGED_FIELDS = tuple(f"{when}_{name}" for name in _METER_PARAMETERS for when in ("old", "new"))
_UNSTAGED = {"staged_change": "", "staged_seq": ""}
_TABLE_UNSTAGED = {"staged_change": "", "staged_seq": ""}
"""A table's staged-change fields while none waits (stage_table_change.lua)."""
"""A meter's staged-change fields while none waits."""


_FINISHING = frozenset({"award", "fixed_award", "void", "round_voided"})
"""Entry types written only when a round is settled (an award) or voided: a round with one
is not open any more."""

_Handler = Callable[[_Replay, Mapping[str, str], int, int, Mapping[str, str] | None], None]
_HANDLERS: dict[str, _Handler] = {
    "award": _Replay._award,
    "fixed_award": _Replay._fixed_award,
    "mystery_hit": _Replay._mystery_hit,
    "jackpot_approved": _Replay._reviewed,
    "jackpot_rejected": _Replay._reviewed,
    "jackpot_voided": _Replay._reviewed,  # a must-hit-by hit its round's void reversed
    "jackpot_paid": _Replay._paid,
    "jackpot_witnessed": _Replay._witnessed,  # payout compliance
    "adjustment_requested": _Replay._adjustment_requested,
    "adjustment_approved": _Replay._adjustment_decided,
    "adjustment_rejected": _Replay._adjustment_decided,
    "contribution": _Replay._contribution,
    "meter_created": _Replay._meter_created,
    "meter_updated": _Replay._meter_updated,
    "mystery_draw": _Replay._mystery_draw,
    "meter_retired": _Replay._meter_retired,
    "table_registered": _Replay._table_registered,
    "table_updated": _Replay._table_updated,
    "table_retired": _Replay._table_retired,
    "maintenance_entered": _Replay._maintenance,
    "maintenance_left": _Replay._maintenance,
    "wagers_accepted": _Replay._round,
    "table_rebased": _Replay._round,
    "meter_change_staged": _Replay._meter_change_staged,
    "meter_change_applied": _Replay._meter_change_resolved,
    "meter_change_dropped": _Replay._meter_change_resolved,
    "meter_change_cancelled": _Replay._meter_change_resolved,
    "meter_wound_down": _Replay._meter_wound_down,
    "table_change_staged": _Replay._table_change_staged,
    "table_change_applied": _Replay._table_change_resolved,
    "table_change_dropped": _Replay._table_change_resolved,
    "table_change_cancelled": _Replay._table_change_resolved,
}
"""Per entry type, how it changes the records or what it must move (:class:`_Replay`); other
types (reset, void, transfers, maintenance, irregularities, ...) make none of the records
rebuilt here (their money is in the sums the audit checks)."""


DAY_CLOSED = "day_closed"
"""A gaming day's statement (:mod:`controller.actions.day_close`): it makes the closed-days
record."""


def _decoded(what: str, raw: Any) -> dict[str, Any]:
    """A JSON record of the snapshot (a jackpot, an adjustment, a retired meter)."""
    try:
        record = json.loads(raw)
    except (TypeError, json.JSONDecodeError) as error:
        raise ExportError(f"{what} is not a JSON record: {error}") from None
    if not isinstance(record, dict):
        raise ExportError(f"{what} is not a JSON record")
    return record


def check_rebuilt(
    link_group_id: str,
    snapshot: Mapping[str, Any],
    history: Sequence[Mapping[str, Any]],
    history_start: int,
    start_values: Counter[str],
) -> None:
    """Refuse (:class:`ExportError`, the first difference) a record of ``snapshot`` that is
    not what the journal entries ``history`` (``history_start`` + 1 onwards, the meters at
    ``start_values`` microcents before them) made of it, a record no entry made, and a record
    an entry made that the snapshot lacks (see the module, check 3 and the trimmed rule)."""
    replay = _Replay(link_group_id, history_start, Counter(start_values))
    fields = [dict(line["fields"]) for line in history]
    for number, entry in enumerate(fields):
        replay.add(entry, fields[number + 1] if number + 1 < len(fields) else None)
    _compare_jackpots(replay, snapshot)
    _compare_adjustments(replay, snapshot)
    _compare_corrections(replay, snapshot)
    _compare_meters(replay, snapshot)
    _compare_tables(replay, snapshot)
    _compare_open_rounds(replay, snapshot)
    _compare_days_closed(replay, fields, snapshot)
    maintenance: Mapping[str, Any] = snapshot.get("maintenance") or {}
    if replay.maintenance is not None:
        replay.maintenance.compare(replay.where, maintenance)
    elif not replay.history_start and maintenance.get("state", "play") != "play":
        raise ExportError(f"{replay.where} its maintenance: no journal entry entered it")


def _compare_days_closed(
    replay: _Replay, fields: Sequence[Mapping[str, str]], snapshot: Mapping[str, Any]
) -> None:
    """The closed gaming days (day -> "<seq> <digest>") against the ``day_closed`` entries
    that closed them; a day closed before a trimmed export's first entry is accepted as
    held (a statement moves no money)."""
    made = {
        entry.get("day", ""): f"{entry['seq']} {entry.get('digest', '')}"
        for entry in fields
        if entry.get("type") == DAY_CLOSED
    }
    held: Mapping[str, Any] = snapshot.get("days_closed") or {}
    for day in sorted(set(made) | set(held)):
        where = f"{replay.where} gaming day {day}"
        if day in made and _text(held.get(day)) != made[day]:
            raise ExportError(
                f"{where} was closed by journal entry #{made[day].split()[0]} with "
                f"{made[day]!r} but the record of closed days holds {held.get(day)!r}"
            )
        if day not in made and int(_text(held[day]).partition(" ")[0] or 0) > replay.history_start:
            raise ExportError(f"{where} is recorded closed, but no journal entry closed it")


def _made_before(replay: _Replay, kind: str, record_id: str) -> ExportError:
    return ExportError(
        f"{replay.where} {kind} {record_id} was made before journal entry "
        f"#{replay.history_start + 1}, where this export's journal starts (it was trimmed), "
        "and can still move money: it cannot be rebuilt from this export. Restore from the "
        "export directory that holds the journal from its first entry"
    )


_COMPLIANCE_MADE: Mapping[str, object] = {
    "payout_compliance": "",
    "tax_form_required": False,
    "tax_form_reason": "",
    "tax_form_overridable": False,
    "tax_form_ref": "",
    "tax_form_override": "",
    "witness_required": False,
    "witness_reason": "",
    "witnessed_by": "",
    "witnessed_by_cert": "",
    "witness_note": "",
    "witness_seq": 0,
}
"""A jackpot's payout compliance fields as it is made: only a ``jackpot_witnessed`` or a
``jackpot_paid`` entry held to a policy sets them (docs/payout-compliance.md)."""


def _compare_compliance_made(
    where: str, expected: _Expected, record: Mapping[str, Any], trimmed_witness: bool
) -> None:
    """Refuse a payout compliance field of ``record`` that no entry set and that is not as
    a jackpot is made (a witness or tax-form reference the journal never recorded); a
    witness recorded before the export's journal starts keeps its certificate and note."""
    for name, made in _COMPLIANCE_MADE.items():
        if trimmed_witness and name in ("witnessed_by_cert", "witness_note"):
            continue
        if name not in expected.fields and _text(record.get(name, made)) != _text(made):
            raise ExportError(
                f"{where} jackpot {expected.record_id}: its {name} is "
                f"{_text(record.get(name))!r} in the snapshot, but no journal entry "
                "(jackpot_witnessed, jackpot_paid) recorded it"
            )


def _compare_jackpots(replay: _Replay, snapshot: Mapping[str, Any]) -> None:
    where = replay.where
    jackpots: Mapping[str, Any] = snapshot.get("jackpots") or {}
    for jackpot_id, raw in sorted(jackpots.items()):
        record = _decoded(f"jackpot {jackpot_id}", raw)
        expected = replay.jackpots.get(jackpot_id)
        seq = _seq_of(jackpot_id, replay.link_group_id)
        if _text(record.get("jackpot_id")) != jackpot_id:
            raise ExportError(f"{where} jackpot {jackpot_id} holds the record of another")
        if jackpot_id in replay.not_held:
            raise ExportError(
                f"{where} jackpot {jackpot_id}: journal entry #{seq} (fixed_award) is at or "
                "below its table's validation threshold: paid at the table, never held"
            )
        if expected is None:
            if seq and seq <= replay.history_start and record.get("status") in FINAL_JACKPOT:
                continue  # trimmed, and nothing acts on it any more
            if seq and seq <= replay.history_start:
                raise _made_before(replay, "jackpot", jackpot_id)
            raise ExportError(f"{where} jackpot {jackpot_id}: no journal entry made it")
        if not expected.made_seq and not (
            expected.value("status") in FINAL_JACKPOT or expected.value("status") == "approved"
        ):
            raise _made_before(replay, "jackpot", jackpot_id)
        _compare_compliance_made(where, expected, record, jackpot_id in replay.trimmed_witness)
        expected.compare(where, record)
    for jackpot_id, expected in sorted(replay.jackpots.items()):
        if jackpot_id not in jackpots and jackpot_id not in replay.held_maybe | replay.not_held:
            seq = expected.made_seq or next(iter(expected.fields.values()))[1]
            raise ExportError(
                f"{where} journal entry #{seq} made jackpot {jackpot_id}, which the snapshot lacks"
            )


def _compare_adjustments(replay: _Replay, snapshot: Mapping[str, Any]) -> None:
    where = replay.where
    adjustments: Mapping[str, Any] = snapshot.get("adjustments") or {}
    for adjustment_id, raw in sorted(adjustments.items()):
        record = _decoded(f"adjustment {adjustment_id}", raw)
        expected = replay.adjustments.get(adjustment_id)
        seq = _seq_of(adjustment_id, replay.link_group_id)
        if _text(record.get("adjustment_id")) != adjustment_id:
            raise ExportError(f"{where} adjustment {adjustment_id} holds the record of another")
        if expected is None:
            if seq and seq <= replay.history_start and record.get("status") in FINAL_ADJUSTMENT:
                continue
            if seq and seq <= replay.history_start:
                raise _made_before(replay, "adjustment", adjustment_id)
            raise ExportError(f"{where} adjustment {adjustment_id}: no journal entry made it")
        expected.compare(where, record)
    for adjustment_id, expected in sorted(replay.adjustments.items()):
        if adjustment_id not in adjustments:
            raise ExportError(
                f"{where} journal entry #{next(iter(expected.fields.values()))[1]} made "
                f"adjustment {adjustment_id}, which the snapshot lacks"
            )


def _compare_meters(replay: _Replay, snapshot: Mapping[str, Any]) -> None:
    where = replay.where
    meters: Mapping[str, Mapping[str, Any]] = snapshot.get("meters") or {}
    pending = Counter(
        _text(_decoded(jackpot_id, raw).get("meter_id"))
        for jackpot_id, raw in (snapshot.get("jackpots") or {}).items()
        if jackpot_id in set(snapshot.get("pending") or [])
    )
    for meter_id, fields in sorted(meters.items()):
        expected = replay.meters.get(meter_id)
        if expected is None:
            if replay.history_start and meter_id not in replay.retired_meters:
                raise _made_before(replay, "meter", meter_id)
            raise ExportError(f"{where} meter {meter_id}: no journal entry made it")
        expected.compare(where, fields)
        if int(fields.get("pending_jackpots") or 0) != pending[meter_id]:
            raise ExportError(
                f"{where} meter {meter_id} counts {fields.get('pending_jackpots')} pending "
                f"jackpots but {pending[meter_id]} of its jackpots are pending"
            )
    for meter_id, expected in sorted(replay.meters.items()):
        if meter_id not in meters:
            raise ExportError(
                f"{where} journal entry #{expected.made_seq} made meter {meter_id}, which the "
                "snapshot lacks"
            )
    retired: Mapping[str, Any] = snapshot.get("retired_meters") or {}
    for meter_id, raw in sorted(retired.items()):
        record = _decoded(f"retired meter {meter_id}", raw)
        expected = replay.retired_meters.get(meter_id)
        if expected is None:
            if replay.history_start:
                continue  # retired before the export's journal starts: its id stays taken
            raise ExportError(f"{where} retired meter {meter_id}: no journal entry retired it")
        expected.compare(where, record)
    for meter_id, expected in sorted(replay.retired_meters.items()):
        if meter_id not in retired:
            raise ExportError(
                f"{where} journal entry #{expected.made_seq} retired meter {meter_id}, which "
                "the snapshot lacks"
            )


def _check_table_definition(
    replay: _Replay, table_id: str, config: str, meter_ids: set[str]
) -> None:
    """A live table's definition must be one a registration accepts (its game's rules and
    paytables, :class:`TableConfig`), of this link group and feeding its meters only."""
    where = f"{replay.where} table {table_id}:"
    try:
        table = codec.table_config(config)
    except (ValueError, KeyError, TypeError, JackpotError) as error:
        raise ExportError(f"{where} its definition is not one a table can have: {error}") from None
    if table.table_id != table_id or table.link_group_id != replay.link_group_id:
        raise ExportError(
            f"{where} its definition is of table {table.table_id} of link group "
            f"{table.link_group_id}"
        )
    others = sorted(set(table.meter_ids) - meter_ids)
    if others:
        raise ExportError(f"{where} it feeds meter {others[0]}, which is not of this link group")
    for offer in table.wagers:
        declared = WagerDeclaration(
            offer.wager,
            offer.paytable.name,
            tuple((line, rule.text) for line, rule in offer.paytable.lines),
            tuple((line, rule.text) for line, rule in offer.paytable.envy_lines),
            offer.min_cents,
            offer.max_cents,
            offer.meter_ids,
        )
        try:  # as a registration reads it: a printed paytable is chosen, never rewritten
            registered = wager_offer(get_game(table.game), declared, f"its {offer.wager} wager")
        except JackpotError as error:
            raise ExportError(f"{where} {error}") from None
        if registered != offer:
            raise ExportError(
                f"{where} its {offer.wager} wager's paytable {offer.paytable.name} is not the "
                "one a registration makes of it"
            )


def _compare_tables(replay: _Replay, snapshot: Mapping[str, Any]) -> None:
    where = replay.where
    meters: Mapping[str, Any] = snapshot.get("meters") or {}
    tables: Mapping[str, Mapping[str, Any]] = snapshot.get("tables") or {}
    for table_id, fields in sorted(tables.items()):
        expected = replay.tables.get(table_id)
        if expected is None:
            if replay.history_start and table_id not in replay.retired_tables:
                raise _made_before(replay, "table", table_id)
            raise ExportError(f"{where} table {table_id}: no journal entry registered it")
        expected.compare(where, {**fields, "rev": fields.get("rev") or "0"})
        _check_table_definition(replay, table_id, str(fields.get("config")), set(meters))
        if int(fields.get("last_round") or 0) < replay.last_round[table_id]:
            raise ExportError(
                f"{where} table {table_id}'s last round is {fields.get('last_round')}, but the "
                f"journal locked out (or rebased it to) round {replay.last_round[table_id]}"
            )
    for table_id, expected in sorted(replay.tables.items()):
        if table_id not in tables:
            raise ExportError(
                f"{where} journal entry #{expected.made_seq} registered table {table_id}, "
                "which the snapshot lacks"
            )
    retired: Mapping[str, Mapping[str, Any]] = snapshot.get("retired_tables") or {}
    for table_id, fields in sorted(retired.items()):
        expected = replay.retired_tables.get(table_id)
        if expected is None:
            if replay.history_start:
                continue
            raise ExportError(f"{where} retired table {table_id}: no journal entry retired it")
        expected.compare(where, fields)
    for table_id, expected in sorted(replay.retired_tables.items()):
        if table_id not in retired:
            raise ExportError(
                f"{where} journal entry #{expected.made_seq} retired table {table_id}, which "
                "the snapshot lacks"
            )


def _compare_open_rounds(replay: _Replay, snapshot: Mapping[str, Any]) -> None:
    """A round exported open (locked out, neither settled nor voided; it may still be
    settled) must hold the wagers its ``wagers_accepted`` entry accepted, and no entry may
    have settled (an award) or voided it: its wagers are what a settlement pays on."""
    where = replay.where
    rounds: Mapping[str, Mapping[str, Any]] = snapshot.get("rounds") or {}
    for name, fields in sorted(rounds.items()):
        if not fields:
            continue
        try:
            wagers = codec.locked_wagers(f"round {name}", fields)
        except (ValueError, KeyError, TypeError, JackpotError) as error:
            raise ExportError(f"{where} round {name}'s wagers cannot be read: {error}") from None
        done = replay.finished.get(name)
        if done is not None:
            raise ExportError(
                f"{where} round {name} is exported open, but journal entry #{done['seq']} "
                f"({done['type']}) settled or voided it"
            )
        if not wagers:
            continue  # nothing accepted: nothing to pay on
        entry = replay.lockouts.get(name)
        if entry is None:
            if replay.history_start:
                raise _made_before(replay, "round", name)
            raise ExportError(f"{where} round {name}: no journal entry accepted its wagers")
        by_kind: Counter[str] = Counter()
        cents: Counter[str] = Counter()
        for wager in wagers:
            by_kind[wager.kind] += 1
            cents[wager.kind] += wager.amount_cents
        said = (
            int(entry.get("wagers") or 0),
            int(entry.get("amount_cents") or 0),
            {
                kind: (int(entry.get(f"count:{kind}") or 0), int(entry.get(f"cents:{kind}") or 0))
                for kind in by_kind
            },
        )
        held = (
            len(wagers),
            sum(cents.values()),
            {kind: (by_kind[kind], cents[kind]) for kind in by_kind},
        )
        if said != held:
            raise ExportError(
                f"{where} round {name} holds {held[0]} wagers of {held[1]} cents, but journal "
                f"entry #{entry['seq']} (wagers_accepted) accepted {said[0]} of {said[1]}"
            )


# ---------------------------------------------------------------- the restore


async def restore(
    store: RedisStore,
    directory: Path,
    link_group_id: str,
    *,
    checkpoint_key: Ed25519PublicKey | Sequence[Ed25519PublicKey],
    actor: str,
    reason: str,
    expect_head: tuple[int, str] | None = None,
    seq_above: int = 0,
) -> int:
    """Restore a lost link group from its export after checking it (see the module); answer
    the journal sequence number of the ``restored`` entry. ``seq_above``: the highest
    sequence number the lost state may have issued (:func:`controller.actions.reconcile.seq_above`;
    :meth:`Snapshots.restore_epoch` numbers on after it). ``checkpoint_key``: the public
    key (or keys) of the trims' checkpoints the operator trusts, key handovers followed from
    it (required: a restore never trusts an unsigned start). ``expect_head``: a journal head
    (sequence number, hash) kept from earlier (a printed ``audit verify``, another copy of
    an export): the export's entry at that number must carry that hash."""
    if not reason.strip():
        raise InvalidConfiguration("a restore needs a reason (--reason), for the journal")
    keys = [checkpoint_key] if isinstance(checkpoint_key, Ed25519PublicKey) else checkpoint_key
    if not keys or not all(isinstance(key, Ed25519PublicKey) for key in keys):
        raise InvalidConfiguration(
            "a restore needs the checkpoint public key (--checkpoint-key FILE) to check the "
            "export's signed checkpoint"
        )
    try:
        report = verify_export(directory, list(keys), link_group_id)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ExportError(
            f"will not restore {link_group_id}: the offline audit cannot read its export: {error!r}"
        ) from None
    if not report.ok:
        shown = "; ".join(report.differences[:MAX_SHOWN_DIFFERENCES])
        more = len(report.differences) - MAX_SHOWN_DIFFERENCES
        raise ExportError(
            f"will not restore {link_group_id}: the offline audit of its export found "
            f"{len(report.differences)} differences: {shown}"
            + (f" (and {more} more: jackpotctl audit verify --file)" if more > 0 else "")
        )
    exported = read_export(directory, link_group_id)
    if expect_head is not None:
        problem = head_problem(exported, expect_head)
        if problem:
            raise ExportError(f"will not restore {link_group_id}: {problem}")
    target = group_directory(directory, link_group_id)
    epochs = _epochs(exported.snapshot)
    for checkpoint in (exported.checkpoint, exported.chain_start):
        problem = checkpoint_signature.problem(list(keys), link_group_id, checkpoint, epochs=epochs)
        if problem:
            raise ExportError(f"will not restore {link_group_id}: {problem}")
    await store.snapshots.restore_state(exported.snapshot, exported.entries)
    trusted = ",".join(sorted(checkpoint_signature.key_id(key) for key in keys))
    source = f"{target} sha256:{exported.sha256} checkpoint-key:{trusted}"
    return await store.snapshots.restore_epoch(
        exported.snapshot, actor=actor, reason=reason, source=source, seq_above=seq_above
    )


def head_problem(exported: Export, expected: tuple[int, str]) -> str | None:
    """Why the export does not hold the head ``expected`` (sequence number, hash) kept from
    earlier, or None when it does: its entry at that number (or its chain start) carries
    that hash. Only a consistent rewrite of the export after the last signed checkpoint
    passes every other check; a head kept elsewhere tells it."""
    seq, hash_ = expected
    end = int(exported.snapshot["seq"])
    where = f"the expected head journal #{seq} (sha256 {hash_[:16]}...)"
    if seq > end:
        return (
            f"{where} is after the export's last entry #{end}: the export is older than that "
            "head (restore a later export, or give a head it holds)"
        )
    if seq == exported.history_start and seq:
        found = exported.chain_start.hash
    elif seq > exported.history_start:
        found = str(exported.history[seq - exported.history_start - 1]["fields"].get("hash"))
    else:
        return f"{where} is before the export's journal starts (#{exported.history_start + 1})"
    if found != hash_.lower():
        return (
            f"{where} differs from the export's (sha256 {found[:16]}...): its journal was "
            "rewritten from there on, or is of other state"
        )
    return None


def _epochs(snapshot: Mapping[str, Any]) -> frozenset[str] | None:
    """The epoch ids the export's checkpoints may be signed in: its epoch record's and its
    lineage's (None: no epoch record, not checked), as the offline audit reads them."""
    record = snapshot.get("epoch") or {}
    if not isinstance(record, Mapping) or not record.get("id"):
        return None
    epoch = Epoch.from_fields(str(record["id"]), str(record.get("lineage") or ""), "")
    return frozenset({epoch.epoch_id, *(ancestor for ancestor, _ in epoch.lineage)})


# ---------------------------------------------------------------- corrections of a round
# docs/corrections.md: request_correction.lua and review_correction.lua write these entries.

FINAL_CORRECTION = frozenset({"approved", "rejected"})
"""A correction that can move no money any more."""


def _correction_requested(
    replay: _Replay, entry: Mapping[str, str], seq: int, before: int, following: Any
) -> None:
    correction_id = _made_id(replay.link_group_id, seq)
    lines = json.loads(entry.get("lines") or "[]")
    found = correction_check.totals(lines if isinstance(lines, list) else [])
    declared = tuple(
        int(entry.get(name) or 0)
        for name in ("pay_cents", "recover_cents", "operator_funded_cents")
    )
    if found != declared:
        raise replay.refuse(entry, f"declares totals {declared} but its lines sum to {found}")
    expected = replay.corrections[correction_id] = _Expected(
        "correction", correction_id, made_seq=seq
    )
    replay.correction_entries[correction_id] = entry
    expected.set(
        entry,
        correction_id=correction_id,
        link_group_id=replay.link_group_id,
        table_id=entry.get("table"),
        round_id=entry.get("round"),
        status="requested",
        reason=entry.get("reason"),
        requested_by=entry.get("by"),
        requested_by_cert=entry.get("by_cert"),
        request_seq=seq,
        request_id=entry.get("request_id"),
        from_table=entry.get("from_table") == "1",
        pay_cents=entry.get("pay_cents"),
        recover_cents=entry.get("recover_cents"),
        operator_funded_cents=entry.get("operator_funded_cents"),
        decided_by="",
        decision_seq=0,
    )


def _correction_named(replay: _Replay, entry: Mapping[str, str]) -> _Expected | None:
    """The correction an entry names (None: requested before a trimmed journal's start)."""
    correction_id = entry.get("correction", "")
    expected = replay.corrections.get(correction_id)
    if expected is None:
        at = _seq_of(correction_id, replay.link_group_id)
        if not at or at > replay.history_start:
            raise replay.refuse(entry, f"names correction {correction_id!r}, which no entry made")
    elif (expected.value("table_id"), expected.value("round_id")) != (
        _text(entry.get("table")),
        _text(entry.get("round")),
    ):
        raise replay.refuse(entry, f"names correction {correction_id} of another round")
    return expected


def _correction_decided(
    replay: _Replay, entry: Mapping[str, str], seq: int, before: int, following: Any
) -> None:
    expected = _correction_named(replay, entry)
    correction_id = entry.get("correction", "")
    if expected is None:
        expected = replay.corrections[correction_id] = _Expected("correction", correction_id)
    elif expected.value("status") != "requested":
        raise replay.refuse(entry, f"decides correction {correction_id} again")
    approved = entry["type"] == "round_corrected"
    request = replay.correction_entries.get(correction_id)
    if (
        approved
        and request is not None
        and json.loads(entry.get("lines") or "[]") != json.loads(request.get("lines") or "[]")
    ):
        raise replay.refuse(entry, f"applies other lines than correction {correction_id}'s")
    expected.set(
        entry,
        status="approved" if approved else "rejected",
        decided_by=entry.get("by"),
        decided_by_cert=entry.get("by_cert"),
        note=entry.get("note"),
        decision_seq=seq,
    )


def _correction_contribution(
    replay: _Replay, entry: Mapping[str, str], seq: int, before: int, following: Any
) -> None:
    expected = _correction_named(replay, entry)
    if expected is not None and expected.value("status") != "requested":
        raise replay.refuse(entry, f"moves money for decided correction {entry.get('correction')}")


def _correction_award(
    replay: _Replay, entry: Mapping[str, str], seq: int, before: int, following: Any
) -> None:
    expected = _correction_named(replay, entry)
    correction_id = entry.get("correction", "")
    if expected is not None and expected.value("status") != "approved":
        raise replay.refuse(entry, f"holds an award of correction {correction_id}, not applied")
    request = replay.correction_entries.get(correction_id)
    if request is not None:
        due = [
            int(line["due_cents"]) - int(line["paid_cents"])
            for line in json.loads(request.get("lines") or "[]")
            if _text(line.get("seat")) == entry.get("seat") and line.get("needs_validation")
        ]
        if int(entry.get("amount_cents") or 0) not in due:
            raise replay.refuse(
                entry, f"holds an amount no line of correction {correction_id} is due"
            )
    jackpot_id = _made_id(replay.link_group_id, seq)
    jackpot = replay.jackpots[jackpot_id] = _Expected("jackpot", jackpot_id, made_seq=seq)
    jackpot.set(
        entry,
        jackpot_id=jackpot_id,
        link_group_id=replay.link_group_id,
        journal_seq=seq,
        meter_id="",
        table_id=entry.get("table"),
        round_id=entry.get("round"),
        seat=entry.get("seat"),
        hand=entry.get("hand"),
        wager=entry.get("wager"),
        line=entry.get("line"),
        award_text=f"correction {correction_id}: {entry.get('award')}",
        on_dealer_hand=entry.get("on_dealer"),
        amount_cents=entry.get("amount_cents"),
        meter_before_cents="0",
        meter_after_cents="0",
        status="pending",
        reviewed_by="",
        paid_by="",
    )


_HANDLERS.update(
    {
        "correction_requested": _correction_requested,
        "round_corrected": _correction_decided,
        "correction_rejected": _correction_decided,
        "correction_contribution": _correction_contribution,
        "correction_award": _correction_award,
    }
)


def _compare_corrections(replay: _Replay, snapshot: Mapping[str, Any]) -> None:
    """Each correction record of the snapshot is what its entries made (one made before a
    trimmed journal's start only once decided), and each one the entries made is there."""
    where = replay.where
    corrections: Mapping[str, Any] = snapshot.get("corrections") or {}
    for correction_id, raw in sorted(corrections.items()):
        record = _decoded(f"correction {correction_id}", raw)
        if _text(record.get("correction_id")) != correction_id:
            raise ExportError(f"{where} correction {correction_id} holds the record of another")
        expected = replay.corrections.get(correction_id)
        seq = _seq_of(correction_id, replay.link_group_id)
        made_before = bool(seq) and seq <= replay.history_start
        if expected is None or (made_before and not expected.made_seq):
            if made_before and record.get("status") in FINAL_CORRECTION:
                if expected is not None:
                    expected.compare(where, record)
                continue
            if made_before:
                raise _made_before(replay, "correction", correction_id)
            raise ExportError(f"{where} correction {correction_id}: no journal entry made it")
        expected.compare(where, record)
    for correction_id, expected in sorted(replay.corrections.items()):
        if correction_id not in corrections:
            raise ExportError(
                f"{where} journal entry #{next(iter(expected.fields.values()))[1]} made "
                f"correction {correction_id}, which the snapshot lacks"
            )

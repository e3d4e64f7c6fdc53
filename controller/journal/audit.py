"""Recompute every meter and reserve from the journal, check its hash chain, compare.

The journal is the record; meters are its projection (design.md invariant 2). For each link
group this checks that the journal's entries run 1, 2, 3, ... up to the group's counter, each
carrying the hash that chains it to the one before (:mod:`controller.domain.journal_chain`): the
first entry that was edited, deleted, inserted or moved is named by its sequence number.
It checks that every meter's value and reserve equal the sums of their journal deltas (seed,
contributions, awards, resets, voids, rejections), and that the pending-jackpot count of
each meter matches the pending set, and that every must-hit-by hit reveals the hit point
and salt that open the commitment its cycle started with, within the cycle's range
(:class:`controller.domain.mystery.CommitmentCheck`), and that every staged meter change
ends once, as staged (:class:`controller.domain.staged.StagedCheck`). It reads Redis only,
and may run while tables play: meters are read at one instant (one read-only script) and the
journal is checked up to that instant's sequence number.

A trimmed journal (``jackpotctl journal trim``) starts after its signed checkpoint: the last
trimmed entry's sequence number and hash, and what the trimmed entries summed to per meter.
The chain and the sums then start from the checkpoint, whose signature is checked with the
trimmer's public key (:mod:`controller.journal.checkpoint_signature`), following the key handovers;
a checkpoint at journal #0 holding sums, a hash or a signature is refused.

A Redis without the installation record is never "OK", and heads kept from earlier
(``--expect-head``, or the last export's with ``--expect-head-from``) must still be in
Redis's journal unchanged, so a chain rewritten in Redis, or a link group the export names
and Redis lost, fails (docs/journal.md § 3 and § 7).

:func:`verify_export` checks an export directory (``jackpotctl journal export``) the same
way, offline: the chain of ``journal.jsonl`` from its first entry (or the signed checkpoint
in ``chain_start.json``), every checkpoint it meets, and the snapshot's meters against the
sums.

A gaming day's statement (a ``day_closed`` entry, ``jackpotctl day close``) is checked where
the audit meets it (:func:`entry_problems`): its digest, its signature
with the checkpoint key given, and each meter's closing against the audit's own sums there
less what the entry says moved after the day.
Payout compliance (docs/payout-compliance.md): both check every hand-pay held to a payout
policy against the policy its entry states - the requirements it gives the jackpot's amount
and wager, a well-formed tax-form reference or an allowed override, and a witness other than
the payer whose ``jackpot_witnessed`` entry came first
(:class:`controller.domain.payout_compliance.PaymentCheck`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controller.domain import day_close
from controller.domain.correction_check import CorrectionCheck
from controller.domain.journal_chain import GENESIS, ChainCheck
from controller.domain.mystery import CommitmentCheck
from controller.domain.payout_compliance import PaymentCheck
from controller.domain.records import Checkpoint, LinkGroupSnapshot
from controller.domain.staged import StagedCheck
from controller.domain.staged_tables import TableStagedCheck
from controller.journal import checkpoint_signature
from controller.journal import export as journal_export
from controller.journal.checkpoint_signature import PublicKeys
from controller.store import codec
from controller.store.redis_store import RedisStore
from jackpot.epochs import Epoch
from jackpot.errors import FailedPrecondition
from jackpot.money import MICROCENTS_PER_CENT, format_cents


@dataclass
class AuditReport:
    """What the audit found; ``ok`` when there is no difference."""

    link_groups: int = 0
    meters: int = 0
    entries: int = 0
    differences: list[str] = field(default_factory=list)
    heads: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Per link group, the last entry checked: its sequence number and chain hash."""
    shards: dict[str, list[str]] = field(default_factory=dict)
    """Per shard of a Redis Cluster (a primary's ``host:port``), the link groups it holds;
    one server is the one shard ``""``."""

    @property
    def ok(self) -> bool:
        """True when every value matched."""
        return not self.differences


def _money(microcents: int) -> str:
    """Microcents for people: "$12.34", "$12.34 + 5 microcents", "-7 microcents"."""
    cents, rest = divmod(abs(microcents), MICROCENTS_PER_CENT)
    if not rest:
        return format_cents(cents if microcents >= 0 else -cents)
    text = f"{format_cents(cents)} + {rest} microcents" if cents else f"{rest} microcents"
    return f"-({text})" if microcents < 0 and cents else ("-" if microcents < 0 else "") + text


TRIM_RACES = 5
"""How many times a link group is audited again when a trim ran between its snapshot and the
journal's first entry."""


async def _audit_group(
    store: RedisStore,
    link_group_id: str,
    report: AuditReport,
    checkpoint_key: PublicKeys,
    expected: tuple[int, str] | None = None,
) -> None:
    for _ in range(TRIM_RACES):
        group_report = AuditReport()
        if await _audit_once(store, link_group_id, group_report, checkpoint_key, expected):
            report.meters += group_report.meters
            report.entries += group_report.entries
            report.differences += group_report.differences
            report.heads |= group_report.heads
            return
    report.differences.append(f"{link_group_id}: trimmed while audited {TRIM_RACES} times")


def _stream_id(entry_id: str) -> tuple[int, int]:
    """A stream id "<ms>-<n>" in the stream's order ("" sorts first)."""
    millis, _, number = entry_id.partition("-")
    return (int(millis or 0), int(number or 0))


def _start(checkpoint: Checkpoint) -> ChainCheck:
    """A chain check from a checkpoint (or from the journal's first entry)."""
    return ChainCheck(checkpoint.seq, checkpoint.hash if checkpoint.seq else GENESIS)


async def _audit_once(
    store: RedisStore,
    link_group_id: str,
    report: AuditReport,
    checkpoint_key: PublicKeys,
    expected: tuple[int, str] | None = None,
) -> bool:
    """Audit one link group; False when a trim raced with it (audit it again). ``expected``:
    a head (sequence number, hash) kept from earlier (an export): Redis's journal must hold
    that entry with that hash, or its checkpoint be exactly there."""
    try:
        snapshot = await store.journal.audit_snapshot(link_group_id)
    except FailedPrecondition as error:  # the codec refuses a checkpoint nothing explains
        report.differences.append(f"{link_group_id}: {error}")
        return True
    checkpoint = snapshot.checkpoint
    _, epochs = await store.epochs.epoch_ids(link_group_id)
    verdict = checkpoint_signature.check(
        checkpoint_key, link_group_id, checkpoint, epochs=epochs or None
    )
    report.differences += verdict.problems
    value: Counter[str] = Counter(checkpoint.value_microcents)
    reserve: Counter[str] = Counter(checkpoint.reserve_microcents)
    chain = _start(checkpoint)
    commitments = CommitmentCheck(link_group_id)
    corrections = CorrectionCheck(link_group_id)
    staged = StagedCheck(link_group_id)
    staged_tables = TableStagedCheck(link_group_id)  # docs/staged-changes.md
    payments = PaymentCheck(link_group_id, checkpoint.seq)  # docs/payout-compliance.md
    rotations: list[tuple[int, str]] = []
    expected_hash = checkpoint.hash if expected and expected[0] == checkpoint.seq else None
    last_id = _stream_id(snapshot.last_entry_id)
    # Every record that does not read is named, and the audit goes on with the rest.
    corrupt = list(snapshot.corrupt)
    corrupt += [str(error) for error in await store.integrity.corrupt_records(link_group_id)]
    report.differences += [f"{link_group_id}: {text}" for text in dict.fromkeys(corrupt)]
    async for entry in store.journal.entries(link_group_id, unreadable=True):
        if _stream_id(entry.entry_id) > last_id:
            break  # written after the snapshot: the next audit sees it
        if entry.problem:
            report.differences.append(f"{link_group_id}: {entry.problem}")
        report.entries += 1
        chain.add(entry.entry_id, entry.fields)
        commitments.add(entry.fields)
        corrections.add(entry.fields)
        staged.add(entry.fields)
        staged_tables.add(entry.fields)
        payments.add(entry.fields)
        if entry.fields.get("type") == checkpoint_signature.ROTATION_ENTRY:
            rotations.append((entry.seq, entry.fields.get("handover", "")))
        if expected and entry.seq == expected[0]:
            expected_hash = entry.fields.get("hash", "")
        if entry.fields.get("type") == day_close.ENTRY_TYPE:  # a gaming day's statement
            report.differences += entry_problems(
                link_group_id, entry.seq, entry.fields, value, reserve, checkpoint_key
            )
        if entry.meter_id:
            value[entry.meter_id] += entry.delta_meter_microcents
            reserve[entry.meter_id] += entry.delta_reserve_microcents
    chain.finish(snapshot.seq)
    report.differences += [f"{link_group_id}: {problem}" for problem in chain.problems]
    report.differences += commitments.problems
    report.differences += corrections.problems
    report.differences += staged.problems
    report.differences += staged_tables.problems
    report.differences += payments.problems
    report.differences += checkpoint_signature.journal_problems(
        link_group_id, verdict.pending, rotations
    )
    if expected:
        report.differences += _head_problems(link_group_id, expected, expected_hash, checkpoint)
    report.heads[link_group_id] = (chain.last_seq, chain.last_hash)
    retired = await store.controls.retired_meter_ids(link_group_id)
    _compare_meters(link_group_id, snapshot, value, reserve, retired, report)
    # Entries trimmed after the snapshot was read look missing: audit the group again.
    return not report.differences or await _trim_moved(store, link_group_id, checkpoint)


async def _trim_moved(store: RedisStore, link_group_id: str, checkpoint: Checkpoint) -> bool:
    """False when a trim moved the checkpoint since it was read (audit again)."""
    try:
        return await store.journal.checkpoint_seq(link_group_id) == checkpoint.seq
    except FailedPrecondition:
        return True


def _head_problems(
    link_group_id: str, expected: tuple[int, str], found: str | None, checkpoint: Checkpoint
) -> list[str]:
    """Redis's journal against a head kept from earlier (``--expect-head``)."""
    seq, hash_ = expected
    where = f"{link_group_id}: the expected head journal #{seq} (sha256 {hash_[:16]}...)"
    if found is None:
        if seq < checkpoint.seq:
            return [
                f"{where} is before Redis's checkpoint at #{checkpoint.seq}: it cannot be "
                "compared (give a later head, e.g. the last export's)"
            ]
        return [f"{where} is not in Redis's journal: Redis lost entries it had, or was rolled back"]
    if found != hash_:
        return [
            f"{where} differs from Redis's (sha256 {found[:16]}...): the journal was rewritten "
            "from there on, or belongs to other state"
        ]
    return []


def _compare_meters(
    link_group_id: str,
    snapshot: LinkGroupSnapshot,
    value: Counter[str],
    reserve: Counter[str],
    retired: set[str],
    report: AuditReport,
) -> None:
    """Each meter's value, reserve and pending count against the journal's sums; a retired
    meter's entries (its ``meter_retired`` entry took all it held) sum to zero."""
    pending_by_meter = Counter(snapshot.pending_jackpot_meters)
    for meter in snapshot.meters:
        report.meters += 1
        name = f"{link_group_id}/{meter.meter_id}"
        if meter.value_microcents != value[meter.meter_id]:
            report.differences.append(
                f"{name}: meter is {_money(meter.value_microcents)} but the journal sums to "
                f"{_money(value[meter.meter_id])}"
            )
        if meter.reserve_microcents != reserve[meter.meter_id]:
            report.differences.append(
                f"{name}: reserve is {_money(meter.reserve_microcents)} but the journal sums "
                f"to {_money(reserve[meter.meter_id])}"
            )
        if meter.pending_jackpots != pending_by_meter[meter.meter_id]:
            report.differences.append(
                f"{name}: meter counts {meter.pending_jackpots} pending jackpots but "
                f"{pending_by_meter[meter.meter_id]} are pending"
            )
    for meter_id in sorted(set(value) - {meter.meter_id for meter in snapshot.meters}):
        if meter_id in snapshot.corrupt_meters:
            continue  # named as corrupt: its values are not known
        if meter_id in retired:
            if value[meter_id] or reserve[meter_id]:
                report.differences.append(
                    f"{link_group_id}/{meter_id}: retired, but the journal sums to "
                    f"{_money(value[meter_id])}, reserve {_money(reserve[meter_id])} (not zero)"
                )
            continue
        report.differences.append(
            f"{link_group_id}/{meter_id}: in the journal but no such meter exists"
        )


async def verify(
    store: RedisStore,
    checkpoint_key: PublicKeys = None,
    *,
    expect_heads: Mapping[str, tuple[int, str]] | None = None,
    installation_id: str = "",
) -> AuditReport:
    """Audit every link group of the store; ``checkpoint_key`` (one key or several) checks
    the signatures of trimmed journals' checkpoints (a signed checkpoint without it is a
    difference), following the key handovers from a given key.

    The link groups are those the index names and those each shard holds (on a Redis
    Cluster every primary is asked; a shard can lose its data alone): a group the index
    names that no shard holds, or one a shard holds that the index does not name (being
    created, or the index's shard lost it), is a difference. A Redis without the
    installation record (:data:`controller.store.keys.INSTALLATION`) is a difference (its
    data was lost: never "OK"), and so is one whose record is not ``installation_id`` (when
    given, e.g. the export's). ``expect_heads``: per link group, a head (sequence number,
    hash) kept from earlier (``--expect-head``, or the last export's): the group must be in
    Redis and its journal hold that entry unchanged."""
    report = AuditReport(shards=await store.catalog.link_groups_by_shard())
    expect_heads = expect_heads or {}
    record = await store.catalog.installation()
    if record is None:
        report.differences.append(
            "Redis holds no installation record: it lost its data (or was never installed); "
            'restore it (jackpotctl restore; RUNBOOK: "Redis lost its data")'
        )
    elif installation_id and record.get("id") != installation_id:
        report.differences.append(
            f"Redis is installation {record.get('id')}, not {installation_id} (the export's): "
            "its state was created anew or belongs to another installation"
        )
    indexed = set(await store.catalog.link_group_ids())
    held = {group: shard for shard, groups in report.shards.items() for group in groups}
    for group in sorted(set(expect_heads) - indexed - set(held)):
        seq, _ = expect_heads[group]
        report.differences.append(
            f"{group}: the expected heads name it (journal #{seq}) but Redis holds no state of it "
            "and its index does not name it: lost"
        )
    for group in sorted(indexed | set(held)):
        if group not in held:
            report.differences.append(
                f"{group}: named by the index of link groups, but no shard holds its state"
            )
            continue
        if group not in indexed:
            where = f" (shard {held[group]})" if held[group] else ""
            report.differences.append(
                f"{group}: its state is in Redis{where} but the index of link groups does not "
                "name it (being created, or the index lost it)"
            )
        report.link_groups += 1
        await _audit_group(store, group, report, checkpoint_key, expect_heads.get(group))
    return report


@dataclass(frozen=True, slots=True)
class ExportHeads:
    """What an export directory says Redis must still hold: per link group the last
    exported entry (sequence number, hash), and the installation id of the snapshots."""

    heads: dict[str, tuple[int, str]]
    installation_id: str


def export_heads(directory: Path) -> ExportHeads:
    """The heads of the export in ``directory`` (``audit verify --expect-head-from DIR``);
    :class:`FailedPrecondition` when it holds no export or an unreadable one."""
    heads: dict[str, tuple[int, str]] = {}
    installations: set[str] = set()
    groups = sorted(path for path in directory.iterdir()) if directory.is_dir() else []
    for path in groups:
        journal_path = path / journal_export.JOURNAL_FILE
        if not journal_path.is_file():
            continue
        last = ""
        try:
            with journal_path.open("rb") as handle:
                for line in handle:
                    if line.endswith(b"\n") and line.strip():
                        last = line.decode()
            entry = json.loads(last) if last else None
            if entry is not None:
                heads[path.name] = (int(entry["seq"]), str(entry["fields"]["hash"]))
            snapshot = json.loads((path / journal_export.SNAPSHOT_FILE).read_bytes())
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise FailedPrecondition(f"cannot read the export's head in {path}: {error}") from None
        installation = (snapshot.get("installation") or {}).get("id") or ""
        if installation:
            installations.add(str(installation))
    if not heads:
        raise FailedPrecondition(f"{directory} holds no export (no <link group>/journal.jsonl)")
    if len(installations) > 1:
        raise FailedPrecondition(
            f"{directory} holds exports of several installations: {sorted(installations)}"
        )
    return ExportHeads(heads, next(iter(installations), ""))


def verify_export(
    directory: Path, checkpoint_key: PublicKeys = None, link_group_id: str = ""
) -> AuditReport:
    """Audit an export directory offline (no Redis): every link group in it, or only
    ``link_group_id``."""
    report = AuditReport()
    if link_group_id:
        groups = [link_group_id]
    else:
        groups = (
            sorted(
                path.name
                for path in directory.iterdir()
                if (path / journal_export.SNAPSHOT_FILE).is_file()
            )
            if directory.is_dir()
            else []
        )
    if not groups:
        report.differences.append(f"{directory} holds no export (no <link group>/snapshot.json)")
    for group in groups:
        report.link_groups += 1
        _verify_export_group(
            journal_export.group_directory(directory, group), group, report, checkpoint_key
        )
    return report


def _read_json(path: Path, report: AuditReport) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, json.JSONDecodeError) as error:
        report.differences.append(f"cannot read {path}: {error}")
        return None


def _export_checkpoints(
    target: Path,
    snapshot: dict[str, Any],
    link_group_id: str,
    report: AuditReport,
    checkpoint_key: PublicKeys,
) -> tuple[Checkpoint, Checkpoint, checkpoint_signature.KeyVerdict] | None:
    """An export's checkpoints, each judged: the one its journal file starts after
    (``chain_start.json``, or none) and the snapshot's, with the snapshot's verdict; None
    when one cannot be decoded (a difference)."""
    start_path = target / journal_export.CHAIN_START_FILE
    epochs = _export_epochs(snapshot)
    try:
        start = (
            codec.checkpoint(_read_json(start_path, report) or {})
            if start_path.exists()
            else Checkpoint()
        )
        latest = codec.checkpoint(snapshot.get("checkpoint") or {})
    except FailedPrecondition as error:  # a checkpoint nothing explains
        report.differences.append(f"{target}: {link_group_id}: {error}")
        return None
    problems = checkpoint_signature.check(
        checkpoint_key, link_group_id, start, epochs=epochs
    ).problems
    report.differences += [f"{start_path}: {problem}" for problem in problems]
    verdict = checkpoint_signature.check(checkpoint_key, link_group_id, latest, epochs=epochs)
    if latest != start:
        report.differences += verdict.problems
    return start, latest, verdict


def _verify_export_group(
    target: Path, link_group_id: str, report: AuditReport, checkpoint_key: PublicKeys
) -> None:
    snapshot = _read_json(target / journal_export.SNAPSHOT_FILE, report)
    if not isinstance(snapshot, dict):
        return
    checkpoints = _export_checkpoints(target, snapshot, link_group_id, report, checkpoint_key)
    if checkpoints is None:
        return
    start, latest, verdict = checkpoints
    rotations: list[tuple[int, str]] = []
    end = int(snapshot["seq"])
    value: Counter[str] = Counter(start.value_microcents)
    reserve: Counter[str] = Counter(start.reserve_microcents)
    chain = _start(start)
    commitments = CommitmentCheck(link_group_id)
    corrections = CorrectionCheck(link_group_id)
    staged = StagedCheck(link_group_id)
    staged_tables = TableStagedCheck(link_group_id)  # docs/staged-changes.md
    payments = PaymentCheck(link_group_id, start.seq)  # docs/payout-compliance.md
    journal_path = target / journal_export.JOURNAL_FILE
    try:
        text = journal_path.read_text(encoding="utf-8")
    except OSError as error:
        report.differences.append(f"cannot read {journal_path}: {error}")
        return
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            entry = json.loads(line)
            entry_id, fields = str(entry["id"]), entry["fields"]
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            report.differences.append(f"{journal_path} line {number} is not an entry: {error}")
            continue
        report.entries += 1
        chain.add(entry_id, fields)
        commitments.add(fields)
        corrections.add(fields)
        staged.add(fields)
        staged_tables.add(fields)
        payments.add(fields)
        if (
            fields.get("type") == checkpoint_signature.ROTATION_ENTRY
            and latest.seq < chain.last_seq <= end
        ):
            rotations.append((chain.last_seq, str(fields.get("handover", ""))))
        sums = (value, reserve)
        _check_statement(link_group_id, chain.last_seq, end, fields, sums, report, checkpoint_key)
        if chain.last_seq <= end and fields.get("meter"):
            value[fields["meter"]] += int(fields["d_meter"])
            reserve[fields["meter"]] += int(fields["d_reserve"])
        if latest.seq > start.seq and chain.last_seq == latest.seq:
            _check_checkpoint(link_group_id, latest, chain, value, reserve, report)
    chain.finish(end)
    report.differences += [f"{link_group_id}: {problem}" for problem in chain.problems]
    report.differences += commitments.problems
    report.differences += corrections.problems
    report.differences += staged.problems
    report.differences += staged_tables.problems
    report.differences += payments.problems
    report.differences += checkpoint_signature.journal_problems(
        link_group_id, verdict.pending, rotations
    )
    report.heads[link_group_id] = (chain.last_seq, chain.last_hash)
    for meter_id, meter in (snapshot.get("meters") or {}).items():
        report.meters += 1
        for name, summed in (("value", value), ("reserve", reserve)):
            stored = int(meter[f"{name}_microcents"])
            if stored != summed[meter_id]:
                report.differences.append(
                    f"{link_group_id}/{meter_id}: {name} is {_money(stored)} in the snapshot "
                    f"(#{end}) but the journal sums to {_money(summed[meter_id])}"
                )


def _check_statement(
    link_group_id: str,
    seq: int,
    end: int,
    fields: dict[str, str],
    sums: tuple[Counter[str], Counter[str]],
    report: AuditReport,
    checkpoint_key: PublicKeys = None,
) -> None:
    """An exported gaming day's statement (``day_closed``, up to the snapshot's seq ``end``)
    against the sums of the exported entries before it."""
    if seq <= end:
        report.differences += entry_problems(
            link_group_id, seq, fields, sums[0], sums[1], checkpoint_key
        )


def _export_epochs(snapshot: dict[str, Any]) -> Collection[str] | None:
    """The epoch ids an exported link group's checkpoint may be signed in (its epoch record
    and lineage), or None when the snapshot has no epoch record (not checked)."""
    record = snapshot.get("epoch") or {}
    if not isinstance(record, dict) or not record.get("id"):
        return None
    epoch = Epoch.from_fields(str(record["id"]), str(record.get("lineage") or ""), "")
    return frozenset({epoch.epoch_id, *(ancestor for ancestor, _ in epoch.lineage)})


def _check_checkpoint(
    link_group_id: str,
    checkpoint: Checkpoint,
    chain: ChainCheck,
    value: Counter[str],
    reserve: Counter[str],
    report: AuditReport,
) -> None:
    """The snapshot's checkpoint (its signature checked already) against the exported
    journal at its sequence number."""
    where = f"{link_group_id}: the checkpoint at journal #{checkpoint.seq}"
    if checkpoint.hash != chain.last_hash:
        report.differences.append(f"{where} holds another hash than the exported entry")
    for held, summed in (
        (checkpoint.value_microcents, value),
        (checkpoint.reserve_microcents, reserve),
    ):
        if any(held.get(meter, 0) != summed[meter] for meter in set(held) | set(summed)):
            report.differences.append(f"{where} does not hold what the exported entries sum to")
            return


def signature_problem(
    keys: checkpoint_signature.PublicKeys, group: str, fields: Mapping[str, str]
) -> str | None:
    """Why a ``day_closed`` entry's signature fails with the trusted ``keys``; None when it
    holds (or no key is given: nothing to check it with)."""
    if keys is None:
        return None
    given = [keys] if isinstance(keys, Ed25519PublicKey) else list(keys)
    by_id = {checkpoint_signature.key_id(key): key for key in given}
    where = f"{group}: the statement of gaming day {fields.get('day', '?')}"
    key = by_id.get(fields.get("signed_by", ""))
    if key is None:
        return (
            f"{where} is signed by key {fields.get('signed_by') or '(none)'}, not by a key given "
            f"({', '.join(sorted(by_id))})"
        )
    message = day_close.signed_message(group, fields.get("day", ""), fields.get("digest", ""))
    try:
        key.verify(bytes.fromhex(fields.get("signature", "")), message)
    except (InvalidSignature, ValueError):
        return f"{where} does not match its signature: altered or forged"
    return None


def entry_problems(
    group: str,
    seq: int,
    fields: Mapping[str, str],
    value: Mapping[str, int],
    reserve: Mapping[str, int],
    keys: checkpoint_signature.PublicKeys = None,
) -> list[str]:
    """The audit's check of ``day_closed`` entry #``seq``: its statement's digest, its
    signature (with ``keys``), and each meter's closing against the journal's sums before
    the entry (``value``, ``reserve``) less what moved after the day (``after_day``). Any
    other entry: nothing to check (no problems)."""
    if fields.get("type") != day_close.ENTRY_TYPE:
        return []
    where = f"{group}: journal #{seq} (gaming day {fields.get('day', '?')} closed)"
    try:
        document = json.loads(fields.get("statement", ""))
        after = json.loads(fields.get("after_day", "") or "{}")
        rows = {str(row["meter_id"]): row for row in document["meters"]}
    except (ValueError, KeyError, TypeError) as error:
        return [f"{where}: its statement does not read ({error!r})"]
    problems = []
    if day_close.digest(document) != fields.get("digest"):
        problems.append(f"{where}: its statement is not the one its digest names: altered")
    problem = signature_problem(keys, group, fields)
    if problem:
        problems.append(problem)
    for meter_id in sorted(set(rows) | {m for m in value if value[m] or reserve.get(m, 0)}):
        row = rows.get(meter_id, {})
        moved = after.get(meter_id, [0, 0])
        for name, sums, index in (("value", value, 0), ("reserve", reserve, 1)):
            closing = int(row.get(f"closing_{name}_microcents", 0))
            summed = sums.get(meter_id, 0) - int(moved[index])
            if closing != summed:
                problems.append(
                    f"{where}: meter {meter_id} closes with {name} "
                    f"{day_close.money(closing)} but the journal sums it to "
                    f"{day_close.money(summed)} at the day's end (difference "
                    f"{day_close.money(closing - summed)})"
                )
    return problems

"""Journal export, trim and restore: Redis's memory stays bounded, and a lost Redis comes back.

**Export** (``jackpotctl journal export --dir DIR``) writes, for each link group, under
``DIR/<link_group>/``:

* ``journal.jsonl``: every journal entry, one JSON object a line, appended and fsynced:
  ``{"seq": 17, "id": "1764567890123-0", "time_ms": 1764567890123, "fields": {...}}`` where
  ``fields`` are the entry's fields as Redis holds them (``seq``, ``type``, ``meter``,
  ``d_meter``/``d_reserve`` in microcents, ...). Each export appends the entries after the
  file's last one, up to the snapshot's sequence number, so the file is the whole journal
  (a first export of a journal already trimmed starts after the checkpoint: enough for a
  restore, whose snapshot holds the checkpoint).
* ``snapshot.json``: the link group's state at that sequence number, every per-group record
  that is state (meters, tables also retired ones, jackpots and the pending set, open rounds,
  irregularities, maintenance, adjustments and their pending set, retired meters, counters,
  epoch, checkpoint; :meth:`Snapshots.export_snapshot`) and the installation record, never a
  must-hit-by meter's secret; replaced atomically (write, fsync, rename).

and then records in Redis that the journal is exported up to there.

Every entry carries its hash chain value (``hash``, :mod:`controller.domain.journal_chain`), so the
file is checked offline by ``jackpotctl audit verify --file DIR``. A first export of a journal
already trimmed also writes ``chain_start.json``: the signed checkpoint the file's first entry
chains to.

**Trim** (``jackpotctl journal trim --retention-hours H --signing-key FILE``) deletes the
oldest entries that are both exported and older than the retention window, never the last
one (the next entry chains to it). It first checks the signature of the checkpoint and the
hash chain of the entries it deletes, computes the checkpoint they lead to (the last one's
sequence number and hash, and what they moved per meter) and signs it
(:mod:`controller.journal.checkpoint_signature`); the trim script applies exactly that checkpoint,
with its signature, in the same atomic step as the deletion (``trim_journal.lua``), so
``audit verify`` still proves every meter and the chain from the checkpoint on. A key that
is not the checkpoint's current one (a retired key) signs nothing.

**Key rotation** (``jackpotctl journal rotate-key --signing-key OLD --new-signing-key NEW``,
:func:`rotate_key`): the old key signs a handover to the new one, the new key signs the
checkpoint anew, and one atomic step journals ``checkpoint_key_rotated`` and writes both
(``rotate_checkpoint_key.lua``; docs/journal.md "Key handling").

**Restore** (``jackpotctl restore --from DIR --link-group G --checkpoint-key FILE --reason
...``; :mod:`controller.journal.restore`) rebuilds a link group that Redis lost from its
latest export, after the offline audit of the export with the checkpoint key, and after
rebuilding every record it writes from the journal entries that made it (refusing any that
differs, and any table or meter another link group owns): every record is written back as
exported, and the restored journal continues the exported chain, and the ``restored`` entry
chains to its last entry. It writes into a Redis without that link group only; the epoch
record comes last, in one atomic step with the ``restored`` entry and a new cycle of each
must-hit-by meter (its secret is not exported: ``docs/mystery.md``, "Restore"), with a new
epoch whose lineage holds the exported one up to the export's
sequence number: a table acknowledged later than that stops the link group (those steps
are lost and must be reconciled by hand, then ``jackpotctl link-groups resume``). Round
records (the stored answers for retries) are not exported; a retry of a round from before the
loss is refused as stale.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from controller.domain.bounds import check_id
from controller.domain.journal_chain import GENESIS, ChainCheck, numbered_after
from controller.domain.records import Checkpoint, JournalEntry
from controller.journal import checkpoint_signature
from controller.store.redis_store import RedisStore
from jackpot.errors import (
    FailedPrecondition,
    InvalidArgument,
    InvalidConfiguration,
    JackpotError,
    NotFound,
)

JOURNAL_FILE = "journal.jsonl"
SNAPSHOT_FILE = "snapshot.json"
CHAIN_START_FILE = "chain_start.json"
"""The checkpoint (Redis's fields) the journal file's first entry chains to, when that is
not the journal's first entry."""
TRIM_BATCH = 500
"""Entries trimmed per atomic step (each step is a few milliseconds of Redis's time)."""
MAX_TRIM_STEPS = 100_000
"""Bound on the steps of one trim (50 million entries)."""


class ExportError(JackpotError):
    """An export directory that cannot be used as it is (the message says what and where)."""


@dataclass(frozen=True, slots=True)
class Exported:
    """What one export of a link group wrote: entries ``first_seq``..``last_seq`` (none
    when ``count`` is 0) and the snapshot at ``last_seq``."""

    link_group_id: str
    first_seq: int
    last_seq: int
    count: int
    directory: Path


def group_directory(directory: Path, link_group_id: str) -> Path:
    """Where a link group's export lives: ``directory/<link_group_id>``, refused
    (:class:`InvalidConfiguration`) for a name that is not a link group id (``.``, ``..``, a
    path), so no export or restore reads or writes outside ``directory``."""
    check_id(link_group_id, "link group id")
    return directory / link_group_id


def _last_line(path: Path) -> dict[str, Any] | None:
    """The file's last complete line (None for no file or an empty one)."""
    if not path.exists():
        return None
    last = None
    with path.open("rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                last = line
    return json.loads(last) if last else None


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


async def export(store: RedisStore, directory: Path, link_group_id: str) -> Exported:
    """Export one link group (see the module). Entries written before a crash are kept; a
    torn last line is cut off and written again."""
    target = group_directory(directory, link_group_id)
    target.mkdir(parents=True, exist_ok=True)
    journal_path = target / JOURNAL_FILE
    _cut_torn_line(journal_path)
    snapshot = await store.snapshots.export_snapshot(link_group_id)
    last_seq = int(snapshot["seq"])
    last_line = _last_line(journal_path)
    after = int(last_line["seq"]) if last_line else 0
    if after > last_seq:
        raise ExportError(
            f"{journal_path} ends at journal #{after} but Redis's journal of {link_group_id} "
            f"ends at #{last_seq}: this export belongs to other (or lost) state; export into "
            "another directory"
        )
    lines: list[str] = []
    expected = after or int(snapshot["checkpoint"].get("seq", 0))
    if last_line is None and expected:
        _write_atomically(target / CHAIN_START_FILE, json.dumps(snapshot["checkpoint"], indent=1))
    async for entry in store.journal.entries(link_group_id):
        if last_line is not None and entry.seq == after and entry.entry_id != last_line["id"]:
            raise ExportError(
                f"{journal_path} holds another history of {link_group_id}: its #{after} is "
                f"entry {last_line['id']}, Redis's is {entry.entry_id} (Redis was restored from "
                "an older copy since); export into a new directory and keep this one"
            )
        if entry.seq <= after:
            continue
        if entry.seq > last_seq:
            break
        if entry.seq != numbered_after(entry.fields, expected) + 1:
            raise ExportError(
                f"the journal of {link_group_id} continues at #{entry.seq} where #{expected + 1} "
                f"was due after {journal_path}'s #{expected}: entries were trimmed before this "
                "directory had them; export into the directory that has them"
            )
        expected = entry.seq
        time_ms = _time_ms(entry.entry_id)
        line = {"seq": entry.seq, "id": entry.entry_id, "time_ms": time_ms}
        lines.append(json.dumps({**line, "fields": entry.fields}, sort_keys=True) + "\n")
    if lines:
        with journal_path.open("a", encoding="utf-8") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
    count, first = len(lines), (int(json.loads(lines[0])["seq"]) if lines else 0)
    _write_atomically(target / SNAPSHOT_FILE, json.dumps(snapshot, sort_keys=True, indent=1))
    await store.journal.mark_exported(link_group_id, last_seq)
    return Exported(link_group_id, first, last_seq if count else after, count, target)


def _cut_torn_line(path: Path) -> None:
    """Drop an incomplete last line (a crash mid-write); it is written again."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)
            handle.flush()
            os.fsync(handle.fileno())


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)
    _fsync_directory(path.parent)


async def trim(
    store: RedisStore,
    link_group_id: str,
    *,
    before_ms: int,
    signing_key: Ed25519PrivateKey,
    batch: int = TRIM_BATCH,
) -> int:
    """Trim every exported entry written before ``before_ms`` (ms since the epoch) but the
    last, in bounded atomic steps, each signing the checkpoint it leaves; answer how many
    entries were trimmed."""
    total = 0
    for _ in range(MAX_TRIM_STEPS):
        trimmed = await trim_step(
            store, link_group_id, before_ms=before_ms, signing_key=signing_key, batch=batch
        )
        total += trimmed
        if trimmed < batch:
            break
    return total


async def trim_step(
    store: RedisStore,
    link_group_id: str,
    *,
    before_ms: int,
    signing_key: Ed25519PrivateKey,
    batch: int = TRIM_BATCH,
) -> int:
    """One atomic trim of at most ``batch`` entries (see the module); answer how many.

    Refused (:class:`FailedPrecondition`, nothing trimmed) when the checkpoint's signature
    does not verify with this key, or the entries' chain is broken: a key signs only what it
    has checked.
    """
    public_key = signing_key.public_key()
    checkpoint = await store.journal.checkpoint(link_group_id)
    epoch_id, epochs = await store.epochs.epoch_ids(link_group_id)
    _check_signer(public_key, link_group_id, checkpoint, epochs, "trim")
    head = []
    async for entry in store.journal.entries(link_group_id, batch=batch + 1):
        head.append(entry)
        if len(head) > batch:
            break
    chain = ChainCheck(checkpoint.seq, checkpoint.hash if checkpoint.seq else GENESIS)
    value = Counter(checkpoint.value_microcents)
    reserve = Counter(checkpoint.reserve_microcents)
    exported = checkpoint.exported_seq
    count = 0
    for entry in head[:-1]:  # never the last entry read: it may be the chain's head
        if entry.seq > exported or _time_ms(entry.entry_id) >= before_ms:
            break
        chain.add(entry.entry_id, entry.fields)
        if not chain.ok:
            raise FailedPrecondition(
                f"will not sign a checkpoint over a broken journal: {link_group_id}: "
                f"{chain.problems[0]}"
            )
        if entry.meter_id:
            value[entry.meter_id] += entry.delta_meter_microcents
            reserve[entry.meter_id] += entry.delta_reserve_microcents
        count += 1
    if not count:
        return 0
    new = replace(
        checkpoint,
        seq=chain.last_seq,
        value_microcents=dict(value),
        reserve_microcents=dict(reserve),
        hash=chain.last_hash,
        signed_by=checkpoint_signature.key_id(public_key),
        signed_as=checkpoint_signature.DOMAIN,
        epoch=epoch_id,
        signed_exported_seq=exported,
        signed_handovers=len(checkpoint_signature.handovers(checkpoint)),
    )
    signature = checkpoint_signature.sign(signing_key, link_group_id, new)
    return await store.journal.trim(
        link_group_id, before_ms, checkpoint.seq, count, replace(new, signature=signature)
    )


def _check_signer(
    public_key: Ed25519PublicKey,
    link_group_id: str,
    checkpoint: Checkpoint,
    epochs: frozenset[str],
    what: str,
) -> None:
    """Refuse (:class:`FailedPrecondition`) to sign on from a checkpoint this key cannot
    check, or as a key that is not the link group's current one (a retired key signs
    nothing new)."""
    verdict = checkpoint_signature.check(public_key, link_group_id, checkpoint, epochs=epochs)
    if verdict.problems:
        raise FailedPrecondition(f"will not {what}: {verdict.problems[0]}")
    mine = checkpoint_signature.key_id(public_key)
    if verdict.current and verdict.current != mine:
        handed = [h for h in checkpoint_signature.handovers(checkpoint) if h.from_key == mine]
        why = (
            f"key {mine} is retired: it handed the checkpoint over to key {handed[-1].to_key} "
            f"at journal #{handed[-1].seq}; a retired key signs nothing"
            if handed
            else f"key {mine} is not the checkpoint's current key {verdict.current}"
        )
        raise FailedPrecondition(f"will not {what}: {link_group_id}: {why}")


async def rotate_key(
    store: RedisStore,
    link_group_id: str,
    *,
    signing_key: Ed25519PrivateKey,
    new_signing_key: Ed25519PrivateKey,
    actor: str,
) -> int:
    """Hand the link group's checkpoint key over from ``signing_key`` (the current key) to
    ``new_signing_key``: the old key signs the :class:`~controller.journal.checkpoint_signature.
    Handover`, the new key signs the checkpoint anew over the handover list, and one atomic
    step journals ``checkpoint_key_rotated`` and writes both (``rotate_checkpoint_key.lua``).
    Answer the entry's sequence number. Refused (:class:`FailedPrecondition`) when the old
    key is not the current one or cannot check the checkpoint, and
    (:class:`InvalidConfiguration`) when both keys are the same."""
    old, new_key = signing_key.public_key(), new_signing_key.public_key()
    old_id, new_id = checkpoint_signature.key_id(old), checkpoint_signature.key_id(new_key)
    if old_id == new_id:
        raise InvalidConfiguration(f"the new key is the old key ({old_id})")
    checkpoint = await store.journal.checkpoint(link_group_id)
    epoch_id, epochs = await store.epochs.epoch_ids(link_group_id)
    if not epoch_id:
        raise FailedPrecondition(f"link group {link_group_id} has no epoch record: not served")
    _check_signer(old, link_group_id, checkpoint, epochs, "hand the key over")
    entry_seq = await store.journal.seq(link_group_id) + 1
    handover = checkpoint_signature.Handover(
        link_group=link_group_id,
        epoch=epoch_id,
        seq=entry_seq,
        checkpoint_seq=checkpoint.seq,
        from_key=old_id,
        from_public_key=checkpoint_signature.raw_public_key(old).hex(),
        to_key=new_id,
        to_public_key=checkpoint_signature.raw_public_key(new_key).hex(),
    )
    handover = replace(handover, signature=signing_key.sign(handover.message()).hex())
    chain = [*checkpoint_signature.handovers(checkpoint), handover]
    new = replace(
        checkpoint,
        key_handovers=checkpoint_signature.handovers_text(chain),
        epoch=epoch_id,
        signed_by=new_id,
    )
    if checkpoint.seq:
        new = replace(
            new,
            signed_as=checkpoint_signature.DOMAIN,
            signed_exported_seq=checkpoint.signed_exported_seq or checkpoint.exported_seq,
            signed_handovers=len(chain),
        )
        new = replace(new, signature=checkpoint_signature.sign(new_signing_key, link_group_id, new))
    return await store.journal.rotate_checkpoint_key(
        link_group_id,
        checkpoint,
        new,
        handover=json.dumps(handover.to_data(), sort_keys=True, separators=(",", ":")),
        entry_seq=entry_seq,
        from_key=old_id,
        actor=actor,
    )


def _time_ms(entry_id: str) -> int:
    """When Redis appended a stream entry (ms since the epoch), from its id."""
    return int(entry_id.partition("-")[0])


def read_json(path: Path, group: str) -> dict[str, Any]:
    """An export's JSON file (its snapshot): NotFound when it cannot be read, InvalidArgument
    when it is not JSON."""
    try:
        data: dict[str, Any] = json.loads(path.read_bytes())
    except OSError as error:
        raise NotFound(f"cannot read the export of link group {group}: {error}") from None
    except json.JSONDecodeError as error:
        raise InvalidArgument(f"{path} is not valid JSON: {error}") from None
    return data


def read_entries(path: Path, group: str) -> list[JournalEntry]:
    """The journal entries of an export's journal file, oldest first (the one reader of
    ``journal.jsonl``; a torn last line is no entry)."""
    entries: list[JournalEntry] = []
    try:
        with path.open("rb") as handle:
            for number, line in enumerate(handle, 1):
                if not line.endswith(b"\n"):
                    break  # a torn last line (an export cut short): not an entry
                try:
                    data = json.loads(line)
                    fields = {str(k): str(v) for k, v in data["fields"].items()}
                    entries.append(
                        JournalEntry(
                            entry_id=str(data["id"]),
                            seq=int(fields["seq"]),
                            type=fields["type"],
                            meter_id=fields.get("meter", ""),
                            delta_meter_microcents=int(fields["d_meter"]),
                            delta_reserve_microcents=int(fields["d_reserve"]),
                            fields=fields,
                        )
                    )
                except (ValueError, KeyError, TypeError, AttributeError) as error:
                    raise InvalidArgument(
                        f"{path}, line {number}: not a journal entry ({error!r})"
                    ) from None
    except OSError as error:
        raise NotFound(f"cannot read the export of link group {group}: {error}") from None
    return entries

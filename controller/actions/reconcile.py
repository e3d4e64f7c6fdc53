"""Reconciling tables after a restore: what the tables were answered that the restored state
lacks, listed, and applied as two-person corrections (docs/journal.md, "Reconciling tables
after a restore").

A table's outbox (``table_agent/outbox.py``) keeps every acknowledged answer with the
journal position it was answered at. After Redis is lost and restored from an export at
``#S`` of epoch ``E``, every answer of ``E`` after ``#S`` is a step the restored state may
lack. :func:`seq_above` reads the outboxes before the restore, so that the restored journal
numbers on above anything they hold (no sequence number, and so no jackpot id
``<group>:<seq>``, ever names two things); :func:`collect` keeps a table's steps in Redis
(``restore_collect.lua`` keeps those the restored state really lacks); :func:`status` lists
them; a first operator requests them (:func:`request`) and a second one approves them
(:func:`approve`), each applied with the amounts the table was answered in one atomic step
(``restore_apply.lua``), in the lost journal's order; :func:`finish` then lets the group serve
its tables again. Until then the group is stopped with the reason and these commands.

This module reads the outbox file itself (the controller does not import the agent); the
format is the agent's, version :data:`OUTBOX_VERSION`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.store.redis_store import RedisStore
from jackpot.epochs import JournalPosition
from jackpot.errors import InvalidArgument
from jackpot.money import format_cents

OUTBOX_VERSION = 1
"""The outbox line version this reader knows (``table_agent.outbox.OUTBOX_VERSION``)."""
SEQ_MARGIN = 1000
"""Added above the highest sequence number the tables' outboxes hold when a restore numbers
on: the supervisors' and the cage's steps after the tables' last answers (approvals,
payments) were issued numbers no outbox holds. Give ``--seq-above`` when a record (an audit's
head, a cage slip) shows more."""
MAX_STEPS = 20_000
"""The most steps a link group's reconciliation keeps (each restore script loops over them)."""
MAX_OUTBOX_BYTES = 256 * 1024 * 1024
"""The largest outbox file read."""
MAX_TEXT = 256
"""The longest id or text of a step (meter, hand, line, award text, jackpot id, cards)."""
MAX_ANSWER_BYTES = 64 * 1024
"""The longest answer a step keeps (a settlement of every seat is a few KB)."""
MAX_WAGERS = 200
"""The most wagers one lockout step holds (a table's seats times its wager kinds)."""
PHASES = ("lockout", "settle", "void")
"""The answers that move money or a round's state, and so can be missing."""


class OutboxError(InvalidArgument):
    """An outbox file that cannot be read as a table's outbox."""


@dataclass(frozen=True, slots=True)
class OutboxAnswers:
    """What one table's outbox holds: its table id, last position and acknowledged answers
    (``{"id", "phase", "round_id", "epoch", "seq", "answer"}``), and the file's SHA-256."""

    table_id: str
    last: JournalPosition
    answers: tuple[dict[str, Any], ...]
    sha256: str
    path: Path


def _table_of(path: Path) -> str:
    name = path.name
    if not name.endswith(".outbox.jsonl"):
        raise OutboxError(f"{path} is not named <table>.outbox.jsonl: give --table")
    return name[: -len(".outbox.jsonl")]


def read_outbox(path: Path, table_id: str = "") -> OutboxAnswers:
    """Read ``path`` (``<table>.outbox.jsonl``; ``table_id`` overrides the name)."""
    table_id = table_id or _table_of(path)
    try:
        if path.stat().st_size > MAX_OUTBOX_BYTES:
            raise OutboxError(f"{path} is larger than {MAX_OUTBOX_BYTES} bytes")
        data = path.read_bytes()
    except OSError as error:
        raise OutboxError(f"cannot read {path}: {error}") from None
    reports: dict[str, dict[str, Any]] = {}
    answers: list[dict[str, Any]] = []
    last = JournalPosition()
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # torn by a crash mid-write: never acted on (as the agent reads it)
        if not isinstance(record, dict) or record.get("v") != OUTBOX_VERSION:
            raise OutboxError(
                f"{path} line {number} is not an outbox line of version {OUTBOX_VERSION}"
            )
        if "epoch" in record and "seq" in record:
            last = last.later(JournalPosition(str(record["epoch"]), int(record["seq"])))
        if "report" in record:
            reports[str(record["report"]["id"])] = record["report"]
        elif "answered" in record:
            answers.append(record["answered"])
        elif "answer" in record and not record.get("refused") and "epoch" in record:
            report = reports.get(str(record["ack"]))
            if report is not None:
                answers.append(
                    {
                        "id": record["ack"],
                        "phase": report["phase"],
                        "round_id": report["round_id"],
                        "epoch": record["epoch"],
                        "seq": record["seq"],
                        "answer": record["answer"],
                        "payload": report.get("payload") or {},
                    }
                )
    return OutboxAnswers(table_id, last, tuple(answers), hashlib.sha256(data).hexdigest(), path)


def seq_above(
    outboxes: Iterable[OutboxAnswers], exported_seq: int, margin: int = SEQ_MARGIN
) -> int:
    """Where a restore from an export at ``exported_seq`` numbers on from: above every
    sequence number the outboxes were answered, plus ``margin``; ``exported_seq`` when no
    outbox holds anything after it."""
    highest = max((outbox.last.seq for outbox in outboxes), default=0)
    return highest + margin if highest > exported_seq else exported_seq


def _moves(wagers: Any) -> list[dict[str, str]]:
    moves = []
    for wager in wagers or []:
        for contribution in wager.get("contributions") or []:
            moves.append(
                {
                    "meter_id": str(contribution["meter_id"]),
                    "seat": str(int(wager["seat"])),
                    "kind": str(wager["kind"]),
                    "amount_cents": str(int(wager["amount_cents"])),
                    "to_meter": str(int(contribution["to_meter_microcents"])),
                    "to_reserve": str(int(contribution["to_reserve_microcents"])),
                }
            )
    return moves


def _awards(results: Any, report: dict[str, Any]) -> list[dict[str, Any]]:
    """The paid results, each with the cards its table reported for it (the slip's)."""
    hands, dealer = report.get("hands") or {}, report.get("dealer") or []
    awards = []
    for result in results or []:
        if result.get("outcome") != "paid":
            continue
        awards.append(
            {
                "seat": str(int(result["seat"])),
                "kind": str(result.get("kind") or ""),
                "hand": str(result.get("hand") or ""),
                "line": str(result.get("line") or ""),
                "award_kind": str(result.get("award_kind") or ""),
                "award_text": str(result.get("award_text") or ""),
                "amount_cents": str(int(result["amount_cents"])),
                "meter_id": str(result.get("meter_id") or ""),
                "meter_before_cents": str(int(result.get("meter_before_cents") or 0)),
                "meter_after_cents": str(int(result.get("meter_after_cents") or 0)),
                "pending_validation": bool(result.get("pending_validation")),
                "jackpot_id": str(result.get("jackpot_id") or ""),
                "journal_seq": str(int(result.get("journal_seq") or 0)),
                "on_dealer_hand": bool(result.get("on_dealer_hand")),
                "envy_for_seat": str(int(result.get("envy_for_seat") or 0)),
                "cards": " ".join(
                    dealer if result.get("on_dealer_hand") else hands.get(str(result["seat"]), [])
                ),
            }
        )
    return awards


def steps_after(outbox: OutboxAnswers, epoch: str, after_seq: int) -> list[dict[str, Any]]:
    """The outbox's answers of ``epoch`` after ``#after_seq`` as steps (money as decimal
    strings, the answer kept verbatim), in the order they were answered."""
    steps: list[dict[str, Any]] = []
    for item in outbox.answers:
        if item["epoch"] != epoch or int(item["seq"]) <= after_seq or item["phase"] not in PHASES:
            continue
        answer = item["answer"]
        round_id = int(item["round_id"])
        if answer.get("table_id") != outbox.table_id or int(answer.get("round_id", -1)) != round_id:
            raise OutboxError(
                f"{outbox.path}: the answer to {item['id']} is not one for round {round_id} of "
                f"table {outbox.table_id}"
            )
        step: dict[str, Any] = {
            "id": f"{outbox.table_id}:{round_id}:{item['phase']}",
            "round_id": round_id,
            "phase": item["phase"],
            "epoch": epoch,
            "seq": int(item["seq"]),
            "answer": json.dumps(answer, sort_keys=True),
            "note": "",
        }
        if item["phase"] == "lockout":
            step["moves"] = _moves(answer.get("accepted"))
            if len(answer.get("accepted") or []) > MAX_WAGERS:
                raise OutboxError(
                    f"{outbox.path}: {step['id']} holds more than {MAX_WAGERS} wagers"
                )
            step["wagers"] = json.dumps(answer.get("accepted") or [], sort_keys=True)
            if answer.get("mystery_hits"):
                step["note"] = (
                    "its lockout hit a must-hit-by meter: apply it by hand (an adjustment and "
                    "the jackpot's slip), then run jackpotctl link-groups resume"
                )
        elif item["phase"] == "void":
            step["moves"] = _moves(answer.get("reversed"))
        else:
            step["awards"] = _awards(answer.get("results"), item.get("payload") or {})
        _check_bounds(outbox, step)
        if steps and step["seq"] < steps[-1]["seq"]:
            raise OutboxError(
                f"{outbox.path}: {step['id']} was answered at #{step['seq']}, before "
                f"{steps[-1]['id']} at #{steps[-1]['seq']} that the outbox holds first: "
                "an outbox's answers only go forward"
            )
        steps.append(step)
    return steps


def _check_bounds(outbox: OutboxAnswers, step: dict[str, Any]) -> None:
    """Every text of ``step`` is bounded (the scripts keep and journal them)."""
    if len(step["answer"]) > MAX_ANSWER_BYTES:
        raise OutboxError(f"{outbox.path}: the answer to {step['id']} is longer than allowed")
    for item in (*(step.get("moves") or ()), *(step.get("awards") or ())):
        for name, value in item.items():
            if isinstance(value, str) and len(value) > MAX_TEXT:
                raise OutboxError(
                    f"{outbox.path}: {name} of {step['id']} is longer than {MAX_TEXT} characters"
                )


@dataclass
class Collected:
    """What :func:`collect` kept of one outbox."""

    table_id: str
    missing: int
    present: int
    collected_before: int


async def collect(
    store: RedisStore, link_group_id: str, outbox: OutboxAnswers, *, actor: str
) -> Collected:
    """Keep ``outbox``'s answers after the restored export that the restored state lacks."""
    _, _, _, epoch = await store.reconciliation.records(link_group_id)
    exported, after = epoch.get("reconcile_epoch", ""), int(epoch.get("reconcile_from") or 0)
    if not exported:
        raise InvalidArgument(
            f"link group {link_group_id} was not restored from an export: nothing to reconcile"
        )
    steps = steps_after(outbox, exported, after)
    if len(steps) > MAX_STEPS:
        raise InvalidArgument(f"{outbox.path} holds more than {MAX_STEPS} steps to reconcile")
    missing, present, known = await store.reconciliation.collect(
        link_group_id,
        outbox.table_id,
        steps,
        actor=actor,
        source=f"{outbox.path} sha256:{outbox.sha256}",
        last=outbox.last,
        max_steps=MAX_STEPS,
    )
    return Collected(outbox.table_id, missing, present, known)


@dataclass
class Status:
    """Where a restored link group's reconciliation stands."""

    link_group_id: str
    restored_from: str
    numbered_after: int
    stopped: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    collected: dict[str, dict[str, Any]] = field(default_factory=dict)
    uncollected: list[str] = field(default_factory=list)

    @property
    def waiting(self) -> list[dict[str, Any]]:
        """The steps not applied yet, in the lost journal's order."""
        return [step for step in self.steps if step["status"] != "applied"]


async def status(store: RedisStore, link_group_id: str) -> Status:
    """The missing steps of ``link_group_id`` (all, in the lost journal's order), the tables
    collected and those not yet."""
    steps, tables, table_ids, epoch = await store.reconciliation.records(link_group_id)
    return Status(
        link_group_id,
        f"{epoch.get('reconcile_epoch', '')}:{epoch.get('reconcile_from', '')}",
        int(epoch.get("reconcile_above") or 0),
        epoch.get("stopped", ""),
        sorted(steps.values(), key=lambda step: int(step["seq"])),
        tables,
        [table_id for table_id in table_ids if table_id not in tables],
    )


def describe(step: dict[str, Any]) -> str:
    """One line for an operator: what a missing step moves, as the table was answered."""
    head = (
        f"#{step['seq']} {step['phase']} of round {step['round_id']} at table "
        f"{step['table_id']}: {step['status']}"
    )
    if step["status"] == "requested":
        head += f" by {step['requested_by']}"
    elif step["status"] == "applied":
        head += f" at #{step['applied_seq']} (approved by {step['approved_by']})"
    parts = []
    for move in step.get("moves") or []:
        total = int(move["to_meter"]) + int(move["to_reserve"])
        sign = "+" if step["phase"] == "lockout" else "-"
        parts.append(
            f"seat {move['seat']} {move['kind']} {sign}{total} microcents {move['meter_id']}"
        )
    for award in step.get("awards") or []:
        text = f"seat {award['seat']} {award['hand']} {format_cents(int(award['amount_cents']))}"
        if award["meter_id"]:
            text += f" from {award['meter_id']}"
        if award["jackpot_id"]:
            text += f" (jackpot {award['jackpot_id']})"
        parts.append(text)
    if step.get("note"):
        parts.append(f"NOT APPLICABLE: {step['note']}")
    return head + ("; " + "; ".join(parts) if parts else "")


async def request(
    store: RedisStore, link_group_id: str, *, actor: str, actor_cert: str = ""
) -> int:
    """A first operator requests every missing step; answer how many are requested."""
    return await store.reconciliation.request(link_group_id, actor=actor, actor_cert=actor_cert)


async def approve(
    store: RedisStore, link_group_id: str, *, actor: str, actor_cert: str = ""
) -> list[dict[str, Any]]:
    """A second operator approves every requested step, each applied in one atomic step in
    the lost journal's order; answer the steps applied (a refusal stops at its step)."""
    applied = []
    for step in (await status(store, link_group_id)).waiting:
        applied.append(
            await store.reconciliation.apply(
                link_group_id, step, actor=actor, actor_cert=actor_cert
            )
        )
    return applied


async def finish(store: RedisStore, link_group_id: str, *, actor: str, actor_cert: str = "") -> int:
    """End the reconciliation; answer the journal seq of its entry."""
    return await store.reconciliation.finish(link_group_id, actor=actor, actor_cert=actor_cert)


def outboxes(paths: Sequence[Path]) -> list[OutboxAnswers]:
    """Read every outbox of ``paths``."""
    return [read_outbox(path) for path in paths]

"""The store steps of corrections of a settled round (docs/corrections.md).

A request reads the round as its lockout and settlement recorded it (the accepted wagers with
their contributions, the settle answer, the meters it left) and the status of its jackpots,
computes the difference with :func:`controller.domain.corrections.plan_correction`, and
records it in one script (``request_correction.lua``) that checks the round is still as it
was read. The decision is one script (``review_correction.lua``): an approval applies the
whole difference atomically. Amounts are cents, contributions microcents.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from controller.domain.config import TableConfig
from controller.domain.corrections import Correction, plan_correction
from controller.domain.digests import settle_fingerprint
from controller.domain.rounds import RoundCards, Wager
from controller.store import codec, keys
from controller.store.catalog import Catalog
from controller.store.codec import SCHEMA_VERSION
from controller.store.gateway import ScriptGateway
from controller.store.jackpots import Jackpots
from jackpot.cards import format_cards
from jackpot.data import compile_decoders, items, record_from_data
from jackpot.errors import (
    CorruptRecord,
    FailedPrecondition,
    NotFound,
    RoundStateError,
    StoreUnavailable,
)
from jackpot.results import AcceptedWager

compile_decoders(Correction, AcceptedWager)  # what this module decodes, compiled now

MONEY_FIELDS = frozenset(
    {"paid_cents", "due_cents", "meter_basis_cents", "wager_cents", "amount_cents"}
)
"""Amounts a record carries as decimal strings (exact in cjson whatever their size)."""


def _exact(value: Any) -> Any:
    """A record's JSON with its amounts as decimal strings."""
    if isinstance(value, dict):
        return {
            k: str(v) if k in MONEY_FIELDS and isinstance(v, int) else _exact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_exact(v) for v in value]
    return value


def _wager_change(item: dict[str, Any]) -> dict[str, Any]:
    item["to_meter_microcents"] = [str(v) for v in item["to_meter_microcents"]]
    item["to_reserve_microcents"] = [str(v) for v in item["to_reserve_microcents"]]
    return item


def decode(raw: str | bytes, name: str = "?", key: str = "") -> Correction:
    """A stored correction record; a record that does not read is :class:`CorruptRecord`."""
    try:
        data = json.loads(raw)
        version = int(data.get("v", 0))
        record = record_from_data(Correction, data)
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise CorruptRecord("correction", name, key, str(error)) from None
    if version != SCHEMA_VERSION:
        raise StoreUnavailable(
            f"the stored record of correction {name} has schema version {version}; this "
            f"release reads version {SCHEMA_VERSION}"
        )
    return record


def cards_json(cards: RoundCards) -> str:
    """The corrected cards as the record keeps them."""
    return json.dumps(
        {
            "seats": [
                {"seat": s.seat, "cards": format_cards(s.cards), "folded": s.folded}
                for s in sorted(cards.seats, key=lambda s: s.seat)
            ],
            "dealer": format_cards(cards.dealer),
            "community": format_cards(cards.community),
        },
        sort_keys=True,
    )


class Corrections:
    """The correction steps of the store (``store.corrections``)."""

    def __init__(self, gateway: ScriptGateway, catalog: Catalog, jackpots: Jackpots) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._decoded = gateway.decoded
        self._each = gateway.each
        self._catalog = catalog
        self._jackpots = jackpots

    async def request(
        self,
        table: TableConfig,
        round_id: int,
        wagers: Sequence[Wager] | None,
        cards: RoundCards,
        *,
        reason: str,
        actor: str,
        actor_cert: str,
        request_id: str = "",
        from_table: bool = False,
    ) -> Correction:
        """Compute and record the correction of settled round ``round_id`` of ``table`` to
        ``wagers`` (None: those accepted at lockout) and ``cards`` (nothing moves until
        approved). Refused: an unknown round,
        one not settled, one whose jackpots are not all paid or rejected, a correction that
        changes nothing or whose wagers or cards a lockout or settlement would refuse, one
        pending or applied already; from a table, a round after which it locked out another."""
        group = keys.LinkGroupKeys(table.link_group_id)
        round_key = group.round(table.table_id, round_id)
        where = f"round {round_id} of table {table.table_id}"
        version, state, stored_wagers, reply, settle_fp, rest_void, played_rev = await self._read(
            self._client.hmget(
                round_key,
                "v",
                "state",
                "wagers",
                "settle_reply",
                "settle_fp",
                "rest_void",
                "table_rev",
            )
        )
        if state is None:
            raise NotFound(
                f"{where} is unknown: never locked out, or its record expired (a round is "
                "corrected while the controller keeps it; later, use a meter adjustment)"
            )
        if state != "settled" or reply is None:
            raise RoundStateError(
                f"{where} is {state}, not settled; only a settled round is corrected"
            )
        if rest_void:
            raise FailedPrecondition(
                f"{where} was settled with the rest of the round void ({rest_void}); such a "
                "round is not corrected here: use a two-person meter adjustment"
            )
        codec.locked_wagers(where, {"v": version, "wagers": stored_wagers}, round_key)
        table = await self._played_under(table, round_id, played_rev)
        original = tuple(
            record_from_data(AcceptedWager, item) for item in items(json.loads(stored_wagers))
        )
        if wagers is None:
            wagers = [
                Wager(w.seat, str(w.kind), w.amount_cents, w.on_dealer_hand, w.envy)
                for w in original
            ]
        settled = codec.settle_result([reply, "replay", "", "0"])
        statuses: list[list[str]] = []
        unpaid: set[str] = set()
        for result in settled.results:
            if not result.jackpot_id:
                continue
            jackpot = await self._jackpots.get_jackpot(result.jackpot_id)
            if jackpot.status in ("pending", "approved"):
                raise FailedPrecondition(
                    f"jackpot {jackpot.jackpot_id} of {where} is {jackpot.status} and not paid: "
                    "review it (a rejection gives a percentage award back to its meter) and pay "
                    "it first; a correction compares the rules with what was paid"
                )
            if jackpot.status == "rejected":
                unpaid.add(jackpot.jackpot_id)
            statuses.append([jackpot.jackpot_id, jackpot.status])
        resets = {m: (await self._catalog.get_meter(m)).reset_cents for m in table.meter_ids}
        plan = plan_correction(
            table,
            original,
            settled.results,
            settled.meter_cents,
            resets,
            wagers,
            cards,
            unpaid_jackpots=frozenset(unpaid),
        )
        corrected_wagers = json.dumps([dataclasses.asdict(w) for w in wagers], sort_keys=True)
        corrected_cards = cards_json(cards)
        content = json.dumps(
            [table.table_id, round_id, corrected_wagers, settle_fingerprint(cards), reason]
        )
        content_fp = hashlib.sha256(content.encode()).hexdigest()
        request_id = (
            request_id
            or "content:" + hashlib.sha256(f"{actor}\n{content_fp}".encode()).hexdigest()[:32]
        )
        record = {
            "reason": reason,
            "lines": [dataclasses.asdict(line) for line in plan.lines],
            "wagers": [_wager_change(dataclasses.asdict(w)) for w in plan.wagers],
            "pay_cents": str(plan.pay_cents),
            "recover_cents": str(plan.recover_cents),
            "operator_funded_cents": str(plan.operator_funded_cents),
            "corrected_wagers": corrected_wagers,
            "corrected_cards": corrected_cards,
            "settle_fp": settle_fp,
            "content_fp": content_fp,
        }
        raw = await self._run(
            self._scripts.request_correction,
            [
                round_key,
                group.corrections,
                group.journal,
                group.seq,
                group.jackpots,
                group.table(table.table_id),
            ],
            [
                table.table_id,
                round_id,
                table.link_group_id,
                request_id,
                json.dumps(_exact(record)),
                actor,
                actor_cert,
                "1" if from_table else "",
                settle_fp,
                json.dumps(statuses),
            ],
        )
        return decode(raw)

    async def _played_under(
        self, table: TableConfig, round_id: int, played_rev: str | None
    ) -> TableConfig:
        """The definition round ``round_id`` of ``table`` was played under: the table's
        current one, or the one before its last change (kept with the table); a round played
        under an older one is refused (its rules are no longer known here). A round recorded
        without its revision (an older release) is planned under the current one."""
        key = keys.LinkGroupKeys(table.link_group_id).table(table.table_id)
        config, rev, prev_config, prev_rev = await self._read(
            self._client.hmget(key, "config", "rev", "prev_config", "prev_rev")
        )
        if config is None:
            return table  # retired meanwhile: the script refuses what it must
        current = rev or "0"
        if played_rev is None or played_rev == current:
            return codec.table_config(config, key=key, name=table.table_id)
        if prev_config is not None and played_rev == prev_rev:
            return codec.table_config(prev_config, key=key, name=table.table_id)
        raise FailedPrecondition(
            f"table {table.table_id}'s definition changed since round {round_id} was played "
            f"(rev {played_rev} -> {current}): correct it with a meter adjustment"
        )

    async def review(
        self, correction_id: str, *, approve: bool, actor: str, actor_cert: str, note: str
    ) -> Correction:
        """Approve (applied at once, in one step) or reject a requested correction as
        ``actor``; an approval by its requester is refused."""
        requested = await self.get(correction_id)
        group = keys.LinkGroupKeys(requested.link_group_id)
        meter_ids = sorted({m for w in requested.wagers for m in w.meter_ids})
        raw = await self._run(
            self._scripts.review_correction,
            [
                group.corrections,
                group.round(requested.table_id, requested.round_id),
                group.journal,
                group.seq,
                group.jackpots,
                group.pending,
                *(group.meter(m) for m in meter_ids),
            ],
            [
                correction_id,
                "approved" if approve else "rejected",
                actor,
                actor_cert,
                note,
                json.dumps(meter_ids),
            ],
        )
        return decode(raw)

    async def get(self, correction_id: str) -> Correction:
        """One correction; :class:`NotFound` names an unknown id."""
        link_group_id, _, seq = correction_id.rpartition(":")
        if not link_group_id or not seq.isdigit():
            raise NotFound(f"correction {correction_id} does not exist (ids look like 'floor:17')")
        group = keys.LinkGroupKeys(link_group_id)
        raw = await self._read(self._client.hget(group.corrections, correction_id))
        if raw is None:
            raise NotFound(f"correction {correction_id} does not exist")
        return decode(raw, correction_id, group.corrections)

    async def list(
        self, link_group_id: str = "", status: str = "", table_id: str = ""
    ) -> list[Correction]:
        """The corrections of one link group or all, in journal order per group; ``status``
        and ``table_id`` filter (empty: any)."""
        found: list[Correction] = []
        for group_id in await self._catalog.group_ids(link_group_id):
            group = keys.LinkGroupKeys(group_id)
            stored = await self._read(self._client.hgetall(group.corrections))
            for name, raw in stored.items():
                record = decode(raw, name, group.corrections)
                if (not status or record.status == status) and (
                    not table_id or record.table_id == table_id
                ):
                    found.append(record)
        return sorted(found, key=lambda c: (c.link_group_id, c.request_seq))

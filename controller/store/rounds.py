"""A table's rounds: lockout, settlement, void, and what the table reports of a round.

Each step is one script over the round's and its link group's keys (:mod:`controller.store.gateway`
runs it); the keys of a table's lockout and settle calls are made once per definition of the
table, and this process remembers the wagers of the lockouts it answered
(:mod:`controller.store.locked_rounds`), so a Settle plans without a read. Amounts are cents,
meter money microcents.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from controller.domain.config import TableConfig
from controller.domain.digests import void_fingerprint
from controller.domain.mystery import new_seed as mystery_seed
from controller.domain.rounds import Payout, Wager
from controller.store import codec, keys
from controller.store.gateway import ScriptGateway
from controller.store.irregularities import Resolution
from controller.store.locked_rounds import LockedRound, LockedRounds
from controller.store.tables import Tables
from jackpot.epochs import NO_POSITION, JournalPosition, claimed_seq
from jackpot.errors import StoreUnavailable
from jackpot.irregularities import (
    CHIP_COUNT_SECTION,
    COUNTED_WAGERS,
    IrregularityRule,
    irregularity_reason,
)
from jackpot.kinds import IrregularityEffect, IrregularityKind
from jackpot.results import (
    ChipCountResult,
    IrregularityResult,
    LockoutResult,
    SeatOutcome,
    SettleResult,
    VoidResult,
)

DEFAULT_ROUND_RETENTION_SECONDS = 7 * 24 * 3600
DEFAULT_MAX_ROUND_STEP = 1000
"""How far above a table's last locked-out round a new round id may be."""


@dataclass(frozen=True, slots=True)
class _PhaseKeys:
    """What a table's lockout and settle script calls name besides the round (see
    :meth:`Rounds._phase_keys`): their KEYS after the round's, in order, and ARGV's meter
    ids JSON."""

    table: TableConfig
    group: keys.LinkGroupKeys
    lockout: tuple[str, ...]
    settle: tuple[str, ...]
    meter_ids_json: str


class Rounds:
    """The round steps of the tables (``store.rounds``).

    ``round_retention_seconds`` is how long a round's record (and so its stored answers for
    retries) is kept; a round id is accepted only above the table's last one, so a retry
    that arrives after its record expired is refused, never applied twice.
    """

    def __init__(
        self,
        gateway: ScriptGateway,
        tables: Tables,
        *,
        round_retention_seconds: int = DEFAULT_ROUND_RETENTION_SECONDS,
        max_round_step: int = DEFAULT_MAX_ROUND_STEP,
    ) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._read = gateway.read
        self._decoded = gateway.decoded
        self._apply = gateway.apply
        self._table_revs = tables.revisions
        self._forget_table = tables.forget_table
        self._round_retention_seconds = round_retention_seconds
        self.max_round_step = max_round_step
        self._locked = LockedRounds()
        self._phase_keys_by_table: dict[str, _PhaseKeys] = {}

    def _round_keys(self, table: TableConfig, round_id: int) -> tuple[keys.LinkGroupKeys, str]:
        group = keys.LinkGroupKeys(table.link_group_id)
        return group, group.round(table.table_id, round_id)

    @staticmethod
    def _meter_keys(group: keys.LinkGroupKeys, table: TableConfig) -> list[str]:
        return [group.meter(meter_id) for meter_id in table.meter_ids]

    def _phase_keys(self, table: TableConfig) -> _PhaseKeys:
        """The keys of ``table``'s lockout and settle scripts after the round's own, and its
        meter ids as JSON, made once per definition of the table."""
        known = self._phase_keys_by_table.get(table.table_id)
        if known is not None and known.table is table:
            return known
        group = keys.LinkGroupKeys(table.link_group_id)
        meters = self._meter_keys(group, table)
        known = self._phase_keys_by_table[table.table_id] = _PhaseKeys(
            table=table,
            group=group,
            lockout=(
                group.table(table.table_id),
                group.journal,
                group.seq,
                group.epoch,
                group.counters,
                group.open_rounds,
                group.maintenance,
                *meters,
                group.jackpots,
                group.pending,
                *(group.mystery(meter_id) for meter_id in table.meter_ids),
            ),
            settle=(
                group.journal,
                group.seq,
                group.jackpots,
                group.pending,
                group.epoch,
                group.counters,
                group.open_rounds,
                *meters,
            ),
            meter_ids_json=json.dumps(table.meter_ids),
        )
        return known

    async def lockout(
        self,
        table: TableConfig,
        round_id: int,
        wagers: Sequence[Wager],
        fingerprint: str,
        known: JournalPosition = NO_POSITION,
    ) -> LockoutResult:
        """Record the wagers accepted at lockout and apply their contributions (atomic).
        ``known`` is the table's last acknowledged journal position: a link group whose
        state lacks it is stopped (:class:`LinkGroupStopped`), as in every table step.
        The round's wagers (stored in this order) and fingerprint are remembered for its
        settlement (:mod:`controller.store.locked_rounds`)."""
        phase = self._phase_keys(table)
        payload = _PAYLOAD([_wager_item(table, w) for w in wagers])
        apply = self._apply(
            self._scripts.lockout,
            [phase.group.round(table.table_id, round_id), *phase.lockout],
            [
                table.table_id,
                round_id,
                fingerprint,
                payload,
                phase.meter_ids_json,
                self._round_retention_seconds,
                self.max_round_step,
                known.epoch,
                claimed_seq(known),
                mystery_seed(),
                table.link_group_id,
                self._table_revs.get(table.table_id, 0),
            ],
            codec.lockout_result,
        )
        try:
            result = await apply
        except StoreUnavailable:
            self._forget_table(table.table_id)  # perhaps changed: read it again for the retry
            raise
        self._locked.remember(table.table_id, round_id, tuple(wagers), fingerprint)
        return result

    async def locked_round(
        self, table: TableConfig, round_id: int, *, fresh: bool = False
    ) -> LockedRound | None:
        """The wagers a round was locked out with and that lockout's fingerprint, or None
        when the round was never locked out (or its record expired): as this process
        remembers its own lockout, else read from Redis. Wagers never change after the
        lockout; the settle script checks the fingerprint again (a stale memory is refused
        there, and forgotten by :meth:`settle`). ``fresh``: forget it and read Redis."""
        if fresh:
            self._locked.forget(table.table_id, round_id)
        remembered = self._locked.recall(table.table_id, round_id)
        if remembered is not None:
            return remembered
        _, round_key = self._round_keys(table, round_id)
        version, wagers, fingerprint, state = await self._read(
            self._client.hmget(round_key, "v", "wagers", "lockout_fp", "state")
        )
        if wagers is None:
            return None
        if state != "settled":  # a settled round's retry is answered by settle.lua's replay
            await self._check_table_rev(table, round_id)
        where = f"{round_id} of table {table.table_id}"
        return LockedRound(
            self._decoded(
                lambda: codec.locked_wagers(where, {"v": version, "wagers": wagers}, round_key)
            ),
            fingerprint,
        )

    async def settle(
        self,
        table: TableConfig,
        round_id: int,
        plan: Sequence[Payout],
        lockout_fingerprint: str,
        fingerprint: str,
        known: JournalPosition = NO_POSITION,
        *,
        rest_of_round_void: bool = False,
    ) -> SettleResult:
        """Pay the plan in its order from the live meters, journal it, answer it (atomic).
        The round's remembered lockout is forgotten whatever the answer (settled, replayed,
        refused: a refusal for a stale lockout fingerprint is answered from Redis next).
        ``rest_of_round_void``: the settlement carries one (and claims no base game win); a
        round recorded as "bonus_settles" (§ 647a.13(a), (d)) is refused without it."""
        phase = self._phase_keys(table)
        payload = _PAYLOAD([_plan_item(item) for item in plan])
        self._locked.forget(table.table_id, round_id)
        return await self._apply(
            self._scripts.settle,
            [phase.group.round(table.table_id, round_id), *phase.settle],
            [
                table.table_id,
                round_id,
                fingerprint,
                payload,
                phase.meter_ids_json,
                self._round_retention_seconds,
                table.link_group_id,
                lockout_fingerprint,
                known.epoch,
                claimed_seq(known),
                "1" if rest_of_round_void else "",
            ],
            codec.settle_result,
        )

    async def void_round(
        self,
        table: TableConfig,
        round_id: int,
        reason: str,
        fingerprint: str,
        known: JournalPosition = NO_POSITION,
        *,
        irregularity: IrregularityRule | None = None,
        kind: IrregularityKind | None = None,
        resolution: Resolution | None = None,
    ) -> VoidResult:
        """Void a locked, unsettled round: its contributions leave the meters (atomic).
        With ``kind`` and its ``irregularity`` rule: for that seeded irregularity, journaled
        and counted in the same step. With ``resolution``: a supervisor voids a round held by
        a chip count that differed (a round held so is refused to the table otherwise)."""
        group, round_key = self._round_keys(table, round_id)
        if self._locked.recall(table.table_id, round_id) is None:
            await self._check_table_rev(table, round_id)  # locked out by another process
        self._locked.forget(table.table_id, round_id)
        why: dict[str, str] = {}
        if resolution is not None:
            why = {
                "by": "supervisor",
                **dataclasses.asdict(resolution),
                "link_group_id": table.link_group_id,
            }
        elif irregularity is not None and kind is not None:
            why = {
                "by": "table",
                "kind": kind.value,
                "effect": irregularity.effect.value,
                "section": irregularity.section,
                "link_group_id": table.link_group_id,
            }
        return await self._apply(
            self._scripts.void_round,
            [
                round_key,
                group.journal,
                group.seq,
                group.epoch,
                group.counters,
                group.open_rounds,
                group.irregularities,
                *self._meter_keys(group, table),
                group.jackpots,
                group.pending,
            ],
            [
                table.table_id,
                round_id,
                fingerprint,
                reason,
                json.dumps(table.meter_ids),
                self._round_retention_seconds,
                known.epoch,
                claimed_seq(known),
                json.dumps(why) if why else "",
            ],
            codec.void_result,
        )

    async def _check_table_rev(self, table: TableConfig, round_id: int) -> None:
        """Refuse (retryable) a round locked out with another revision of the table than the
        one cached here: the definition changed since this process read it (forgotten now,
        so the retry reads it again)."""
        _, round_key = self._round_keys(table, round_id)
        rev = await self._read(self._client.hget(round_key, "table_rev"))
        if rev is not None and self._round_int(round_key, table, round_id, "table_rev", rev) != (
            self._table_revs.get(table.table_id, 0)
        ):
            self._forget_table(table.table_id)
            raise StoreUnavailable(
                f"the definition of table {table.table_id} was changed by an operator; retry "
                "the same request"
            )

    def _round_int(
        self, key: str, table: TableConfig, round_id: int, field: str, value: str
    ) -> int:
        """An integer field of a round's record (a corrupt one reported and raised)."""

        def decode() -> int:
            with codec.reading("round", f"{round_id} of table {table.table_id}", key):
                return codec.integer(field, value)

        return self._decoded(decode)

    @staticmethod
    def _irregularity_keys(group: keys.LinkGroupKeys, round_key: str) -> list[str]:
        return [
            round_key,
            group.journal,
            group.seq,
            group.epoch,
            group.counters,
            group.irregularities,
        ]

    async def report_chip_count(
        self, table: TableConfig, round_id: int, chips: int, known: JournalPosition = NO_POSITION
    ) -> ChipCountResult:
        """Record the dealer's chip count of a locked-out round (§ 639a.8(b)), compared with
        the Progressive Payout Wagers accepted; a count that differs holds the round for a
        supervisor (atomic, journaled, counted)."""
        group, round_key = self._round_keys(table, round_id)
        return await self._apply(
            self._scripts.report_chip_count,
            self._irregularity_keys(group, round_key),
            [
                table.table_id,
                round_id,
                chips,
                json.dumps([kind.value for kind in COUNTED_WAGERS]),
                table.link_group_id,
                CHIP_COUNT_SECTION,
                known.epoch,
                claimed_seq(known),
            ],
            codec.chip_count_result,
        )

    async def report_irregularity(
        self,
        table: TableConfig,
        round_id: int,
        kind: IrregularityKind,
        rule: IrregularityRule,
        known: JournalPosition = NO_POSITION,
    ) -> IrregularityResult:
        """Apply a seeded irregularity by its ``rule`` (atomic, journaled with its kind,
        effect and section, counted): void the round, or record it for a round whose bonus
        wagers still settle (Texas Hold 'Em Bonus, § 647a.13)."""
        reason = irregularity_reason(kind, rule)
        if rule.effect is IrregularityEffect.VOID:
            void = await self.void_round(
                table,
                round_id,
                reason,
                void_fingerprint(reason),
                known,
                irregularity=rule,
                kind=kind,
            )
            return IrregularityResult(
                table_id=void.table_id,
                round_id=void.round_id,
                kind=kind,
                effect=rule.effect.value,
                section=rule.section,
                reason=reason,
                reversed=void.reversed,
                meters=void.meters,
                replayed=void.replayed,
                journal=void.journal,
            )
        group, round_key = self._round_keys(table, round_id)
        return await self._apply(
            self._scripts.report_irregularity,
            self._irregularity_keys(group, round_key),
            [
                table.table_id,
                round_id,
                kind.value,
                rule.effect.value,
                rule.section,
                reason,
                table.link_group_id,
                known.epoch,
                claimed_seq(known),
            ],
            codec.irregularity_result,
        )


_PAYLOAD = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
"""A script's JSON argument, compact, by an encoder made once (items hold no cycle)."""


def _wager_item(table: TableConfig, wager: Wager) -> dict[str, Any]:
    offer = table.offer(wager.kind)
    item = {
        "seat": wager.seat,
        "kind": wager.kind,
        "amount_cents": wager.amount_cents,
        "on_dealer_hand": wager.on_dealer_hand,
        "envy": wager.envy,
        "meters": list(offer.meter_ids) if offer else [],
    }
    if wager.player_token:  # only then: a round without tokens stores nothing more
        item["player_token"] = wager.player_token
    return item


_PLAN_FIELDS = tuple(
    field.name
    for field in dataclasses.fields(Payout)
    # these travel in the award; a player token only when given (_plan_item)
    if field.name not in ("award", "amount_cents", "meter_id", "player_token")
)


def _plan_item(payout: Payout) -> dict[str, Any]:
    """One line of the plan for the settle script: the payout's fields by name (the script
    copies them into the :class:`jackpot.results.SeatResult` it answers), and for an award its
    rule; a fixed amount travels as a decimal string (exact whatever its size)."""
    item: dict[str, Any] = {name: getattr(payout, name) for name in _PLAN_FIELDS}
    if payout.award is not None and payout.outcome is SeatOutcome.PAID:
        item["award"] = {
            "kind": payout.award_kind,
            "meter_ppm": payout.award.meter_ppm,
            "amount_cents": str(payout.amount_cents),
            "text": payout.award.text,
            "meter_id": payout.meter_id,
        }
        if payout.player_token:  # the winner's player token, for the slip
            item["player_token"] = payout.player_token
    return item

"""The floor view's data: pending jackpots, the cage's queue of approved jackpots to pay,
tables and their state, meters, recent hits (each with who approved and who paid it).

One snapshot serves every open floor view for :data:`SNAPSHOT_TTL_S` (a few supervisors'
browsers polling every second cost Redis one read of each kind per second). A table's state
is what the controller can know from Redis, in this order:

* ``stopped`` — its link group is stopped (Redis lost state; nothing is served);
* ``maintenance`` — its link group is in maintenance (lockouts with a wager are refused);
* ``irregularity`` — a chip count differed and the round waits for a supervisor;
* ``offline`` — the controller heard nothing from the table's agent for
  :data:`OFFLINE_AFTER_S`: no call of any kind from the table's certificate (a running agent
  probes with ``GetTable`` at least every 10 s and holds its ``WatchMeters`` stream open;
  :mod:`controller.api.liveness`), on any replica, and no round locked out. A closed table
  and a table whose agent cannot reach any controller look the same here; the agent's own
  PROGRESSIVE OFFLINE says which;
* ``online`` — otherwise: its agent runs and reaches the controller (whether or not a round
  is being played: see its last round);
* ``corrupt`` — its record in Redis does not read (shown by id; nothing else is known).

A stored record that does not read (a corrupt meter, table, jackpot or irregularity) never
takes the view down: it is left out where it would be, marked (a table ``corrupt``, a meter
without an amount), and listed under ``corrupt`` with its Redis key and what to do.

Times are milliseconds since the Unix epoch from Redis's clock; amounts are integer cents;
hands are their machine labels (``hand``), with the words people read beside them
(``hand_words``, :func:`jackpot.hands.words.hand_words`, as the CLI, console and slip show them).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from controller.actions.jackpot_review import with_requirements
from controller.domain.gaming_day import GamingDay
from controller.domain.payout_compliance import DEFAULT, PRESETS, PayoutCompliance
from controller.domain.records import Jackpot
from controller.domain.staged import describe as describe_staged
from controller.domain.staged_tables import describe as describe_staged_table
from controller.store.redis_store import RedisStore
from jackpot.errors import CorruptRecord, FailedPrecondition
from jackpot.games import GAMES
from jackpot.hands.words import hand_words
from jackpot.kinds import wager_words
from jackpot.money import floor_cents
from jackpot.results import METER_AFTER

SNAPSHOT_TTL_S = 1.0
"""How long one snapshot serves every floor view."""
OFFLINE_AFTER_S = 30
"""A table whose agent was not heard from for this long is shown ``offline`` (three of its
probes missed, as the agent's own PROGRESSIVE OFFLINE after 30 s)."""
RECENT_HITS = 20
"""Hits shown, newest first."""
MAX_TO_PAY = 100
"""Approved jackpots waiting for their hand-pay shown (the cage's queue), oldest approval
first."""


def _jackpot(j: Jackpot, gaming_day: GamingDay | None = None) -> dict[str, Any]:
    return {
        "gaming_day": str(gaming_day.day_of(j.hit_at_ms)) if gaming_day else "",
        "jackpot_id": j.jackpot_id,
        "link_group_id": j.link_group_id,
        "meter_id": j.meter_id,
        "table_id": j.table_id,
        "round_id": j.round_id,
        "seat": j.seat,
        "hand": j.hand,
        "hand_words": hand_words(j.hand),
        "cards": j.cards,
        "amount_cents": j.amount_cents,
        "status": j.status,
        "hit_at_ms": j.hit_at_ms,
        "reviewed_by": j.reviewed_by,
        "reviewed_at_ms": j.reviewed_at_ms,
        "note": j.note,
        "wager": j.wager,
        "wager_words": wager_words(j.wager, on_dealer_hand=j.on_dealer_hand),
        "wager_cents": j.wager_cents,
        "on_dealer_hand": j.on_dealer_hand,
        "envy_for_seat": j.envy_for_seat,
        "award_text": j.award_text,
        "meter_before_cents": j.meter_before_cents,
        "meter_after_cents": j.meter_after_cents,
        "journal_seq": j.journal_seq,
        "paid_by": j.paid_by,
        "paid_at_ms": j.paid_at_ms,
        "paid_note": j.paid_note,
        "player_token": j.player_token,  # "" for none (docs/staged-changes.md)
        "payout_compliance": j.payout_compliance,
        "tax_form_required": j.tax_form_required,
        "tax_form_reason": j.tax_form_reason,
        "tax_form_overridable": j.tax_form_overridable,
        "tax_form_ref": j.tax_form_ref,
        "tax_form_override": j.tax_form_override,
        "witness_required": j.witness_required,
        "witness_reason": j.witness_reason,
        "witnessed_by": j.witnessed_by,
        "witnessed_at_ms": j.witnessed_at_ms,
    }


class FloorView:
    """Builds (and briefly caches) the floor view's snapshot."""

    def __init__(
        self,
        store: RedisStore,
        gaming_day: GamingDay | None = None,
        policy: PayoutCompliance = PRESETS[DEFAULT],
    ) -> None:
        self._store = store
        self._gaming_day = gaming_day
        """The casino's gaming day (the Rules Submission's): each jackpot's ``gaming_day``
        is its hit's ("" without one)."""
        self._policy = policy  # each jackpot's slip states what its hand-pay requires
        self._staged_tables = store.staged_tables  # docs/staged-changes.md
        self._lock = asyncio.Lock()
        self._cached: tuple[float, dict[str, Any]] | None = None

    def _jackpot(self, j: Jackpot) -> dict[str, Any]:
        """A pending or to-pay jackpot as the page shows it: with its gaming day and what its
        hand-pay requires under the payout policy."""
        return _jackpot(with_requirements(self._policy, j), self._gaming_day)

    def forget(self) -> None:
        """Drop the cached snapshot (after a review, so the reviewer sees it at once)."""
        self._cached = None

    async def snapshot(self) -> dict[str, Any]:
        """The floor as Redis holds it now (:class:`StoreUnavailable` if it cannot be read)."""
        async with self._lock:
            if self._cached and time.monotonic() - self._cached[0] < SNAPSHOT_TTL_S:
                return self._cached[1]
            data = await self._read()
            self._cached = (time.monotonic(), data)
            return data

    async def _read(self) -> dict[str, Any]:
        store = self._store
        now_ms = time.time_ns() // 1_000_000
        corrupt: list[CorruptRecord] = []
        groups = await store.catalog.list_link_groups(skipped=corrupt)
        held = {
            i.table_id
            for i in await store.irregularities.list_irregularities(status="open", skipped=corrupt)
        }
        tables: list[dict[str, Any]] = []
        hits: list[Jackpot] = []
        waiting: dict[str, list[str]] = {}  # meter -> the table changes its hit applies
        for group in groups:
            rounds: dict[str, tuple[int, int]] = {}
            unreadable: set[str] = set()
            bad_tables: list[CorruptRecord] = []
            group_tables = await store.tables.list_tables(group.link_group_id, skipped=bad_tables)
            corrupt += bad_tables
            tables += [
                {
                    "table_id": error.name,
                    "link_group_id": group.link_group_id,
                    "game": "",
                    "game_title": "",
                    "state": "corrupt",
                    "last_round_id": 0,
                    "last_round_ms": 0,
                    "heard_ms": 0,
                }
                for error in bad_tables
            ]
            heard = await store.tables.tables_heard([table.table_id for table in group_tables])
            if not group.stopped:
                ids = [table.table_id for table in group_tables]
                bad_rounds: list[CorruptRecord] = []
                rounds = await store.tables.last_rounds(
                    group.link_group_id, ids, skipped=bad_rounds
                )
                corrupt += bad_rounds
                unreadable = {error.name for error in bad_rounds}
                hits += await store.jackpots.list_jackpots(group.link_group_id, skipped=corrupt)
            for table in group_tables:
                try:
                    _, staged = await self._staged_tables.staged(table)
                    change = describe_staged_table(staged)  # "" for none
                except FailedPrecondition as error:  # a staged record that does not read
                    staged, change = None, str(error)
                if staged is not None:
                    waiting.setdefault(staged.meter_id, []).append(
                        f"table {table.table_id} {change}"
                    )
                round_id, at_ms = rounds.get(table.table_id, (0, 0))
                heard_ms = max(heard.get(table.table_id, 0), at_ms)  # a lockout is a call
                if group.stopped:
                    state = "stopped"
                elif table.table_id in unreadable:
                    state = "corrupt"
                elif group.maintenance.active:
                    state = "maintenance"
                elif table.table_id in held:
                    state = "irregularity"
                elif not heard_ms or now_ms - heard_ms > OFFLINE_AFTER_S * 1000:
                    state = "offline"
                else:
                    state = "online"
                tables.append(
                    {
                        "table_id": table.table_id,
                        "link_group_id": table.link_group_id,
                        "game": table.game,
                        "game_title": _game_title(table.game),
                        "state": state,
                        "last_round_id": round_id,
                        "last_round_ms": at_ms,
                        "heard_ms": heard_ms,
                        "change": change,  # a staged table change (docs/staged-changes.md)
                    }
                )
        pending = await store.jackpots.list_pending_jackpots(skipped=corrupt)
        to_pay = sorted((j for j in hits if j.status == "approved"), key=lambda j: j.reviewed_at_ms)
        meters: list[dict[str, Any]] = []
        for group in groups:
            bad_meters: list[CorruptRecord] = []
            meters += [
                {
                    "meter_id": m.meter_id,
                    "link_group_id": m.link_group_id,
                    "cents": floor_cents(m.amount_microcents),
                    "change": "; ".join(  # docs/staged-changes.md; "" for none
                        text for text in (describe_staged(m), *waiting.get(m.meter_id, ())) if text
                    ),
                }
                for m in await store.catalog.list_meters(group.link_group_id, skipped=bad_meters)
            ]
            meters += [  # shown without an amount: its record does not read
                {"meter_id": error.name, "link_group_id": group.link_group_id, "cents": None}
                for error in bad_meters
            ]
            corrupt += bad_meters
        hits.sort(key=lambda j: j.hit_at_ms, reverse=True)
        tables.sort(key=lambda t: (t["link_group_id"], t["table_id"]))
        return {
            "now_ms": now_ms,
            "offline_after_s": OFFLINE_AFTER_S,
            "meter_after": METER_AFTER,  # what "meter after" means, as the slip labels it
            "pending": [self._jackpot(j) for j in pending],
            "to_pay": [self._jackpot(j) for j in to_pay[:MAX_TO_PAY]],
            "tables": tables,
            "meters": meters,
            "hits": [_jackpot(j, self._gaming_day) for j in hits[:RECENT_HITS]],
            "corrupt": _corrupt(corrupt),
        }


def _game_title(game: str) -> str:
    """The regulation's title of ``game`` ("Caribbean Stud Poker"), as the sign and the
    console name it; an unknown name as it is."""
    facts = GAMES.get(game)
    return facts.title if facts else game


def _corrupt(found: list[CorruptRecord]) -> list[dict[str, str]]:
    """Each corrupt record once: its kind, id, Redis key and the message naming it."""
    seen: dict[tuple[str, str, str], CorruptRecord] = {}
    for error in found:
        seen.setdefault((error.kind, error.name, error.key), error)
    return [
        {"kind": kind, "name": name, "key": key, "message": str(error)}
        for (kind, name, key), error in sorted(seen.items())
    ]

"""``python -m bench.journal_memory [--rounds N] [--json FILE]``: Redis's memory under endless play.

Two redis-servers (AOF on, appendfsync always) on 127.0.0.1 are played the same Caribbean
Stud rounds (four $1 progressive wagers, cards from a seeded deck) through the store's
scripts directly - the same atomic steps the controller runs, without gRPC, so that
100,000 rounds take about a minute. Round records expire after ``--round-retention-s``, as
the controller's ``--round-retention-hours`` makes them, so what remains is the journal:

* **trimmed**: every ``--every`` rounds ``journal export`` (to a temporary directory) and
  ``journal trim`` with no retention window, as the export CronJob does;
* **untrimmed** (the baseline, same run): the same rounds, never exported nor trimmed, for
  ``--baseline-rounds``.

Reported: ``used_memory`` and the journal's length at every checkpoint, the trimmed run's
memory at the end as a ratio of its memory at the first checkpoint after the warm-up (flat:
about 1.0), and the untrimmed run's growth in bytes per round. Every loop is bounded in rounds
and in seconds (``--max-seconds`` per run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.api import convert
from controller.domain.config import LinkGroupConfig, TableConfig
from controller.domain.digests import lockout_fingerprint, settle_fingerprint
from controller.domain.rounds import RoundCards, SeatCards, Wager
from controller.domain.settlement import plan_settlement
from controller.journal import export as journal_export
from controller.store.redis_store import RedisStore
from controller.testing import RedisServer
from jackpot.cards import FULL_DECK
from jackpot.v1 import jackpot_pb2 as pb

GROUP = "bench"
METER = "cs-bench"
SEATS = (1, 2, 3, 4)
WAGER_CENTS = 100
ACTOR = "bench.journal_memory"
SIGNING_KEY = Ed25519PrivateKey.generate()  # signs the trims' checkpoints (a throwaway key)
FAR_FUTURE_MS = 10**15  # trim with no retention window: every exported entry may go


@dataclass(frozen=True)
class Params:
    """Sizes and bounds of one run (counts, seconds)."""

    rounds: int = 100_000
    every: int = 10_000
    baseline_rounds: int = 30_000
    tables: int = 32
    round_retention_s: int = 2
    max_seconds: float = 300.0
    seed: int = 20261201


async def _floor(store: RedisStore, tables: int) -> list[TableConfig]:
    await store.catalog.create_link_group(
        LinkGroupConfig(GROUP, "journal memory benchmark"), actor=ACTOR
    )
    await store.catalog.create_meter(
        convert.meter_config(
            pb.CreateMeterRequest(
                meter_id=METER,
                link_group_id=GROUP,
                game="caribbean-stud",
                reset_cents=1_000_000,
                rate_of_progression_percent="15",
                reserve_rate_percent="0",
            )
        ),
        actor=ACTOR,
    )
    configs = []
    for number in range(1, tables + 1):
        table = TableConfig.progressive(
            f"t{number}", "caribbean-stud", "B", 7, GROUP, METER, WAGER_CENTS
        )
        configs.append(await store.tables.register_table(table, actor=ACTOR))
    return configs


async def _play(store: RedisStore, table: TableConfig, round_id: int, rng: random.Random) -> None:
    """One round: lockout, then settlement with cards from a shuffled deck."""
    wagers = tuple(Wager(seat, "progressive", WAGER_CENTS) for seat in SEATS)
    await store.rounds.lockout(table, round_id, wagers, lockout_fingerprint(wagers))
    deck = list(FULL_DECK)
    rng.shuffle(deck)
    seats = tuple(SeatCards(seat, tuple(deck[5 * i : 5 * i + 5])) for i, seat in enumerate(SEATS))
    cards = RoundCards(seats, dealer=tuple(deck[20:25]))
    locked = await store.rounds.locked_round(table, round_id)
    assert locked is not None
    plan = plan_settlement(table, locked.wagers, cards)
    await store.rounds.settle(
        table, round_id, plan, locked.lockout_fingerprint, settle_fingerprint(cards)
    )


async def _memory(store: RedisStore) -> dict[str, int]:
    info = await store.client.info("memory")
    return {
        "used_memory": int(info["used_memory"]),
        "journal_entries": await store.journal.length(GROUP),
        "keys": int(await store.client.dbsize()),
    }


async def run_one(
    data_dir: Path, params: Params, rounds: int, *, trim: bool, export_dir: Path
) -> dict[str, Any]:
    """Play ``rounds`` rounds on a fresh Redis; every ``params.every`` rounds export and trim
    (when ``trim``) and read the memory."""
    redis = RedisServer(data_dir).start()
    store = RedisStore.from_url(redis.url, round_retention_seconds=params.round_retention_s)
    checkpoints: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        tables = await _floor(store, params.tables)
        rng = random.Random(params.seed)
        played = 0
        next_round = 0
        while played < rounds and time.monotonic() - started < params.max_seconds:
            batch = min(params.every, rounds - played)
            per_table = -(-batch // len(tables))

            async def table_rounds(table: TableConfig, first: int, count: int) -> None:
                for offset in range(count):
                    await _play(store, table, first + offset, rng)

            await asyncio.gather(
                *(table_rounds(table, next_round + 1, per_table) for table in tables)
            )
            next_round += per_table
            played += per_table * len(tables)
            exported = trimmed = 0
            if trim:
                exported = (await journal_export.export(store, export_dir, GROUP)).count
                trimmed = await journal_export.trim(
                    store, GROUP, before_ms=FAR_FUTURE_MS, signing_key=SIGNING_KEY
                )
            await asyncio.sleep(params.round_retention_s + 1)  # let the round records expire
            checkpoints.append(
                {
                    "rounds": played,
                    "seconds": round(time.monotonic() - started, 1),
                    "exported": exported,
                    "trimmed": trimmed,
                    **await _memory(store),
                }
            )
    finally:
        await store.close()
        redis.stop()
    return {"trimmed": trim, "checkpoints": checkpoints}


async def measure(params: Params) -> dict[str, Any]:
    """Both runs, and what they show."""
    with tempfile.TemporaryDirectory(prefix="jackpot-journal-memory-") as work:
        root = Path(work)
        trimmed = await run_one(
            root / "trimmed", params, params.rounds, trim=True, export_dir=root / "export"
        )
        untrimmed = await run_one(
            root / "untrimmed",
            params,
            params.baseline_rounds,
            trim=False,
            export_dir=root / "unused",
        )
    points = trimmed["checkpoints"]
    # The first checkpoint after the warm-up: Redis's allocator has settled by the second.
    reference = points[1] if len(points) > 1 else points[0]
    last = points[-1]
    base = untrimmed["checkpoints"]
    growth = (base[-1]["used_memory"] - base[0]["used_memory"]) / max(
        1, base[-1]["rounds"] - base[0]["rounds"]
    )
    return {
        "params": asdict(params),
        "trimmed": trimmed,
        "untrimmed": untrimmed,
        "summary": {
            "rounds_played": last["rounds"],
            "trimmed_memory_ratio_end_to_reference": last["used_memory"] / reference["used_memory"],
            "trimmed_journal_entries_at_end": last["journal_entries"],
            "untrimmed_bytes_per_round": growth,
            "untrimmed_journal_entries_per_round": base[-1]["journal_entries"]
            / max(1, base[-1]["rounds"]),
        },
    }


def report(results: dict[str, Any]) -> str:
    """The results for people."""
    lines = ["Redis memory under endless play (bytes; journal entries)", ""]
    for name in ("trimmed", "untrimmed"):
        lines.append(f"{name}: rounds  used_memory  journal_entries  keys")
        for point in results[name]["checkpoints"]:
            lines.append(
                f"  {point['rounds']:>7,}  {point['used_memory']:>12,}  "
                f"{point['journal_entries']:>15,}  {point['keys']:>5,}"
            )
    summary = results["summary"]
    lines += [
        "",
        f"trimmed: memory at {summary['rounds_played']:,} rounds is "
        f"{summary['trimmed_memory_ratio_end_to_reference']:.2f}x its memory at the reference "
        f"checkpoint; {summary['trimmed_journal_entries_at_end']:,} journal entries left",
        f"untrimmed: {summary['untrimmed_bytes_per_round']:,.0f} bytes and "
        f"{summary['untrimmed_journal_entries_per_round']:.1f} journal entries per round, for ever",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m bench.journal_memory``."""
    parser = argparse.ArgumentParser(prog="python -m bench.journal_memory", description=__doc__)
    parser.add_argument("--rounds", type=int, default=Params.rounds)
    parser.add_argument("--every", type=int, default=Params.every)
    parser.add_argument("--baseline-rounds", type=int, default=Params.baseline_rounds)
    parser.add_argument("--max-seconds", type=float, default=Params.max_seconds)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if not (0 < args.every <= args.rounds and 0 < args.baseline_rounds and args.max_seconds > 0):
        print(
            "bench.journal_memory: need 0 < --every <= --rounds, --baseline-rounds > 0",
            file=sys.stderr,
        )
        return 2
    params = Params(
        rounds=args.rounds,
        every=args.every,
        baseline_rounds=args.baseline_rounds,
        max_seconds=args.max_seconds,
    )
    results = asyncio.run(measure(params))
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

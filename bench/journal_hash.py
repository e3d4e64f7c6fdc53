"""``python -m bench.journal_hash [--rounds N] [--repeats R] [--json FILE]``: the chain's cost.

Every journal entry carries a SHA-256 chained to the previous entry, computed in Lua inside
the step that writes it (docs/journal.md): CPU in Redis's one thread on every lockout and
settlement. This plays the same Caribbean Stud rounds (the workload of
:mod:`bench.journal_memory`: four $1 progressive wagers, seeded cards, the store's scripts
called directly) on one redis-server (AOF off: scripts' CPU only) with three builds of the
scripts, alternated ``--repeats`` times in the same run:

* **none**: the chain switched off (each entry gets a constant in place of its hash);
* **encoding**: everything but SHA-256 (the canonical bytes, reading the previous hash);
* **chained**: the scripts as shipped.

Reported: Redis's script CPU per round (``INFO commandstats``, microseconds of EVALSHA and
EVAL, divided by the rounds), the median over the repeats, and each build's as a ratio of
**none**'s. Bounded in rounds and seconds (``--max-seconds`` per build and repeat).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from bench.journal_memory import GROUP, _floor, _play
from controller.store.redis_store import RedisStore
from controller.store.scripts import SCRIPT_NAMES, Scripts, script_source
from controller.testing import RedisServer

CHAINED = "local hash, chained_as = chain_hash(chain_head(journal_key), flat)"
BUILDS = {
    "none": "local hash, chained_as = CHAIN_GENESIS, nil",
    "encoding": CHAINED,
    "chained": CHAINED,
}
"""What each build's journal() computes its hash with."""
CHAIN_HASH = "\nlocal function chain_hash("
NO_SHA256 = (
    "\nsha256_absorb = function(state) return state end"
    "\nsha256_finish = function() return CHAIN_GENESIS, string.rep('\\0', 32) end"
)
"""What the 'encoding' build puts before chain_hash() in _lib.lua: SHA-256 as a constant."""


def _source(name: str, build: str) -> str:
    source = script_source(name)
    assert source.count(CHAINED) == 1, "journal() changed: update bench.journal_hash"
    source = source.replace(CHAINED, BUILDS[build])
    if build == "encoding":
        assert source.count(CHAIN_HASH) == 1, "chain_hash() moved: update bench.journal_hash"
        source = source.replace(CHAIN_HASH, NO_SHA256 + CHAIN_HASH)
    return source


def _scripts(client: Redis, build: str) -> Scripts:
    return Scripts(**{name: client.register_script(_source(name, build)) for name in SCRIPT_NAMES})


async def _script_usec(client: Redis) -> int:
    stats = await client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("usec", 0)) for name in ("evalsha", "eval"))


async def run_build(url: str, build: str, rounds: int, max_seconds: float, seed: int) -> float:
    """Play ``rounds`` rounds with ``build`` on a flushed Redis; script CPU per round (us)."""
    opened = RedisStore.from_url(url)
    store = RedisStore(opened.client, scripts=_scripts(opened.client, build))
    try:
        await store.client.flushall()
        tables = await _floor(store, 8)
        await store.client.config_resetstat()
        rng = random.Random(seed)
        started, played = time.monotonic(), 0
        while played < rounds and time.monotonic() - started < max_seconds:
            round_id = played // len(tables) + 1
            await asyncio.gather(*(_play(store, table, round_id, rng) for table in tables))
            played += len(tables)
        usec = await _script_usec(store.client)
        assert await store.journal.length(GROUP) > played
        return usec / played
    finally:
        await store.close()


async def measure(rounds: int, repeats: int, max_seconds: float) -> dict[str, Any]:
    """Every build ``repeats`` times, alternated, on one redis-server."""
    per_round: dict[str, list[float]] = {build: [] for build in BUILDS}
    with tempfile.TemporaryDirectory(prefix="jackpot-journal-hash-") as work:
        with RedisServer(Path(work), appendonly=False) as redis:
            for repeat in range(repeats):
                for build in BUILDS:
                    per_round[build].append(
                        await run_build(redis.url, build, rounds, max_seconds, seed=repeat)
                    )
    medians = {build: statistics.median(values) for build, values in per_round.items()}
    return {
        "rounds": rounds,
        "repeats": repeats,
        "script_usec_per_round": per_round,
        "median_usec_per_round": medians,
        "ratio_to_none": {build: medians[build] / medians["none"] for build in BUILDS},
    }


def report(results: dict[str, Any]) -> str:
    """The results for people."""
    lines = [
        f"Redis script CPU per round (us; median of {results['repeats']}, "
        f"{results['rounds']:,} rounds each), as a ratio of the chain switched off",
    ]
    for build, median in results["median_usec_per_round"].items():
        lines.append(f"  {build:<9} {median:8.1f} us  {results['ratio_to_none'][build]:.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m bench.journal_hash``."""
    parser = argparse.ArgumentParser(prog="python -m bench.journal_hash", description=__doc__)
    parser.add_argument("--rounds", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.rounds < 8 or args.repeats < 1 or args.max_seconds <= 0:
        print("bench.journal_hash: need --rounds >= 8, --repeats >= 1", file=sys.stderr)
        return 2
    results = asyncio.run(measure(args.rounds, args.repeats, args.max_seconds))
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m bench.scale [--shards 1,2,3] [--seconds S] [--json FILE]``: rounds/s on a Redis
Cluster of 1, 2 and 3 shards, as ratios of one shard.

For each shard count a fresh Redis Cluster (that many primaries, no replicas, every node with
its AOF on and ``appendfsync always``, or ``--appendfsync``;
:class:`controller.testing.RedisCluster`) holds
``--groups`` independent link groups (one meter, ``--tables-per-group`` tables each), spread
over the shards by their hash tags. ``--workers`` processes (spawned) play Caribbean Stud
rounds (four $1 progressive wagers, Lockout then Settle) at every table in a closed loop
through the controller's own store (:class:`controller.store.redis_store.RedisStore` on
``--redis-cluster``: the same script calls, routed to the shard of each link group, that a
controller sends - without gRPC, which does not change with the shards). Every worker starts
its window at the same instant after a warm-up and stops at its end: the run is bounded in
seconds, and in rounds (``--max-rounds`` per worker).

Reported per shard count: rounds/s and its ratio to one shard; the CPU of each shard's
redis-server per round (its capacity: 1000 / that many rounds/s per core it is given) and of
the workers per round; the shards' memory per round over the window (``used_memory``, every
record of a round kept for the round retention, the journal untrimmed). docs/scale.md turns
these into what an operator needs.

**This machine has 2 cores**, shared by the shards, the workers and this process: past one
core's worth of Redis, adding shards adds no hardware. The ratios measure the software's
scaling limits (a shard's share of the work, the workers' routing) - whether it scales, not
how far; the per-round CPU figures are what the model scales with.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from redis.crc import key_slot

from bench.journal_memory import WAGER_CENTS, _play
from bench.processes import cpu_seconds
from controller.api import convert
from controller.domain.config import LinkGroupConfig, TableConfig
from controller.store import keys
from controller.store.cluster import primaries as cluster_primaries
from controller.store.redis_store import RedisStore
from controller.testing import RedisCluster
from jackpot.v1 import jackpot_pb2 as pb

ACTOR = "bench.scale"
LEAD_S = 4.0
"""From submitting the workers to their window: spawn, connect, warm up."""


@dataclass(frozen=True)
class Params:
    """Sizes and bounds of a run (counts, seconds)."""

    shards: tuple[int, ...] = (1, 2, 3)
    groups: int = 12
    tables_per_group: int = 2
    workers: int = 3
    seconds: float = 15.0
    appendfsync: str = "always"
    max_rounds: int = 200_000  # per worker and window
    seed: int = 20261201


@dataclass(frozen=True)
class Job:
    """One worker: its tables (table id, link group id) and its window (monotonic seconds)."""

    url: str
    tables: tuple[tuple[str, str], ...]
    start_at: float
    end_at: float
    max_rounds: int
    seed: int


@dataclass(frozen=True)
class JobResult:
    """One worker's window: rounds completed, failures, its CPU seconds."""

    rounds: int
    failures: int
    cpu_s: float


def group_id(number: int) -> str:
    return f"scale-{number:02d}"


def table_config(table_id: str, link_group_id: str) -> TableConfig:
    meter = f"m-{link_group_id}"
    return TableConfig.progressive(
        table_id, "caribbean-stud", "B", 7, link_group_id, meter, WAGER_CENTS
    )


async def configure(store: RedisStore, params: Params) -> list[tuple[str, str]]:
    """The link groups, their meters and tables; answer (table id, link group id) pairs."""
    await store.catalog.ensure_installation(ACTOR)
    tables = []
    for number in range(params.groups):
        group = group_id(number)
        await store.catalog.create_link_group(
            LinkGroupConfig(group, "scale benchmark"), actor=ACTOR
        )
        request = pb.CreateMeterRequest(
            meter_id=f"m-{group}",
            link_group_id=group,
            game="caribbean-stud",
            reset_cents=1_000_000,
            rate_of_progression_percent="15",
            reserve_rate_percent="0",
        )
        await store.catalog.create_meter(convert.meter_config(request), actor=ACTOR)
        for table in range(params.tables_per_group):
            table_id = f"{group}-t{table}"
            await store.tables.register_table(table_config(table_id, group), actor=ACTOR)
            tables.append((table_id, group))
    return tables


def _run_job(job: Job) -> JobResult:
    return asyncio.run(_job(job))


async def _job(job: Job) -> JobResult:
    store = RedisStore.from_url(job.url)
    rng = random.Random(job.seed)
    counts = {"rounds": 0, "failures": 0}
    cpu: dict[str, float] = {}

    async def table_loop(table: TableConfig) -> None:
        round_id = 0
        while time.monotonic() < job.end_at and counts["rounds"] < job.max_rounds:
            round_id += 1
            try:
                await _play(store, table, round_id, rng)
            except Exception:  # counted, never hidden: the report shows failures
                counts["failures"] += 1
                continue
            if job.start_at <= time.monotonic() <= job.end_at:
                counts["rounds"] += 1

    async def clock() -> None:
        await asyncio.sleep(max(0.0, job.start_at - time.monotonic()))
        cpu["start"] = time.process_time()
        await asyncio.sleep(max(0.0, job.end_at - time.monotonic()))
        cpu["end"] = time.process_time()

    try:
        tables = [table_config(table_id, group) for table_id, group in job.tables]
        await asyncio.gather(clock(), *(table_loop(table) for table in tables))
    finally:
        await store.close()
    return JobResult(counts["rounds"], counts["failures"], cpu["end"] - cpu["start"])


async def _used_memory(url: str) -> int:
    """The ``used_memory`` of every primary of the cluster at ``url``, summed (bytes)."""
    store = RedisStore.from_url(url)
    try:
        client = store.cluster
        assert client is not None
        total = 0
        for node in await cluster_primaries(client):
            info = await client.info("memory", target_nodes=node)
            total += int(info["used_memory"])
        return total
    finally:
        await store.close()


async def _record_bytes(url: str, group: str, table_ids: list[str]) -> dict[str, float]:
    """Bytes of one round's record (the mean of the first 50 of one table) and of the
    journal per round (one link group's whole stream over the rounds its tables played),
    by MEMORY USAGE."""
    store = RedisStore.from_url(url)
    client = store.cluster
    assert client is not None
    try:
        group_keys = keys.LinkGroupKeys(group)
        sizes = []
        for round_id in range(1, 51):
            size = await client.memory_usage(group_keys.round(table_ids[0], round_id))
            if size:
                sizes.append(int(size))
        journal = await client.memory_usage(group_keys.journal, samples=0)
        played = 0
        for table_id in table_ids:
            played += int(await client.hget(group_keys.table(table_id), "last_round") or 0)
        return {
            "round_record_bytes": sum(sizes) / len(sizes) if sizes else 0.0,
            "journal_bytes_per_round": int(journal or 0) / max(1, played),
        }
    finally:
        await store.close()


async def _configure(url: str, params: Params) -> list[tuple[str, str]]:
    store = RedisStore.from_url(url)
    try:
        return await configure(store, params)
    finally:
        await store.close()


def measure_shards(
    shards: int, params: Params, pool: ProcessPoolExecutor, work: Path
) -> dict[str, Any]:
    """One cluster of ``shards`` primaries, played for ``params.seconds``."""
    with RedisCluster(
        work / f"shards-{shards}", primaries=shards, replicas=0, appendfsync=params.appendfsync
    ) as redis:
        url = f"redis-cluster://{redis.seeds}"
        tables = asyncio.run(_configure(url, params))
        start_at = time.monotonic() + LEAD_S
        end_at = start_at + params.seconds
        jobs = [
            Job(url, tuple(tables[n :: params.workers]), start_at, end_at, params.max_rounds, n)
            for n in range(params.workers)
        ]
        futures = [pool.submit(_run_job, job) for job in jobs]
        pids = [node.process.pid for node in redis.nodes if node.process is not None]
        time.sleep(max(0.0, start_at - time.monotonic()))
        redis_before = [cpu_seconds(pid) for pid in pids]
        memory_before = asyncio.run(_used_memory(url))  # warm: scripts loaded, buffers grown
        time.sleep(max(0.0, end_at - time.monotonic()))
        redis_after = [cpu_seconds(pid) for pid in pids]
        memory_after = asyncio.run(_used_memory(url))
        results = [future.result() for future in futures]
        first_group = tables[0][1]
        records = asyncio.run(
            _record_bytes(url, first_group, [t for t, g in tables if g == first_group])
        )
        shard_groups = Counter(
            redis.primary_of_slot(key_slot(keys.LinkGroupKeys(group_id(n)).tag.encode())).port
            for n in range(params.groups)
        )
    rounds = sum(result.rounds for result in results)
    redis_cpu = [after - before for before, after in zip(redis_before, redis_after, strict=True)]
    return {
        "shards": shards,
        "link_groups_per_shard": sorted(shard_groups.values()),
        "rounds": rounds,
        "failures": sum(result.failures for result in results),
        "rounds_per_s": rounds / params.seconds,
        "redis_cpu_ms_per_round": 1000 * sum(redis_cpu) / max(1, rounds),
        "busiest_shard_cpu_share": max(redis_cpu) / params.seconds,
        "worker_cpu_ms_per_round": 1000 * sum(r.cpu_s for r in results) / max(1, rounds),
        "bytes_per_round": (memory_after - memory_before) / max(1, rounds),
        **records,
    }


def measure(params: Params) -> dict[str, Any]:
    """Every shard count of ``params``, one after the other, and the ratios to the first."""
    context = multiprocessing.get_context("spawn")
    runs = []
    with (
        tempfile.TemporaryDirectory(prefix="jackpot-scale-") as work,
        ProcessPoolExecutor(params.workers, mp_context=context) as pool,
    ):
        for shards in params.shards:
            runs.append(measure_shards(shards, params, pool, Path(work)))
    base = runs[0]["rounds_per_s"] or 1.0
    for run in runs:
        run["ratio_to_first"] = run["rounds_per_s"] / base
    return {"params": asdict(params), "runs": runs}


def report(results: dict[str, Any]) -> str:
    """The results for people."""
    params = results["params"]
    first = params["shards"][0]
    lines = [
        f"Redis Cluster scale: {params['groups']} link groups x {params['tables_per_group']} "
        f"tables, {params['workers']} worker processes, {params['seconds']:.0f} s a run, "
        f"appendfsync {params['appendfsync']}, no replicas",
        "",
        f"shards  groups/shard  rounds/s  x{first}-shard  Redis CPU ms/round  busiest shard CPU"
        "  worker CPU ms/round  bytes/round  failures",
    ]
    for run in results["runs"]:
        lines.append(
            f"{run['shards']:>6}  {'/'.join(map(str, run['link_groups_per_shard'])):>12}  "
            f"{run['rounds_per_s']:>8,.0f}  {run['ratio_to_first']:>8.2f}  "
            f"{run['redis_cpu_ms_per_round']:>18.3f}  {run['busiest_shard_cpu_share']:>16.0%}  "
            f"{run['worker_cpu_ms_per_round']:>19.3f}  {run['bytes_per_round']:>11,.0f}  "
            f"{run['failures']:>8}"
        )
    last = results["runs"][-1]
    lines += [
        "",
        f"one round's record: {last['round_record_bytes']:,.0f} bytes (kept for the round "
        f"retention, 7 days by default); its journal: {last['journal_bytes_per_round']:,.0f} "
        "bytes (until exported and trimmed)",
        f"per-shard capacity: 1000 / {last['redis_cpu_ms_per_round']:.3f} = "
        f"{1000 / max(last['redis_cpu_ms_per_round'], 1e-9):,.0f} rounds/s per core a shard "
        "is given (docs/scale.md)",
        "",
        "NOTE: this machine has 2 cores, shared by every shard, the workers and this process;",
        "past one core of Redis, more shards add no hardware here. The ratios show whether the",
        "software scales out (independent link groups on independent shards), not how far;",
        "the CPU per round is what the model in docs/scale.md scales with.",
    ]
    return "\n".join(lines)


def _shards(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: shard counts, e.g. 1,2,3") from None
    if not counts or min(counts) < 1 or max(counts) > 8:
        raise argparse.ArgumentTypeError(f"{text!r}: each shard count 1 to 8")
    return counts


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m bench.scale``."""
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--shards", type=_shards, default=Params.shards)
    parser.add_argument("--groups", type=int, default=Params.groups)
    parser.add_argument("--tables-per-group", type=int, default=Params.tables_per_group)
    parser.add_argument("--workers", type=int, default=Params.workers)
    parser.add_argument("--seconds", type=float, default=Params.seconds)
    parser.add_argument(
        "--appendfsync",
        choices=("always", "everysec", "no"),
        default=Params.appendfsync,
        help="every node's fsync policy: 'always' (as in production) shares this machine's one "
        "disk between the shards; 'everysec' leaves the CPU as the only shared resource",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if min(args.groups, args.tables_per_group, args.workers) < 1 or not 0 < args.seconds <= 600:
        print(
            "bench.scale: --groups, --tables-per-group and --workers must be >= 1, "
            "--seconds 0 to 600",
            file=sys.stderr,
        )
        return 2
    params = Params(
        shards=args.shards,
        groups=args.groups,
        tables_per_group=args.tables_per_group,
        workers=args.workers,
        seconds=args.seconds,
        appendfsync=args.appendfsync,
    )
    results = measure(params)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

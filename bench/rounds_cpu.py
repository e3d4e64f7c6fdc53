"""``python -m bench.rounds_cpu [--seconds S] [--clients P]``: the controller's CPU per round
over gRPC, and nothing else.

Phase 3 of :mod:`bench.run` alone (full rounds, Lockout + Settle, every seat wagering, one
round at a time per table, closed loop), after one unmeasured window of the same rounds to
warm up: the controller's and Redis's CPU per round in milliseconds (ms, from process CPU
time, which other work on the cores moves much less than it moves rates) and rounds per
second, one JSON line on standard output. A run takes about 20 s, so a change is measured
against the code it replaces by alternating the two (each from its own checkout) and taking
the median of the pairs' ratios; a single run says little on a shared machine. Alternate the
order too (A B B A ...): on a loaded machine the first run of a pair measured 5-8% more CPU
per round than the second when both ran the same code.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import multiprocessing
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from bench.processes import System
from bench.run import QUICK, Bench, _setup


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m bench.rounds_cpu``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.rounds_cpu", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=6.0, help="the measured window")
    parser.add_argument("--clients", type=int, default=QUICK.clients, help="generator processes")
    args = parser.parse_args(argv)
    if not 1.0 <= args.seconds <= 600.0 or not 1 <= args.clients <= 16:
        parser.error("--seconds must be 1 to 600 and --clients 1 to 16")
    params = dataclasses.replace(QUICK, rounds_s=args.seconds, clients=args.clients, lead_s=4.0)
    context = multiprocessing.get_context("spawn")
    with System() as system, ProcessPoolExecutor(params.clients, mp_context=context) as pool:
        bench = Bench(system, params, pool)
        _, reply_bytes = asyncio.run(_setup(system, params))
        bench.last_rounds[bench.tables[0]] = 1
        system.start_echo(reply_bytes)  # the phases' CPU accounting reads its counters too
        bench.rounds()  # warm-up: connections, caches, the scripts loaded
        rounds = bench.rounds()
    per_round = rounds["cpu_us_per_call"]
    print(
        json.dumps(
            {
                "controller_ms_per_round": per_round["controller"] / 1000,
                "redis_ms_per_round": per_round["redis"] / 1000,
                "rounds_per_s": rounds["per_s"],
                "errors": rounds["errors"],
                "first_error": rounds["first_error"],
            }
        ),
        flush=True,
    )
    if rounds["errors"]:
        print(f"bench: {rounds['errors']} calls failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

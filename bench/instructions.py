"""``python bench/instructions.py [--tables N] [--rounds R]``: the controller's instructions per
round, counted by callgrind, a figure the machine's other work does not move.

CPU time per round (:mod:`bench.rounds_cpu`) moves by several percent from run to run on a
shared machine; the instructions the controller executes per round do not. This runs the
controller under ``valgrind --tool=callgrind`` (every thread, gRPC's included), plays
``--warm`` rounds at each of ``--tables`` tables, zeroes the counts, plays ``--rounds`` more
at each (one round at a time per table, all tables at once) and dumps the counts; then it
zeroes them again, waits as long as the rounds took and dumps again: what the controller
does on its own meanwhile (the refresh of Redis's state every 2 s, the liveness flush) is
subtracted. Printed: one JSON line with the instructions per round.

Instructions are not time: a change that touches more memory or code per round can cost more
CPU at the same count (at commit 61f93b9 the controller executed as many instructions per
round as at 917403f, within 0.5%, yet measured about 5% more CPU per round). Use it to see
whether a change adds or removes work, and :mod:`bench.against` for what a round costs.

It runs from any checkout: run by its path, with ``PYTHONPATH`` and the working directory set
to the checkout under test, it imports that checkout's ``bench`` and ``controller`` (this is
what ``bench.against --instructions`` does). Needs ``valgrind`` (Debian's package); about a
minute for 320 rounds. Bounded: at most 64 tables and 200 rounds each, every call's deadline
and the whole run under ``RUN_TIMEOUT_S``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MAX_TABLES = 64
MAX_ROUNDS = 200
START_TIMEOUT_S = 600.0
"""The controller starts about 50 times slower under callgrind."""
RUN_TIMEOUT_S = 900.0
SEED = 639


def summary_instructions(dump: Path) -> int:
    """The instructions (``Ir``) of one callgrind dump: its ``summary:`` line."""
    for line in dump.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise ValueError(f"{dump} holds no callgrind summary line")


def _wrapper(work: Path, python: str) -> Path:
    """A script that runs ``python`` under callgrind, its counts dumped beside it."""
    script = work / "callgrind-python"
    script.write_text(
        "#!/bin/sh\n"
        f'exec valgrind --tool=callgrind --callgrind-out-file="{work}/callgrind.out" '
        f'--dump-instr=no "{python}" "$@" 2>>"{work}/callgrind.log"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def _control(option: str, pid: int) -> None:
    subprocess.run(["callgrind_control", option, str(pid)], check=True, capture_output=True)


async def _measure(system: Any, tables: int, warm: int, rounds: int, work: Path) -> dict[str, Any]:
    from bench.loadgen import Recorder
    from bench.workload import Floor, table_ids

    floor = Floor(system.connect, table_ids(tables), SEED)
    recorder = Recorder()

    async def play(count: int) -> None:
        async def table(table_id: str) -> None:
            for _ in range(count):
                await floor.play(table_id, recorder)

        await asyncio.gather(*(table(table_id) for table_id in floor.table_ids))

    try:
        await floor.configure()
        await play(warm)
        pid = system.controller.pid
        _control("-z", pid)
        began = time.monotonic()
        await play(rounds)
        took_s = time.monotonic() - began
        _control("-d", pid)
        _control("-z", pid)
        await asyncio.sleep(took_s)  # the controller alone, as long as the rounds took
        _control("-d", pid)
    finally:
        await system.close_channels()
    if recorder.first_error:
        raise RuntimeError(f"a round failed: {recorder.first_error}")
    dumps = sorted(work.glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
    if len(dumps) < 2:
        raise RuntimeError(f"callgrind wrote {len(dumps)} dumps, not 2 (see {work})")
    with_rounds, alone = (summary_instructions(dump) for dump in dumps[-2:])
    played = tables * rounds
    return {
        "instructions_per_round": (with_rounds - alone) / played,
        "rounds": played,
        "alone_instructions_per_s": alone / took_s,
        "window_s": took_s,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        prog="python bench/instructions.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--tables", type=int, default=16, help=f"tables, 1 to {MAX_TABLES}")
    parser.add_argument("--warm", type=int, default=5, help="rounds per table before counting")
    parser.add_argument("--rounds", type=int, default=20, help="rounds per table counted")
    args = parser.parse_args(argv)
    if not 1 <= args.tables <= MAX_TABLES or not 1 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--tables must be 1 to {MAX_TABLES} and --rounds 1 to {MAX_ROUNDS}")
    if not 0 <= args.warm <= MAX_ROUNDS:
        parser.error(f"--warm must be 0 to {MAX_ROUNDS}")
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print(
            "bench.instructions: valgrind is not installed (apt-get install valgrind)",
            file=sys.stderr,
        )
        return 2
    # The checkout under test's own modules (PYTHONPATH), imported only now.
    from bench.processes import System
    from controller.testing import processes

    # System starts the controller with start()'s default wait, too short under callgrind.
    processes.ControllerProcess.start.__defaults__ = (START_TIMEOUT_S,)
    python = sys.executable
    system = System()
    work = Path(system.work) / "callgrind"
    work.mkdir()
    sys.executable = str(_wrapper(work, python))  # the controller's interpreter only
    try:
        with system:
            sys.executable = python
            answer = asyncio.run(
                asyncio.wait_for(
                    _measure(system, args.tables, args.warm, args.rounds, work), RUN_TIMEOUT_S
                )
            )
    finally:
        sys.executable = python
    print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.path[0] = str(Path.cwd())  # run by path: the checkout under test, not bench/ itself
    raise SystemExit(main())

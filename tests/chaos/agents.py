"""Simulated table agents as processes, and what their outboxes say they were told.

Each agent keeps a durable outbox (:mod:`table_agent.outbox`): a report before it is sent,
and its acknowledgement with what the answer moved. At every start an agent re-sends what
was not acknowledged, voids a round left locked and compacts the outbox into totals. So that
every acknowledgement stays readable, :meth:`AgentProcess.start` copies the outbox first;
what the restart itself delivered is then known only as a group (the compacted totals
minus the copy's tally), :class:`Recovered`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.testing import stop_process
from table_agent.outbox import SUMS, Outbox

SUM_OF_PHASE = {
    "lockout": "contributed_microcents",
    "settle": "paid_cents",
    "void": "reversed_microcents",
}
"""What an acknowledgement of each phase records (table_agent.outbox.SUMS)."""


@dataclass(frozen=True)
class Ack:
    """One acknowledged report, as its table recorded it."""

    report_id: str  # "<round>:<phase>"
    sums: dict[str, int]
    epoch: str = ""  # the journal position the controller answered it at
    seq: int = 0

    @property
    def round_id(self) -> int:
        return int(self.report_id.partition(":")[0])

    @property
    def phase(self) -> str:
        return self.report_id.partition(":")[2]

    @property
    def amount(self) -> int:
        """What the answer moved, in the unit of its phase's sum."""
        return self.sums.get(SUM_OF_PHASE[self.phase], 0)


@dataclass(frozen=True)
class Recovered:
    """What one restart delivered before compacting the outbox: the reports it re-sent or
    voided, and what their answers moved together (and how many were acknowledged)."""

    start: int
    report_ids: tuple[str, ...]
    sums: dict[str, int]
    acks: int


@dataclass(frozen=True)
class Acknowledged:
    """Every acknowledgement a table's outbox ever held."""

    acks: dict[str, Ack]
    recovered: list[Recovered]
    contradictions: list[str]  # a report acknowledged twice with different sums

    def report_ids(self) -> set[str]:
        return set(self.acks) | {rid for group in self.recovered for rid in group.report_ids}

    def count(self) -> int:
        return len(self.acks) + sum(group.acks for group in self.recovered)


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a kill: never acted on
    return records


class AgentProcess:
    """``table-agent --sim`` for one table, with its outbox in ``state_dir``."""

    def __init__(
        self,
        table_id: str,
        controllers: str,
        state_dir: Path,
        log_path: Path,
        tls: Sequence[str],
        agent_args: Sequence[str],
    ) -> None:
        self.table_id = table_id
        self.controllers = controllers
        self.state_dir = state_dir
        self.log_path = log_path
        self.tls = list(tls)
        self.agent_args = list(agent_args)
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.outbox = Outbox(state_dir, table_id)

    def _copy(self, start: int) -> Outbox:
        """The outbox as it was before ``start`` (1-based) began."""
        return Outbox(self.state_dir / "history" / str(start), self.table_id)

    def start(self, rounds: int) -> None:
        """Start the agent (again) to play ``rounds``; it re-sends what an earlier run
        left, after the harness copied the outbox (see the module)."""
        self.starts += 1
        if self.outbox.path.exists():
            shutil.copy(self.outbox.path, self._copy(self.starts).path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"==== start {self.starts}: {rounds} rounds ====\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "table_agent.cli",
                    "--table-id",
                    self.table_id,
                    "--controller",
                    self.controllers,
                    *self.tls,
                    "--sim",
                    "--rounds",
                    str(rounds),
                    "--state-dir",
                    str(self.state_dir),
                    *self.agent_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @property
    def exit_code(self) -> int | None:
        """None while it runs (or before its start)."""
        return self.process.poll() if self.process else None

    def signal(self, signum: signal.Signals) -> None:
        """Send ``signum`` to the running agent."""
        assert self.process is not None and self.process.poll() is None, "the agent is not running"
        os.kill(self.process.pid, signum)

    def pause(self, timeout_s: float = 5.0) -> None:
        """SIGSTOP the agent and return once it is stopped (a signal is delivered
        asynchronously: until then it may still write to its outbox)."""
        self.signal(signal.SIGSTOP)
        assert self.process is not None
        stat = Path(f"/proc/{self.process.pid}/stat")
        deadline = time.monotonic() + timeout_s
        while stat.read_text().rpartition(")")[2].split()[0] not in ("T", "t"):
            if time.monotonic() > deadline:
                raise AssertionError(f"table {self.table_id}'s agent did not stop")
            time.sleep(0.001)

    def kill(self) -> None:
        """kill -9, and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        """Stop it however it is (also when paused)."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
        stop_process(self.process, timeout_s=5)

    # ------------------------------------------------------------------ the outbox

    def _copies(self) -> list[int]:
        """The starts before which the outbox was copied."""
        return [n for n in range(1, self.starts + 1) if self._copy(n).path.exists()]

    def _files(self) -> list[Path]:
        """The copies before each restart, then the outbox, oldest first."""
        return [self._copy(n).path for n in self._copies()] + [self.outbox.path]

    def acknowledged(self) -> Acknowledged:
        """Every acknowledgement of every run (see :class:`Acknowledged`)."""
        acks: dict[str, Ack] = {}
        contradictions = []
        for path in self._files():
            for record in _read(path):
                if "ack" not in record or record.get("refused"):
                    continue
                ack = Ack(
                    record["ack"],
                    {k: int(v) for k, v in record.get("sums", {}).items()},
                    str(record.get("epoch", "")),
                    int(record.get("seq", 0)),
                )
                seen = acks.setdefault(ack.report_id, ack)
                if seen.sums != ack.sums:
                    contradictions.append(
                        f"report {ack.report_id} acknowledged twice: {seen.sums} and {ack.sums}"
                    )
        return Acknowledged(acks, self._recovered(), contradictions)

    def every_ack(self) -> list[Ack]:
        """Every acknowledgement record of every run, once each, also a report id answered in
        two epochs (a round id used again after a restore took Redis back before it)."""
        seen: dict[tuple[str, str, int], Ack] = {}
        for path in self._files():
            for record in _read(path):
                if "ack" in record and not record.get("refused"):
                    ack = Ack(
                        record["ack"],
                        {k: int(v) for k, v in record.get("sums", {}).items()},
                        str(record.get("epoch", "")),
                        int(record.get("seq", 0)),
                    )
                    seen.setdefault((ack.report_id, ack.epoch, ack.seq), ack)
        return list(seen.values())

    def _recovered(self) -> list[Recovered]:
        groups = []
        copies = self._copies()
        files = self._files()
        for index, start in enumerate(copies):
            before = self._copy(start)
            # A restart rewrites the outbox as one compacted record, then appends: the next
            # copy, or the outbox, begins with it - unless the run died before compacting.
            after = _read(files[index + 1])
            compacted = after[0] if after and "totals" in after[0] else None
            if compacted is None or compacted == next(iter(_read(before.path)), None):
                continue  # not compacted by this restart: its acks are in the next file
            report_ids = [report["id"] for report in before.pending()]
            report_ids += [f"{round_id}:void" for round_id in before.unfinished_rounds()]
            moved = Counter({name: int(v) for name, v in compacted["totals"].items()})
            moved.subtract(before.tally())
            groups.append(
                Recovered(
                    start,
                    tuple(report_ids),
                    {name: moved[name] for name in SUMS},
                    moved["acks"],
                )
            )
        return groups

    def refusals(self) -> list[str]:
        """Every report the controller refused, with its reason."""
        return [
            f"{record['ack']}: {record['refused']}"
            for path in self._files()
            for record in _read(path)
            if record.get("refused")
        ]

    def acked_lockouts(self) -> set[int]:
        """The rounds whose lockout was acknowledged."""
        return {
            int(rid.partition(":")[0])
            for rid in self.acknowledged().report_ids()
            if rid.endswith(":lockout")
        }

    def last_acked_round(self) -> int:
        return max(self.acked_lockouts(), default=0)

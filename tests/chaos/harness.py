"""The chaos rig: a whole floor as processes, under load from simulated tables.

A :class:`Rig` runs redis-server (append-only file, ``appendfsync always``), one or more
controllers (mutual TLS, the example Caribbean Stud Rules Submission: link group ``floor``,
meter ``cs-main``, tables cs-1 to cs-3; no call rate limit), optionally a
:class:`~controller.testing.FaultProxy` between the controllers and Redis, and one simulated
table agent per table, each with its own durable outbox and every controller's address.
:func:`play_through` lets the tables warm up, applies a fault (which returns once healed)
and waits for every table to finish its rounds; :mod:`tests.chaos.checks` then checks the
money. Every wait is bounded; :meth:`Rig.close` stops every process however a scenario left
it (the ``make_rig`` fixture calls it, also on failure).
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from controller.testing import ControllerProcess, FaultProxy, RedisServer, TestPKI
from tests.chaos.agents import AgentProcess
from tests.chaos.journal import Journal
from tests.helpers import CARIBBEAN_RULES as RULES

LINK_GROUP = "floor"
TABLES = ("cs-1", "cs-2", "cs-3")
CONTROLLER_ARGS = ("--table-calls-per-second", "0")  # simulated tables play fast

ROUNDS = 60
"""Rounds each table plays: a bounded load, a few seconds long at PACE_S."""
PACE_S = 0.03
"""The pause between two rounds of a table (a round itself takes a few tens of ms)."""
RETRY_FOR_S = 60.0
"""How long an agent retries one report: far longer than any fault here lasts."""
AGENT_ARGS = (
    "--pace",
    str(PACE_S),
    "--retry-for",
    str(RETRY_FOR_S),
    # every seat plays and places every wager the table offers: the most money per round
    "--occupancy-percent",
    "100",
    "--wager-percent",
    "100",
    "--void-percent",
    "5",  # a few misdeals: voids are in the tally too
    "--quiet",
)
WARM_UP_ROUNDS = 3
"""Rounds every table has had acknowledged before the fault."""
ROUNDS_AFTER_RECOVERY = 3
"""Rounds every table must have locked out after the fault was healed."""
WAIT_S = 120.0
"""The bound on each wait for the tables (warming up, finishing)."""


def tail(path: Path, chars: int = 2000) -> str:
    """The end of a log file."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


@dataclass(frozen=True)
class Topology:
    """What runs: how many controller replicas (every agent lists them all), and whether
    they reach Redis through a :class:`FaultProxy`."""

    controllers: int = 1
    proxy: bool = False


Check = Callable[[Journal], list[str]]
"""A fault's own check, run once the load has stopped: the problems it finds."""


class Rig:
    """Redis, controllers, a proxy and agents for one scenario (see the module)."""

    def __init__(self, directory: Path, pki: TestPKI, topology: Topology) -> None:
        self.directory = directory
        self.topology = topology
        self.redis = RedisServer(directory / "redis")
        self.proxy = FaultProxy(self.redis.port) if topology.proxy else None
        redis_url = self.proxy.url if self.proxy else self.redis.url
        self.controllers = [
            ControllerProcess(
                redis_url,
                directory / f"controller-{n}.log",
                pki=pki,
                rules=RULES,
                extra_args=CONTROLLER_ARGS,
            )
            for n in range(1, topology.controllers + 1)
        ]
        targets = ",".join(controller.target for controller in self.controllers)
        self.agents = {
            table_id: AgentProcess(
                table_id,
                targets,
                directory / "agents" / table_id,
                directory / f"agent-{table_id}.log",
                pki.client_args("table", table_id),
                AGENT_ARGS,
            )
            for table_id in TABLES
        }
        self.checks: list[Check] = []
        """What the fault wants checked besides the money, once the load has stopped."""
        self.down: set[int] = set()
        """Indexes of the controllers a fault stopped for good."""
        self.facts: dict[str, Any] = {}
        """What a fault noted for its scenario's own check."""

    def start(self) -> None:
        """Start Redis, the proxy, the controllers (one at a time: each applies the rules)
        and the agents."""
        self.redis.start()
        if self.proxy is not None:
            self.proxy.start()
        for controller in self.controllers:
            controller.start()
        for agent in self.agents.values():
            agent.start(ROUNDS)

    def close(self) -> None:
        """Stop everything still running, however the scenario left it; never raises."""
        for agent in self.agents.values():
            _quietly(agent.stop)
        redis = self.redis.process
        if redis is not None and redis.poll() is None:
            _quietly(lambda: os.kill(redis.pid, signal.SIGCONT))  # it may be stopped
        for controller in self.controllers:
            _quietly(controller.stop)
        if self.proxy is not None:
            _quietly(self.proxy.stop)
        _quietly(self.redis.stop)

    # ---------------------------------------------------------------- for the faults

    def kill_controller(self, index: int) -> None:
        """kill -9 controller ``index`` (0-based) and reap it."""
        controller = self.controllers[index]
        assert controller.process is not None, f"controller {index + 1} is not running"
        controller.process.kill()
        controller.process.wait()
        controller.stop()  # forgets the dead process; start() starts it again

    def redis_pid(self) -> int:
        assert self.redis.process is not None, "redis-server is not running"
        return self.redis.process.pid

    def replays(self) -> int:
        """Requests the running controllers answered from a stored reply (a retry of one
        that was applied): ``jackpot_replayed_requests_total``, every phase."""
        total = 0.0
        for controller in self.controllers:
            if controller.process is None:
                continue
            url = f"http://127.0.0.1:{controller.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as reply:
                text = reply.read().decode()
            for family in text_string_to_metric_families(text):
                if family.name == "jackpot_replayed_requests":
                    total += sum(s.value for s in family.samples if s.name.endswith("_total"))
        return int(total)

    def logs(self) -> str:
        """The end of every log, for a failure message."""
        parts = [f"--- {c.log_path.name}\n{tail(c.log_path)}" for c in self.controllers]
        parts += [f"--- {a.log_path.name}\n{tail(a.log_path)}" for a in self.agents.values()]
        parts.append(f"--- redis.log\n{tail(self.redis.data_dir / 'redis.log', 1000)}")
        return "\n".join(parts)

    def wait_for(self, what: str, done: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
        """Poll ``done`` until it holds; fail, naming ``what``, after ``timeout_s`` or as
        soon as an agent has exited with an error."""
        deadline = time.monotonic() + timeout_s
        while not done():
            for agent in self.agents.values():
                if agent.exit_code:
                    raise AssertionError(
                        f"waiting for {what}: table {agent.table_id}'s agent exited "
                        f"{agent.exit_code}\n{self.logs()}"
                    )
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout_s:.0f}s\n{self.logs()}")
            time.sleep(0.05)


def _quietly(action: Callable[[], object]) -> None:
    try:
        action()
    except Exception as error:  # cleanup goes on with the next process
        print(f"chaos cleanup: {error!r}", file=sys.stderr)


Fault = Callable[[Rig], None]
"""Break something while the tables play, heal it, and return once healed."""


def play_through(rig: Rig, fault: Fault) -> dict[str, int]:
    """Warm up, apply ``fault``, then let every table finish its rounds. Answer each table's
    last acknowledged round at the moment the fault was healed.

    A table whose agent played all its rounds while the fault lasted (one that did not stop
    it) is opened again for ROUNDS_AFTER_RECOVERY rounds, so that every table plays after
    the fault, whatever its length."""
    rig.wait_for(
        f"every table to have {WARM_UP_ROUNDS} rounds acknowledged",
        lambda: all(len(a.acked_lockouts()) >= WARM_UP_ROUNDS for a in rig.agents.values()),
    )
    fault(rig)
    marks = {table_id: agent.last_acked_round() for table_id, agent in rig.agents.items()}
    finished = "every table to finish its rounds"
    rig.wait_for(finished, lambda: all(a.exit_code == 0 for a in rig.agents.values()))
    for table_id, agent in rig.agents.items():
        if agent.last_acked_round() - marks[table_id] < ROUNDS_AFTER_RECOVERY:
            agent.start(ROUNDS_AFTER_RECOVERY)
    rig.wait_for(finished, lambda: all(a.exit_code == 0 for a in rig.agents.values()))
    return marks


def pause_briefly() -> None:
    """A short random pause, so that repeated attempts land at different points of a round."""
    time.sleep(random.uniform(0.003, 0.02))

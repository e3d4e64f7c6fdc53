"""Redis failover under load, as processes: a primary, a replica and three Sentinels, a
controller (mutual TLS, ``--redis sentinel://...``, ``--wait-replicas 1``) and three simulated
table agents with durable outboxes.

While the tables play, ``SENTINEL FAILOVER`` promotes the replica while the primary is still
up (it stays a primary, taking writes no replica confirms, until Sentinel demotes it about ten
seconds later); then the new primary is killed (``kill -9``), Sentinel promotes the first one
again, and the killed server comes back with its data as a replica. After the agents have
played all their rounds, every step an agent's outbox marks acknowledged is
checked against the new primary's journal and round records: each is there exactly once,
nothing is there that no agent had acknowledged, every award answered to an agent is the
journal entry it names, and ``jackpotctl audit verify`` over the Sentinel URL finds the meters
equal to their journals. Every wait is bounded; no time is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.store import keys
from controller.testing import ControllerProcess, TestPKI
from controller.testing.sentinel import SentinelGroup
from tests.helpers import CARIBBEAN_RULES as RULES

TABLES = ("cs-1", "cs-2", "cs-3")
ROUNDS = 60  # per table; each failover is reached after a few tens at most
PACE_S = "0.05"
PLAYED = 8  # rounds each table finishes before, between and after the failovers
GROUP = keys.LinkGroupKeys("floor")
MONEY_ENTRIES = ("contribution", "award", "fixed_award", "reset", "void", "round_voided")

pytestmark = pytest.mark.slow


@dataclass
class Outbox:
    """One table agent's outbox file: its reports by id ("<round>:<phase>"), the ids the
    controller acknowledged, and those it refused (with the reason)."""

    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    acked: set[str] = field(default_factory=set)
    refused: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Outbox:
        outbox = cls()
        if not path.exists():
            return outbox
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line being written right now
            if "report" in record:
                outbox.reports[record["report"]["id"]] = record["report"]
            elif record.get("refused"):
                outbox.refused[record["ack"]] = record["refused"]
            elif "ack" in record:
                outbox.acked.add(record["ack"])
        return outbox

    def rounds(self, phase: str) -> set[int]:
        """The rounds whose ``phase`` report was acknowledged."""
        return {int(i.partition(":")[0]) for i in self.acked if i.endswith(":" + phase)}

    @property
    def finished(self) -> int:
        """Rounds settled or voided, as acknowledged to the agent."""
        return len(self.rounds("settle") | self.rounds("void"))


@dataclass
class Floor:
    """The Sentinel group, the controller, and where the agents keep their files."""

    group: SentinelGroup
    controller: ControllerProcess
    state: Path

    def outbox(self, table_id: str) -> Outbox:
        return Outbox.read(self.state / f"{table_id}.outbox.jsonl")

    def finished(self) -> dict[str, int]:
        return {table_id: self.outbox(table_id).finished for table_id in TABLES}


@pytest.fixture
def floor(tmp_path: Path, pki: TestPKI) -> Iterator[Floor]:
    with SentinelGroup(tmp_path / "ha") as group:
        controller = ControllerProcess(
            group.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=RULES,
            extra_args=(
                "--table-calls-per-second",
                "0",  # simulated tables play fast
                "--wait-replicas",
                "1",
                "--wait-timeout-ms",
                "500",
            ),
        )
        with controller:
            yield Floor(group, controller, tmp_path / "agents")


def start_agents(floor: Floor) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "table_agent.cli",
                "--table-id",
                table_id,
                "--controller",
                floor.controller.target,
                *floor.controller.client_args("table", table_id),
                "--sim",
                "--rounds",
                str(ROUNDS),
                "--pace",
                PACE_S,
                "--void-percent",
                "5",
                "--retry-for",
                "120",  # longer than any outage here; bounded all the same
                "--quiet",
                "--state-dir",
                str(floor.state),
                "--summary-json",
                str(floor.state / f"{table_id}.summary.json"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for table_id in TABLES
    ]


def wait_until(
    done: Callable[[], bool], what: str, agents: list[subprocess.Popen[str]], timeout_s: float = 60
) -> None:
    """Poll ``done`` (bounded); fail at once should an agent have given up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done():
            return
        failed = [a for a in agents if a.poll() not in (None, 0)]
        assert not failed, f"an agent failed while waiting for {what}"
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def each_played(floor: Floor, since: dict[str, int], rounds: int) -> Callable[[], bool]:
    return lambda: all(floor.finished()[t] >= since.get(t, 0) + rounds for t in TABLES)


def journal_entries(floor: Floor) -> list[dict[str, str]]:
    with floor.group.client(floor.group.current_primary()) as primary:
        return [fields for _, fields in primary.xrange(GROUP.journal)]


def round_record(floor: Floor, table_id: str, round_id: int) -> dict[str, str]:
    with floor.group.client(floor.group.current_primary()) as primary:
        return dict(primary.hgetall(GROUP.round(table_id, round_id)))


def listed(value: Any) -> list[dict[str, Any]]:
    """A list the scripts wrote as JSON (Lua's cjson writes an empty list as ``{}``)."""
    value = json.loads(value) if isinstance(value, str) else value
    return value if isinstance(value, list) else []


def check_table(floor: Floor, table_id: str, entries: list[dict[str, str]]) -> None:
    """Every step acknowledged to this table is in the journal and its round records exactly
    once, and nothing else of the table is."""
    outbox = floor.outbox(table_id)
    assert not outbox.refused, f"{table_id}: refused during a failover: {outbox.refused}"
    assert outbox.acked == set(outbox.reports), f"{table_id}: a report never acknowledged"
    lockouts, settles, voids = (outbox.rounds(p) for p in ("lockout", "settle", "void"))
    assert settles | voids == lockouts and not settles & voids
    mine = [e for e in entries if e.get("table") == table_id and e["type"] in MONEY_ENTRIES]
    by_round: dict[int, list[dict[str, str]]] = {}
    for entry in mine:
        by_round.setdefault(int(entry["round"]), []).append(entry)
    assert set(by_round) <= lockouts, "journal entries of a round no agent saw acknowledged"
    summary = json.loads((floor.state / f"{table_id}.summary.json").read_text())
    awards: dict[int, list[dict[str, Any]]] = {}
    for award in summary["awards"]:
        awards.setdefault(award["round_id"], []).append(award)
    by_seq = {int(e["seq"]): e for e in entries}
    for round_id in sorted(lockouts):
        record = round_record(floor, table_id, round_id)
        journaled = by_round.get(round_id, [])
        kinds = Counter(e["type"] for e in journaled)
        # The lockout: the wagers reported, each contribution journaled once.
        wagers = listed(record["wagers"])
        report = outbox.reports[f"{round_id}:lockout"]["payload"]["wagers"]
        assert Counter((w["seat"], w["kind"], int(w["amount_cents"])) for w in wagers) == Counter(
            (w["seat"], w["kind"], w["amount_cents"]) for w in report
        ), f"{table_id}/{round_id}: the recorded wagers are not the acknowledged ones"
        contributions = Counter(
            (w["seat"], w["kind"], c["meter_id"], int(c["to_meter_microcents"]))
            for w in wagers
            for c in listed(w["contributions"])
        )
        assert contributions == Counter(
            (int(e["seat"]), e["wager"], e["meter"], int(e["d_meter"]))
            for e in journaled
            if e["type"] == "contribution"
        ), f"{table_id}/{round_id}: contributions not journaled exactly once"
        if round_id in voids:
            assert record["state"] == "voided" and kinds["round_voided"] == 1
            assert Counter(
                (int(e["seat"]), e["wager"], e["meter"]) for e in journaled if e["type"] == "void"
            ) == Counter((seat, kind, meter) for seat, kind, meter, _ in contributions.elements())
            assert not kinds["award"] + kinds["fixed_award"]
            continue
        # The settlement: every award answered to the agent is the journal entry it names,
        # and the journal has no other award of the round.
        assert record["state"] == "settled" and not kinds["round_voided"] + kinds["void"]
        answered = awards.get(round_id, [])
        assert kinds["award"] + kinds["fixed_award"] == len(answered), f"{table_id}/{round_id}"
        for award in answered:
            entry = by_seq[award["journal_seq"]]
            assert (entry["table"], int(entry["round"]), int(entry["seat"])) == (
                table_id,
                round_id,
                award["seat"],
            )
            assert int(entry["amount_cents"]) == award["amount_cents"]


def test_failovers_under_load_lose_no_acknowledged_step_and_apply_none_twice(
    floor: Floor, tmp_path: Path
) -> None:
    group = floor.group
    agents = start_agents(floor)
    try:
        wait_until(each_played(floor, {}, PLAYED), "the tables to play", agents)

        # 1. SENTINEL FAILOVER: the replica is promoted while the primary is still up.
        first = group.current_primary()
        group.failover()
        second = group.wait_for_new_primary(first.port)
        at_switch = floor.finished()
        wait_until(each_played(floor, at_switch, PLAYED), "play after the switch", agents)

        # 2. The new primary dies; Sentinel promotes the first one again; the dead one comes
        # back with its data, as a replica.
        killed = group.kill_primary()
        assert killed is second
        group.wait_for_new_primary(second.port)
        at_kill = floor.finished()
        killed.start()
        wait_until(each_played(floor, at_kill, PLAYED), "play after the kill", agents)

        outputs = [agent.communicate(timeout=120)[0] for agent in agents]
    finally:
        for agent in agents:  # only if the test failed before they finished
            if agent.poll() is None:
                agent.kill()
                agent.wait()
    for agent, output in zip(agents, outputs, strict=True):
        assert agent.returncode == 0, output
        assert f"{ROUNDS} rounds" in output
    end = floor.finished()
    for table_id in TABLES:  # the tables kept playing after each failover
        assert at_kill[table_id] >= at_switch[table_id] + PLAYED
        assert end[table_id] >= at_kill[table_id] + PLAYED

    entries = journal_entries(floor)
    assert [int(e["seq"]) for e in entries] == list(range(1, len(entries) + 1))
    for table_id in TABLES:
        check_table(floor, table_id, entries)

    audit = subprocess.run(
        [sys.executable, "-m", "controller.ctl.main", "audit", "verify", "--redis", group.url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert audit.stdout.startswith("audit: OK (1 link groups, 1 meters")

    log = floor.controller.log_tail(1_000_000)
    assert log.count("Redis Sentinel names a new primary for jackpot") >= 2, log[-3000:]
    metrics_url = f"http://127.0.0.1:{floor.controller.metrics_port}/metrics"

    def durability_shown() -> bool:
        with urllib.request.urlopen(metrics_url, timeout=5) as reply:
            text = reply.read().decode()
        return all(
            f"{name} 1.0" in text
            for name in (
                "jackpot_redis_primary",
                "jackpot_redis_connected_replicas",
                "jackpot_redis_replicas_required",
                "jackpot_redis_up",
            )
        )

    wait_until(durability_shown, "the durability gauges", [], timeout_s=30)

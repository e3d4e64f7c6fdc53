"""PROGRESSIVE OFFLINE with processes: a table agent plays while its controller is killed and
started again. The table goes offline after --offline-after, writes no new report meanwhile,
opens again once the controller is back, and every report is delivered exactly once: one
acknowledgement per report in its outbox, the controller's meter holding exactly what the
agent's acknowledged lockouts added, and ``jackpotctl audit verify`` OK. Every wait is a
bounded poll of the agent's metrics; no duration is asserted."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.testing import ControllerProcess, RedisServer, free_port
from jackpot.money import MICROCENTS_PER_CENT

ROUNDS = 60


def run(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, timeout=timeout, check=False
    )


def scrape(port: int) -> dict[str, float]:
    """The agent's samples, by name and labels as printed; empty while it does not serve."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
            text = reply.read().decode()
    except OSError:
        return {}
    samples = {}
    for line in text.splitlines():
        found = re.fullmatch(r"(jackpot_agent_\w+(?:\{[^}]*\})?) (\S+)", line)
        if found:
            samples[found[1]] = float(found[2])
    return samples


def poll(what: str, condition: Callable[[], bool], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"not {what} within {timeout_s:.0f} s")


def offline(port: int) -> float | None:
    return scrape(port).get('jackpot_agent_progressive_offline{table="cs-1"}')


def acknowledged(port: int, phase: str) -> float:
    key = f'jackpot_agent_reports_total{{outcome="acknowledged",phase="{phase}",table="cs-1"}}'
    return scrape(port).get(key, 0.0)


def outbox_records(state: Path) -> list[dict[str, object]]:
    lines = (state / "cs-1.outbox.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def report_ids(state: Path) -> list[str]:
    return [str(r["report"]["id"]) for r in outbox_records(state) if "report" in r]  # type: ignore[index]


@pytest.mark.slow
def test_a_table_goes_offline_without_its_controller_and_resumes_when_it_returns(
    system: tuple[RedisServer, ControllerProcess], tmp_path: Path
) -> None:
    redis, controller = system
    state, summary, port = tmp_path / "agent", tmp_path / "summary.json", free_port()
    command = [sys.executable, "-m", "table_agent.cli", "--table-id", "cs-1"]
    command += ["--controller", controller.target, *controller.client_args("table", "cs-1")]
    command += ["--sim", "--rounds", str(ROUNDS), "--pace", "0.1", "--offline-after", "2"]
    command += ["--metrics-port", str(port), "--state-dir", str(state)]
    command += ["--summary-json", str(summary), "--quiet"]
    with (tmp_path / "agent.log").open("w") as log:
        agent = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        poll("playing", lambda: acknowledged(port, "settle") >= 5)
        assert offline(port) == 0
        assert controller.process is not None
        controller.process.kill()  # gone without a word, mid-round or between rounds
        controller.process.wait(timeout=10)
        poll("offline", lambda: offline(port) == 1)
        written = report_ids(state)
        time.sleep(1)  # the table stays offline meanwhile, and writes nothing
        assert offline(port) == 1
        assert report_ids(state) == written, "a report was written while offline"
        samples = scrape(port)
        assert samples['jackpot_agent_outbox_depth{table="cs-1"}'] <= 1  # at most one in flight
        assert samples['jackpot_agent_seconds_since_last_answer{table="cs-1"}'] > 2
        controller.start()
        poll("online again", lambda: offline(port) == 0)
        assert agent.wait(timeout=120) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    output = (tmp_path / "agent.log").read_text()
    assert output.count("PROGRESSIVE OFFLINE: the controller has not answered for") == 1, output
    assert output.count("PROGRESSIVE ONLINE again: the controller answered after") == 1, output
    assert f"table cs-1: {ROUNDS} rounds" in output
    assert output.rstrip().endswith("PROGRESSIVE OFFLINE 1 time(s)"), output[-500:]

    records = outbox_records(state)
    reports = [str(r["report"]["id"]) for r in records if "report" in r]  # type: ignore[index]
    acks = Counter(str(r["ack"]) for r in records if "ack" in r)
    assert len(reports) == len(set(reports)) == 2 * ROUNDS
    assert set(acks) == set(reports) and set(acks.values()) == {1}, "one answer per report"
    assert not [r for r in records if r.get("refused")]

    audit = run("controller.ctl.main", "audit", "verify", "--redis", redis.url)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    listed = run(
        "controller.ctl.main",
        "--controller",
        controller.target,
        *controller.client_args("auditor", "lab"),
        "--json",
        "meters",
        "list",
    )
    assert listed.returncode == 0, listed.stderr
    (meter,) = json.loads(listed.stdout)["meters"]
    played = json.loads(summary.read_text())["meters"]["cs-main"]
    assert int(meter["wagers_total"]) == played["wagers"]
    held = int(meter["amount_microcents"]) + int(meter["reserve_microcents"])
    paid = int(meter["awards_cents_total"]) * MICROCENTS_PER_CENT
    seeded = int(meter["operator_seed_microcents_total"])
    assert held + paid - seeded == played["to_meter_microcents"] + played["to_reserve_microcents"]


def test_agent_link_and_metrics_options_fail_clearly(tmp_path: Path) -> None:
    base = ("table_agent.cli", "--table-id", "t", "--controller", "127.0.0.1:1", "--sim")
    bad = run(*base, "--insecure", "--offline-after", "0.5")
    assert bad.returncode == 2
    assert "--offline-after must be 1 to 3600 seconds, not 0.5" in bad.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = run(*base, "--insecure", "--metrics-port", str(port), "--offline-after", "2")
    assert busy.returncode == 1
    assert f"table-agent: cannot serve metrics on 127.0.0.1:{port}: " in busy.stderr
    assert "Traceback" not in busy.stderr

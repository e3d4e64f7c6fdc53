"""The link to the controller: PROGRESSIVE OFFLINE after a time without an answer, the agent's
refusal of new rounds meanwhile, its command-line checks and its metrics."""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import socket
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import grpc
import pytest

from jackpot.kinds import WagerKind
from jackpot.results import LockoutResult, SettleResult
from table_agent.cli import _check, _parser
from table_agent.client import ControllerClient, ControllerRefused, ControllerUnreachable
from table_agent.link import Link, ProgressiveOffline, check_offline_after
from table_agent.metrics import MetricsEndpoint, agent_registry
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.table import OUTCOMES, PHASES, RoundState, TableAgent
from table_agent.wagers import PlacedWager


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Controller(ControllerClient):
    """A client without a channel: acknowledges (or refuses, or cannot deliver) every report,
    and notes each answer on its link, as the real client does."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.refuse = False
        self.unreachable = False
        self.lockouts: list[int] = []

    def _answer(self) -> None:
        if self.unreachable:
            raise ControllerUnreachable("controller unreachable for 1s")
        self.link.answered()
        if self.refuse:
            raise ControllerRefused(grpc.StatusCode.FAILED_PRECONDITION, "no")

    async def lockout(
        self, table_id: str, round_id: int, wagers: Sequence[PlacedWager]
    ) -> LockoutResult:
        self._answer()
        self.lockouts.append(round_id)
        return LockoutResult(table_id, round_id, (), ())

    async def settle(self, table_id: str, round_id: int, report: SettleReport) -> SettleResult:
        self._answer()
        return SettleResult(table_id, round_id, (), ())


def test_offline_after_the_configured_time_without_an_answer_and_back_at_the_first(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    link = Link(30, table_id="cs-1", clock=clock)
    clock.now += 30
    assert not link.check() and link.silent_s() == 30
    clock.now += 1
    with caplog.at_level(logging.INFO, logger="table_agent.link"):
        assert link.check() and link.check() and link.offline
        with pytest.raises(ProgressiveOffline) as refused:
            link.refuse_if_offline()
        clock.now += 5
        link.answered()
        link.answered()
        assert not link.check() and link.silent_s() == 0
    assert str(refused.value) == (
        "PROGRESSIVE OFFLINE: no progressive wagers until the controller answers again "
        "(last answer 31 s ago)"
    )
    assert [record.levelname for record in caplog.records] == ["ERROR", "WARNING"]
    assert (
        caplog.records[0]
        .getMessage()
        .startswith("table cs-1: PROGRESSIVE OFFLINE: the controller has not answered for 31 s")
    )
    assert "PROGRESSIVE ONLINE again: the controller answered after 36 s" in (
        caplog.records[1].getMessage()
    )
    assert link.offline_periods == 1
    link.refuse_if_offline()  # open again: no refusal


@pytest.mark.parametrize("seconds", [0.0, 0.5, -1.0, 3601.0, math.nan, math.inf])
def test_offline_after_is_bounded(seconds: float) -> None:
    with pytest.raises(ValueError, match="--offline-after must be 1 to 3600 seconds"):
        check_offline_after(seconds)
    with pytest.raises(ValueError):
        Link(seconds)


def test_the_link_is_probed_when_quiet_and_the_probe_reopens_the_table() -> None:
    clock = Clock()
    link = Link(3, clock=clock)
    assert link.probe_after_s == 1
    assert Link(60).probe_after_s == 10
    answers = iter([False, False, True])
    probes = 0

    async def probe() -> bool:
        nonlocal probes
        probes += 1
        answered = next(answers, True)
        if answered:
            link.answered()
        return answered

    async def play() -> None:
        keeper = asyncio.create_task(link.keep(probe))
        try:
            await asyncio.sleep(0.3)
            assert probes == 0  # the link is fresh: nothing to ask
            clock.now += 4  # quiet for longer than --offline-after
            for _ in range(100):  # bounded: a probe every tick at most
                await asyncio.sleep(0.05)
                clock.now += 0.05
                if probes >= 3:
                    break
            assert probes >= 3 and not link.offline and link.offline_periods == 1
        finally:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)

    asyncio.run(play())


async def test_an_offline_table_refuses_new_lockouts_and_still_reports_locked_rounds(
    tmp_path: Path,
) -> None:
    clock = Clock()
    link = Link(2, table_id="t1", clock=clock)
    controller = Controller(link)
    agent = TableAgent("t1", controller, Outbox(tmp_path, "t1"))
    locked = agent.new_round()
    await agent.lockout(locked, [PlacedWager(1, WagerKind.PROGRESSIVE, 100)])
    clock.now += 3
    opened = agent.new_round()
    with pytest.raises(ProgressiveOffline, match="last answer 3 s ago"):
        await agent.lockout(opened, [PlacedWager(2, WagerKind.PROGRESSIVE, 100)])
    assert agent.states[opened] is RoundState.OPEN  # nothing written, nothing sent
    assert Outbox(tmp_path, "t1").last_round_id() == locked and controller.lockouts == [locked]
    assert link.offline
    controller.unreachable = True
    with pytest.raises(ControllerUnreachable):  # a locked round is still reported, offline
        await agent.settle(locked, SettleReport({}))
    assert agent.outbox_depth == 1 and agent.reports[("settle", "unreachable")] == 1
    assert [r["id"] for r in Outbox(tmp_path, "t1").pending()] == [f"{locked}:settle"]
    controller.unreachable = False
    assert await agent.recover() == 1  # the outbox sends it again; the answer reopens
    assert not link.check() and agent.outbox_depth == 0
    await agent.lockout(
        opened, [PlacedWager(2, WagerKind.PROGRESSIVE, 100)]
    )  # the open round locks out once the table is open
    assert controller.lockouts == [locked, opened]
    assert agent.reports[("settle", "acknowledged")] == 1
    assert agent.reports[("lockout", "acknowledged")] == 2


async def test_agent_metrics_exist_from_zero_and_follow_the_agent(tmp_path: Path) -> None:
    clock = Clock()
    link = Link(2, table_id="t1", clock=clock)
    controller = Controller(link)
    outbox = Outbox(tmp_path, "t1")
    outbox.put("7:settle", "settle", 7, SettleReport({}).to_data())  # left by a crash
    agent = TableAgent("t1", controller, outbox)
    registry = agent_registry(agent)

    def sample(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"table": "t1", **labels})

    for phase in PHASES:
        for outcome in OUTCOMES:
            assert sample("jackpot_agent_reports_total", phase=phase, outcome=outcome) == 0
    assert sample("jackpot_agent_outbox_depth") == 1
    assert sample("jackpot_agent_progressive_offline") == 0
    assert sample("jackpot_agent_offline_periods_total") == 0
    assert sample("jackpot_agent_offline_after_seconds") == 2
    assert registry.get_sample_value("process_open_fds") is not None
    assert "python_info" in {metric.name for metric in registry.collect()}
    clock.now += 2.5
    link.check()
    assert sample("jackpot_agent_progressive_offline") == 1
    assert sample("jackpot_agent_seconds_since_last_answer") == 2.5
    assert sample("jackpot_agent_offline_periods_total") == 1
    controller.refuse = True
    assert await agent.recover() == 1  # refused: answered, final
    assert sample("jackpot_agent_reports_total", phase="settle", outcome="refused") == 1
    assert sample("jackpot_agent_outbox_depth") == 0
    assert sample("jackpot_agent_progressive_offline") == 0
    seconds = sample("jackpot_agent_seconds_since_last_ack")
    assert seconds is not None and seconds >= 0


async def test_the_metrics_endpoint_serves_and_names_a_port_in_use(tmp_path: Path) -> None:
    agent = TableAgent("t1", Controller(Link(2, table_id="t1")))
    endpoint = MetricsEndpoint(agent, "127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{endpoint.port}/metrics"
        text = await asyncio.to_thread(_read, url)
        assert 'jackpot_agent_progressive_offline{table="t1"} 0.0' in text
        with pytest.raises(OSError):
            MetricsEndpoint(agent, "127.0.0.1", endpoint.port)
    finally:
        endpoint.close()
    with socket.socket() as sock:  # nothing listens on the port any more
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", endpoint.port))


def _read(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return str(reply.read().decode())


def args(*extra: str) -> argparse.Namespace:
    return _parser().parse_args(["--table-id", "t1", "--controller", "x:1", "--sim", *extra])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--offline-after", "0"), "--offline-after must be 1 to 3600 seconds, not 0.0"),
        (("--offline-after", "nan"), "--offline-after must be 1 to 3600 seconds, not nan"),
        (("--offline-after", "4000"), "--offline-after must be 1 to 3600 seconds, not 4000.0"),
        (
            ("--offline-after", "60", "--retry-for", "60"),
            "--offline-after 60 must be below --retry-for 60: the table would give up before "
            "it says PROGRESSIVE OFFLINE",
        ),
        (("--retry-for", "inf"), "--retry-for must be a positive number of seconds, not inf"),
        (("--retry-for", "0"), "--retry-for must be a positive number of seconds, not 0.0"),
        (("--metrics-port", "0"), "--metrics-port must be 1 to 65535, not 0"),
        (("--metrics-port", "65536"), "--metrics-port must be 1 to 65535, not 65536"),
        (("--pace", "nan"), "--rounds and --pace must be >= 0"),
    ],
)
def test_link_options_are_checked(flags: tuple[str, ...], message: str) -> None:
    assert _check(args(*flags)) == message


def test_link_option_defaults() -> None:
    parsed = args()
    assert (parsed.offline_after, parsed.retry_for, parsed.metrics_port) == (30.0, 300.0, None)
    assert parsed.metrics_host == "127.0.0.1"
    assert _check(args("--offline-after", "2", "--metrics-port", "9103")) is None

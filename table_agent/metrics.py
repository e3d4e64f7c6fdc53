"""The agent's Prometheus metrics (``table-agent --metrics-port``), read at each scrape.

Every series carries ``table`` (one agent per table, so it is bounded by the floor):

* ``jackpot_agent_progressive_offline`` (gauge, 1 or 0): the table is in PROGRESSIVE OFFLINE
  (:mod:`table_agent.link`) and takes no side wagers.
* ``jackpot_agent_seconds_since_last_answer`` (gauge): since the controller last answered
  anything; the table goes offline when it passes ``jackpot_agent_offline_after_seconds``.
* ``jackpot_agent_outbox_depth`` (gauge): reports written but not yet answered.
* ``jackpot_agent_seconds_since_last_ack`` (gauge): since the controller last acknowledged a
  report (since the agent started, if none yet). Ages are computed by the agent at each scrape
  from its monotonic clock, not exported as timestamps, so that an agent's wrong wall clock
  cannot fake or hide a stuck outbox, and a dashboard or an alert uses them as they are.
* ``jackpot_agent_reports_total{phase,outcome}`` (counter): reports by phase (lockout, settle,
  void) and outcome (acknowledged, refused, unreachable), every pair from zero.
* ``jackpot_agent_offline_periods_total`` (counter): times the table entered PROGRESSIVE
  OFFLINE (a short outage between two scrapes still shows here).
* the process and Python collectors (``process_*``, ``python_*``).
"""

from __future__ import annotations

from collections.abc import Iterable
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    GC_COLLECTOR,
    CollectorRegistry,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from table_agent.table import TableAgent


class AgentCollector(Collector):
    """The metrics of one :class:`TableAgent`, computed when Prometheus scrapes."""

    def __init__(self, agent: TableAgent) -> None:
        self._agent = agent

    def collect(self) -> Iterable[Metric]:
        agent, link = self._agent, self._agent.link
        table = [agent.table_id]

        def gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, documentation, labels=["table"])
            family.add_metric(table, value)
            return family

        yield gauge(
            "jackpot_agent_progressive_offline",
            "1 while the table is PROGRESSIVE OFFLINE (no side wagers), else 0.",
            1 if link.offline else 0,
        )
        yield gauge(
            "jackpot_agent_seconds_since_last_answer",
            "Seconds since the controller last answered this agent.",
            link.silent_s(),
        )
        yield gauge(
            "jackpot_agent_offline_after_seconds",
            "Seconds without an answer after which the table is PROGRESSIVE OFFLINE.",
            link.offline_after_s,
        )
        yield gauge(
            "jackpot_agent_outbox_depth",
            "Reports written to the outbox and not yet answered by the controller.",
            agent.outbox_depth,
        )
        yield gauge(
            "jackpot_agent_seconds_since_last_ack",
            "Seconds since the controller last acknowledged a report (or the agent started).",
            agent.seconds_since_last_ack(),
        )
        reports = CounterMetricFamily(
            "jackpot_agent_reports",
            "Reports by phase and outcome (acknowledged, refused, unreachable).",
            labels=["table", "phase", "outcome"],
        )
        for (phase, outcome), count in sorted(agent.reports.items()):
            reports.add_metric([agent.table_id, phase, outcome], count)
        yield reports
        periods = CounterMetricFamily(
            "jackpot_agent_offline_periods",
            "Times the table entered PROGRESSIVE OFFLINE.",
            labels=["table"],
        )
        periods.add_metric(table, link.offline_periods)
        yield periods


def agent_registry(agent: TableAgent) -> CollectorRegistry:
    """A registry with the agent's metrics and the process and Python collectors."""
    registry = CollectorRegistry()
    registry.register(AgentCollector(agent))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    registry.register(GC_COLLECTOR)
    return registry


class MetricsEndpoint:
    """``/metrics`` of ``agent`` over plain HTTP on ``host:port``, served from a thread.

    Raises OSError when the port cannot be bound (in use, or not an address of this host).
    """

    def __init__(self, agent: TableAgent, host: str, port: int) -> None:
        self._server: WSGIServer
        self._server, self._thread = start_http_server(port, host, agent_registry(agent))
        self.port = int(self._server.server_port)

    def close(self) -> None:
        """Stop serving and close the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

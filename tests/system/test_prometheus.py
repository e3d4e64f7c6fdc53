"""The dashboards and alerts against a real Prometheus scraping a real controller and agent.

Debian's ``prometheus`` (the package .ci/run installs for promtool) scrapes the controller's
metrics and a table agent's (``table-agent --metrics-port``) every second with the rules of
deploy/ loaded. After a scripted scenario — rounds with a straight flush and a royal flush
(hits), a void, a table naming another table, a Redis stall long enough for calls to fail, and
a table agent whose controller stops (SIGSTOP) long enough for the table to go PROGRESSIVE
OFFLINE, then continues — every dashboard query and every vector selector of every alert must
return data through Prometheus's HTTP API, the panels must read what happened (both hits, though
they were played before Prometheus first scraped; award amounts by kind; meters in dollars; the
royal flush's expected frequency), and the alerts the scenario provokes must hold:
calls failed (JackpotGrpcErrorRatioHigh), jackpots wait (JackpotPendingJackpotsWaiting), a
certificate was refused (JackpotAccessDenied), and, while the controller was stopped, the table
was offline (JackpotTableProgressiveOffline's expression). This is what catches a label value
a process does not export (``grpc_code="UNAVAILABLE"`` against ``"Unavailable"``) or a counter
that appears only at its first increment.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from controller.testing import ControllerProcess, RedisServer, free_port, stop_process
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.deploy.test_deploy_files import (
    DASHBOARDS,
    RULES,
    alert_rules,
    dashboard_exprs,
    load_json,
)

PROMETHEUS = shutil.which("prometheus")
REQUIRED = os.environ.get("JACKPOT_REQUIRE_PROMETHEUS") == "1"  # set by .ci/run

_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_RANGE = re.compile(r"\[\s*\d+[smhdwy][^\]]*\]")  # a range, not a [.] in a regex
_SELECTOR = re.compile(r"(?<![\w.$])([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?(\s*\()?")
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})

pytestmark = pytest.mark.skipif(
    PROMETHEUS is None and not REQUIRED,
    reason="prometheus not on PATH (Debian: apt-get install prometheus; .ci/run installs it)",
)


def selectors(expr: str) -> list[str]:
    """The vector selectors of an expression (``name{matchers}``), functions left out."""
    text = _RANGE.sub(" ", _GROUPING.sub(" ", expr))
    return [
        name + (matchers or "")
        for name, matchers, call in _SELECTOR.findall(text)
        if not call and name.lower() not in _KEYWORDS
    ]


def test_selectors_of_an_expression() -> None:
    expr = (
        'sum by (le) (rate(grpc_server_handling_seconds_bucket{grpc_method="Settle"}[5m]))'
        ' > 0.25 and on (meter) up{grpc_service=~"jackpot[.]v1[.].+"} offset 5m'
    )
    assert selectors(expr) == [
        'grpc_server_handling_seconds_bucket{grpc_method="Settle"}',
        'up{grpc_service=~"jackpot[.]v1[.].+"}',
    ]


class Prometheus:
    """A real Prometheus on a free loopback port with the rules of deploy/ loaded, scraping
    one target per job, sending firing alerts to ``alertmanager`` (host:port) when given."""

    def __init__(self, work: Path, targets: dict[str, str], alertmanager: str = "") -> None:
        self.port = free_port()
        config: dict[str, Any] = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": [target]}]}
                for job, target in targets.items()
            ],
        }
        if alertmanager:
            config["alerting"] = {
                "alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]
            }
        work.mkdir(parents=True, exist_ok=True)
        (work / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
        self.log = work / "prometheus.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    PROMETHEUS or "prometheus",
                    f"--config.file={work / 'prometheus.yml'}",
                    f"--storage.tsdb.path={work / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The result of an instant query (raises on a PromQL error)."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr}
        )
        with urllib.request.urlopen(url, timeout=10) as reply:
            body = json.loads(reply.read())
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def wait_for(self, expr: str, timeout_s: float = 60) -> list[dict[str, Any]]:
        """Poll ``expr`` until it returns data (bounded)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                found = self.query(expr)
                if found:
                    return found
            except OSError:
                pass  # not listening yet
            time.sleep(0.5)
        tail = self.log.read_text(errors="replace")[-2000:]
        raise AssertionError(f"no data for {expr} within {timeout_s}s\n{tail}")

    def stop(self) -> None:
        stop_process(self.process)


def grafana_query(expr: str) -> str:
    """A panel's query as Grafana sends it, every variable on All, a 10-minute range."""
    for variable in ("$meter", "$table", "$link_group"):
        expr = expr.replace(variable, ".+")
    return (
        expr.replace("$__range", "10m")
        .replace("$__rate_interval", "1m")
        .replace("$__interval", "15s")
    )


def _values(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def _check_panel_values(panels: dict[str, list[dict[str, Any]]]) -> None:
    """What the user must read after the scenario: both hits, played before Prometheus first
    scraped; the meters' awards labelled by kind; meters and their reset in dollars."""
    hits = _values(panels["Hits by hand/A"], "line")
    assert hits.get("royal_flush", 0) >= 1 and hits.get("straight_flush", 0) >= 1, hits
    amounts = {
        (r["metric"]["wager"], r["metric"]["kind"]): float(r["value"][1])
        for r in panels["Award amounts by wager and award kind ($)/A"]
    }
    assert amounts[("progressive", "percent_of_meter")] >= 10_000, amounts  # dollars: a reset
    assert all(kind for _, kind in amounts), "every amount names its award kind"
    meter = panels["Meter value ($) against reset and ceiling/A"]
    reset = panels["Meter value ($) against reset and ceiling/B"]
    assert {r["metric"]["meter"] for r in meter} == {r["metric"]["meter"] for r in reset}
    for r in reset:
        assert float(r["value"][1]) == 10_000, r  # the rules' reset: $10,000, not 1,000,000
    (ceiling,) = panels["Meter value ($) against reset and ceiling/C"]
    assert float(ceiling["value"][1]) == CEILING_CENTS / 100
    expected = _values(
        panels["Hit frequency: one hit in N wagers, observed and expected/B"], "line"
    )
    assert round(expected["royal_flush"]) == 649_740, expected  # 2,598,960 / 4 hands
    handle = {
        (r["metric"]["table"], r["metric"]["wager"]): float(r["value"][1])
        for r in panels["Handle ($) by table and wager kind/A"]
    }
    assert handle[("cs-2", "progressive")] >= 2, handle  # the two hits' $1 wagers at least
    ages = panels["Oldest pending jackpot's age/A"]
    assert ages and all(0 < float(r["value"][1]) < 3600 for r in ages), ages


def _agent_command(controller: ControllerProcess, table_id: str, *args: str) -> list[str]:
    command = [sys.executable, "-m", "table_agent.cli", "--table-id", table_id]
    command += ["--controller", controller.target, "--sim", "--quiet"]
    return [*command, *controller.client_args("table", table_id), *args]


def _agent(controller: ControllerProcess, table_id: str, *args: str) -> None:
    command = _agent_command(controller, table_id, *args)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _offline_phase(
    prometheus: Prometheus, controller: ControllerProcess, agent: subprocess.Popen[bytes]
) -> None:
    """The playing agent's controller stops: Prometheus sees the table PROGRESSIVE OFFLINE
    (the alert's expression holds), then online again once the controller continues."""
    prometheus.wait_for(
        'jackpot_agent_reports_total{phase="settle",outcome="acknowledged"} > 0'
        " and on (table) jackpot_agent_progressive_offline == 0"
    )
    offline = next(
        str(r["expr"]) for r in alert_rules() if r["alert"] == "JackpotTableProgressiveOffline"
    )
    os.kill(controller.pid, signal.SIGSTOP)
    try:
        (found,) = prometheus.wait_for(offline, 60)
        assert found["metric"] == {"table": "cs-2"}
    finally:
        os.kill(controller.pid, signal.SIGCONT)
    prometheus.wait_for(
        "jackpot_agent_progressive_offline == 0 and jackpot_agent_offline_periods_total > 0", 60
    )
    assert agent.poll() is None, "the agent plays on"


CEILING_CENTS = 5_000_000  # $50,000


def _set_ceiling(controller: ControllerProcess) -> None:
    """An operator gives cs-main a ceiling (the Rules Submission has none), in maintenance."""
    files = controller.pki.client("operator", "ops") if controller.pki else None
    with tls.channel(controller.target, files) as channel:
        admin = pb_grpc.AdminServiceStub(channel)
        maintenance = pb.MaintenanceRequest(link_group_id="floor", reason="a ceiling")
        admin.EnterMaintenance(maintenance, timeout=10)
        change = pb.UpdateMeterRequest(
            meter_id="cs-main", ceiling_cents=CEILING_CENTS, reason="Rules Submission rev 2"
        )
        admin.UpdateMeter(change, timeout=10)
        admin.LeaveMaintenance(maintenance, timeout=10)


def _hits(controller: ControllerProcess, work: Path) -> None:
    """A scripted royal flush and straight flush: two hits of the progressive meter."""
    script = work / "hits.json"
    script.write_text(json.dumps({"hands": {"6": "9H TH JH QH KH", "2": "AS KS QS JS TS"}}))
    _agent(controller, "cs-2", "--rounds", "0", "--script", str(script))


def _scenario(redis: RedisServer, controller: ControllerProcess) -> None:
    """Rounds with a void, a table naming another table, and Lockouts that fail while Redis
    is stopped."""
    _agent(controller, "cs-1", "--rounds", "20", "--void-percent", "20")
    files = controller.pki.client("table", "cs-3") if controller.pki else None
    with tls.channel(controller.target, files) as channel:
        stub = pb_grpc.TableServiceStub(channel)
        with pytest.raises(grpc.RpcError):  # cs-3's certificate naming cs-1: refused
            stub.GetTable(pb.GetTableRequest(table_id="cs-1"), timeout=5)
        assert redis.process is not None
        redis.process.send_signal(signal.SIGSTOP)  # Redis stalls beyond the call deadlines
        try:
            for round_id in range(1, 4):
                request = pb.LockoutRequest(table_id="cs-3", round_id=round_id)
                with pytest.raises(grpc.RpcError):
                    stub.Lockout(request, timeout=8)
        finally:
            redis.process.send_signal(signal.SIGCONT)


@pytest.mark.slow
def test_every_dashboard_query_and_alert_selector_returns_data(
    system: tuple[RedisServer, ControllerProcess], tmp_path: Path
) -> None:
    redis, controller = system
    agent_port = free_port()
    targets = {
        "jackpot-controller": f"127.0.0.1:{controller.metrics_port}",
        "jackpot-agent": f"127.0.0.1:{agent_port}",
    }
    # The hits happen before Prometheus first scrapes (as when tables play at once after a
    # start): the hits panel must count them all the same.
    _set_ceiling(controller)
    _hits(controller, tmp_path)
    prometheus = Prometheus(tmp_path / "prometheus", targets)
    agent: subprocess.Popen[bytes] | None = None
    try:
        prometheus.wait_for('up{job="jackpot-controller"} == 1')
        _scenario(redis, controller)
        # A few more scrapes after the scenario, and Redis answering again.
        prometheus.wait_for("jackpot_redis_up == 1 and jackpot_redis_up offset 3s == 0", 60)
        command = _agent_command(controller, "cs-2", "--rounds", "100000", "--pace", "0.2")
        command += ["--offline-after", "2", "--retry-for", "60", "--metrics-port", str(agent_port)]
        command += ["--state-dir", str(tmp_path / "agent")]
        with (tmp_path / "agent.log").open("wb") as log:
            agent = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        _offline_phase(prometheus, controller, agent)
        time.sleep(3)
        empty = []
        panels: dict[str, list[dict[str, Any]]] = {}
        for path in DASHBOARDS:
            for where, expr in dashboard_exprs(load_json(path)):
                query = grafana_query(expr)
                panels[where] = prometheus.query(query)
                if not panels[where]:
                    empty.append(f"{path.name}: {where}: {query}")
        for rule in alert_rules():
            for selector in selectors(str(rule["expr"])):
                if not prometheus.query(selector):
                    empty.append(f"{rule['alert']}: {selector}")
        assert not empty, "queries without data:\n" + "\n".join(empty)
        _check_panel_values(panels)
        for alert in ("JackpotGrpcErrorRatioHigh", "JackpotPendingJackpotsWaiting"):
            expr = next(str(r["expr"]) for r in alert_rules() if r["alert"] == alert)
            assert prometheus.query(expr), f"{alert} does not hold after the scenario"
        denied = next(str(r["expr"]) for r in alert_rules() if r["alert"] == "JackpotAccessDenied")
        assert prometheus.query(denied)[0]["metric"]["reason"] == "other_table"
    finally:
        stop_process(agent)
        prometheus.stop()

"""Alerting end to end, and the rules' unit tests held to what the processes export.

A real controller and redis-server, a real Prometheus (Debian ``prometheus``) with the rules of
deploy/ loaded, a real Alertmanager (Debian ``prometheus-alertmanager``) running the shipped
routing tree of deploy/alertmanager/alertmanager.yml - only its receivers' URLs point at a
webhook receiver on loopback in this test, and its waits are seconds - and two real alerts:
a table's certificate naming another table (JackpotAccessDenied, ``warning``) must reach the
``ticket`` receiver, and a link group whose state Redis lost (JackpotLinkGroupNotServing,
``critical``) the ``page`` receiver, each with its published runbook_url.

And the promtool unit tests (jackpot.rules.test.yml) feed series named and labelled exactly as
the controller and the table agent export them: every input series' name and label names, and
its values of the labels the processes fix (status codes, methods, roles, reasons, buckets),
are checked against a real controller's /metrics and the agent's exposition.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from controller.testing import ControllerProcess, RedisServer, free_port, stop_process
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.metrics import agent_registry
from table_agent.table import TableAgent
from tests.deploy.test_deploy_files import (
    ALERTMANAGER_CONFIG,
    PUBLISHED_RUNBOOK,
    RULE_TESTS,
    SCRAPE_LABELS,
    _Unconnected,
    load_yaml,
)
from tests.system.test_prometheus import PROMETHEUS, REQUIRED, Prometheus

ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")

# Series the scenario here does not provoke, whose exact labels another test proves.
PROVEN_ELSEWHERE = {
    # tests/integration/test_access.py::test_a_revoked_certificate_is_refused_without_a_restart
    (
        "jackpot_access_denied_total",
        (("grpc_method", "GetTable"), ("reason", "revoked"), ("role", "none")),
    ),
    # tests/integration/test_bounded.py::test_certificate_expiry_is_exported_for_the_series_the_
    # alerts_read (a display's certificate, seen at its first call)
    (
        "jackpot_certificate_expiry_timestamp_seconds",
        (("certificate", "client"), ("role", "display")),
    ),
}

# Labels whose values the rules' tests choose freely (names of things a casino configures, and
# the scrape's own); every other label's value is fixed by the processes and must match.
FREE_LABELS = SCRAPE_LABELS | {"meter", "table", "link_group", "line", "wager", "game", "name"}

needs_alertmanager = pytest.mark.skipif(
    (PROMETHEUS is None or ALERTMANAGER is None) and not REQUIRED,
    reason="prometheus or prometheus-alertmanager not on PATH (Debian: apt-get install "
    "prometheus prometheus-alertmanager; .ci/run installs both)",
)


class Webhook:
    """An HTTP server on loopback that keeps every Alertmanager notification it receives, by
    the path it was posted to (the receiver's name)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with hook._lock:
                    hook.received.append((self.path.strip("/"), json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def alerts(self) -> list[tuple[str, dict[str, Any]]]:
        """(receiver, alert) of every alert notified so far."""
        with self._lock:
            return [(path, alert) for path, body in self.received for alert in body["alerts"]]

    def wait_for(self, alertname: str, timeout_s: float = 120) -> tuple[str, dict[str, Any]]:
        """The first notification of ``alertname`` firing (bounded)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for receiver, alert in self.alerts():
                if alert["labels"]["alertname"] == alertname and alert["status"] == "firing":
                    return receiver, alert
            time.sleep(0.5)
        raise AssertionError(f"{alertname} never notified; received {self.alerts()}")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _quicken(route: dict[str, Any]) -> None:
    """Seconds instead of minutes for every wait of a route and its children."""
    for key, value in (("group_wait", "1s"), ("group_interval", "1s"), ("repeat_interval", "1h")):
        if key in route or "routes" in route:
            route[key] = value
    for child in route.get("routes", []):
        _quicken(child)


def alertmanager_test_config(webhook_url: str) -> dict[str, Any]:
    """The shipped configuration with each receiver's webhook posting to ``webhook_url/<its
    name>`` and the waits in seconds: the routing tree and the inhibitions unchanged."""
    config: dict[str, Any] = load_yaml(ALERTMANAGER_CONFIG)
    for receiver in config["receivers"]:
        hooks = receiver["webhook_configs"]
        assert hooks, f"receiver {receiver['name']} has no webhook"
        for hook in hooks:
            hook["url"] = f"{webhook_url}/{receiver['name']}"
    _quicken(config["route"])
    return config


def test_the_test_configuration_keeps_the_shipped_routes() -> None:
    shipped = load_yaml(ALERTMANAGER_CONFIG)
    config = alertmanager_test_config("http://127.0.0.1:1")

    def tree(route: dict[str, Any]) -> Any:
        return (
            route.get("receiver"),
            route.get("matchers"),
            route.get("group_by"),
            [tree(child) for child in route.get("routes", [])],
        )

    assert tree(config["route"]) == tree(shipped["route"])
    assert config["inhibit_rules"] == shipped["inhibit_rules"]
    assert [r["name"] for r in config["receivers"]] == [r["name"] for r in shipped["receivers"]]
    assert config["route"]["group_wait"] == "1s"


class Alertmanager:
    """A real Alertmanager on a free loopback port (no cluster), with ``config``."""

    def __init__(self, work: Path, config: dict[str, Any]) -> None:
        self.port = free_port()
        work.mkdir(parents=True, exist_ok=True)
        (work / "alertmanager.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
        self.log = work / "alertmanager.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    ALERTMANAGER or "prometheus-alertmanager",
                    f"--config.file={work / 'alertmanager.yml'}",
                    f"--storage.path={work / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--cluster.listen-address=",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text(errors="replace")
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.port}/-/ready", timeout=5
                ) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise AssertionError("alertmanager not ready\n" + self.log.read_text(errors="replace"))

    def stop(self) -> None:
        stop_process(self.process)


def _refused_call(controller: ControllerProcess, *, lockout: bool = False) -> None:
    """cs-3's certificate asks for cs-1's table (and locks out one of its rounds): refused
    (JackpotAccessDenied, reason other_table)."""
    files = controller.pki.client("table", "cs-3") if controller.pki else None
    with tls.channel(controller.target, files) as channel:
        stub = pb_grpc.TableServiceStub(channel)
        with pytest.raises(grpc.RpcError):
            stub.GetTable(pb.GetTableRequest(table_id="cs-1"), timeout=10)
        if lockout:
            with pytest.raises(grpc.RpcError):
                stub.Lockout(pb.LockoutRequest(table_id="cs-1", round_id=1), timeout=10)


@needs_alertmanager
@pytest.mark.slow
def test_alerts_reach_the_receiver_their_severity_names(
    system: tuple[RedisServer, ControllerProcess], tmp_path: Path
) -> None:
    server, controller = system
    webhook = Webhook()
    alertmanager = Alertmanager(tmp_path / "alertmanager", alertmanager_test_config(webhook.url))
    prometheus: Prometheus | None = None
    try:
        alertmanager.wait_ready()
        prometheus = Prometheus(
            tmp_path / "prometheus",
            {"jackpot-controller": f"127.0.0.1:{controller.metrics_port}"},
            f"127.0.0.1:{alertmanager.port}",
        )
        prometheus.wait_for('up{job="jackpot-controller"} == 1')
        prometheus.wait_for("min(jackpot_link_group_serving) == 1")
        _refused_call(controller)
        receiver, alert = webhook.wait_for("JackpotAccessDenied")
        assert receiver == "ticket", alert
        assert alert["labels"]["severity"] == "warning"
        assert alert["labels"]["reason"] == "other_table"
        assert alert["annotations"]["runbook_url"] == f"{PUBLISHED_RUNBOOK}#jackpotaccessdenied"
        # Redis loses the link group's state: the controller stops serving it at once.
        with redis.Redis.from_url(server.url) as client:
            client.flushall()
        receiver, alert = webhook.wait_for("JackpotLinkGroupNotServing")
        assert receiver == "page", alert
        assert alert["labels"]["severity"] == "critical"
        assert alert["labels"]["link_group"] == "floor"
        url = alert["annotations"]["runbook_url"]
        assert url == f"{PUBLISHED_RUNBOOK}#jackpotlinkgroupnotserving"
        routed = {(receiver, a["labels"]["alertname"]) for receiver, a in webhook.alerts()}
        assert ("page", "JackpotAccessDenied") not in routed
        assert ("ticket", "JackpotLinkGroupNotServing") not in routed
    finally:
        if prometheus is not None:
            prometheus.stop()
        alertmanager.stop()
        webhook.close()


# --- the rules' unit tests against the exposition ------------------------------------------------


def _input_series() -> list[tuple[str, dict[str, str]]]:
    """(name, labels) of every input series of jackpot.rules.test.yml."""
    found = []
    for test in load_yaml(RULE_TESTS)["tests"]:
        for series in test["input_series"]:
            (family,) = text_string_to_metric_families(f"{series['series']} 0\n")
            (sample,) = family.samples
            found.append((sample.name, dict(sample.labels)))
    return found


def _exposed(text: str) -> dict[str, list[dict[str, str]]]:
    """Sample name -> the label sets of its samples."""
    exposed: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            exposed.setdefault(sample.name, []).append(dict(sample.labels))
    return exposed


@pytest.mark.skipif(PROMETHEUS is None and not REQUIRED, reason="the rules' tests need promtool")
def test_rule_tests_use_series_as_exported(system: tuple[RedisServer, ControllerProcess]) -> None:
    _, controller = system
    _refused_call(controller, lockout=True)  # jackpot_access_denied_total: from a refusal
    url = f"http://127.0.0.1:{controller.metrics_port}/metrics"
    deadline = time.monotonic() + 60
    exposed: dict[str, list[dict[str, str]]] = {}
    while time.monotonic() < deadline:  # the refresh reads Redis every 2 s
        with urllib.request.urlopen(url, timeout=10) as reply:
            exposed = _exposed(reply.read().decode())
        if "jackpot_access_denied_total" in exposed and "jackpot_meter_cents" in exposed:
            break
        time.sleep(0.5)
    agent = TableAgent("cs-1", _Unconnected())
    exposed |= _exposed(generate_latest(agent_registry(agent)).decode())
    problems = []
    for name, labels in _input_series():
        if name == "up":  # made by Prometheus for every target
            continue
        wanted = {k: v for k, v in labels.items() if k not in SCRAPE_LABELS}
        samples = exposed.get(name)
        if samples is None:
            problems.append(f"{name}: not exported")
            continue
        names = [set(sample) for sample in samples]
        if set(wanted) not in names:
            problems.append(f"{name}: labels {sorted(wanted)}, exported {sorted(names[0])}")
            continue
        fixed = {k: v for k, v in wanted.items() if k not in FREE_LABELS}
        if (name, tuple(sorted(fixed.items()))) in PROVEN_ELSEWHERE:
            continue
        if not any(fixed.items() <= sample.items() for sample in samples):
            problems.append(f"{name}: no exported sample has {fixed}")
    assert not problems, "\n".join(problems)


def test_input_series_parser() -> None:
    series = _input_series()
    assert ("jackpot_redis_up", {"job": "jackpot-controller", "instance": "c1:9102"}) in series
    assert any(name == "grpc_server_handling_seconds_bucket" for name, _ in series)

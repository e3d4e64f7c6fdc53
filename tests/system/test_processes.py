"""The whole system as processes: Redis, the controller (mutual TLS), three table agents,
jackpotctl."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.testing import ControllerProcess, RedisServer, TestPKI, free_port
from tests.helpers import CARIBBEAN_RULES as RULES

ROUNDS_PER_TABLE = 100
TABLES = ("cs-1", "cs-2", "cs-3")


def run(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def system(tmp_path: Path, pki: TestPKI) -> Iterator[tuple[str, ControllerProcess]]:
    with RedisServer(tmp_path / "redis") as redis:
        # the example Rules Submission: link group floor, meter cs-main, tables cs-1..cs-3
        log = tmp_path / "controller.log"
        unlimited = ("--table-calls-per-second", "0")  # simulated tables play fast
        with ControllerProcess(
            redis.url, log, pki=pki, rules=RULES, extra_args=unlimited
        ) as controller:
            yield redis.url, controller


@pytest.mark.slow
def test_three_agents_play_hundreds_of_rounds_then_the_audit_is_ok(
    system: tuple[str, ControllerProcess], tmp_path: Path
) -> None:
    redis_url, controller = system
    target, metrics_port = controller.target, controller.metrics_port
    agents = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "table_agent.cli",
                "--table-id",
                table_id,
                "--controller",
                target,
                *controller.client_args("table", table_id),
                "--sim",
                "--rounds",
                str(ROUNDS_PER_TABLE),
                "--void-percent",
                "3",
                "--quiet",
                "--state-dir",
                str(tmp_path / "agents"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for table_id in TABLES
    ]
    outputs = [agent.communicate(timeout=240)[0] for agent in agents]
    for agent, output in zip(agents, outputs, strict=True):
        assert agent.returncode == 0, output
        assert f"{ROUNDS_PER_TABLE} rounds" in output

    audit = run("controller.ctl.main", "audit", "verify", "--redis", redis_url)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert audit.stdout.startswith("audit: OK (1 link groups, 1 meters")

    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        metrics = reply.read().decode()
    assert 'jackpot_meter_cents{meter="cs-main"}' in metrics
    assert 'grpc_server_handled_total{grpc_code="OK",grpc_method="Settle"' in metrics
    # The process runs on uvloop (the controller extra installs it).
    assert "event loop: uvloop" in controller.log_tail(200_000)


def test_controller_refuses_to_serve_without_insecure_or_tls() -> None:
    result = run("controller.runtime.cli", "serve")
    assert result.returncode == 2
    assert "mutual TLS needs --tls-cert, --tls-key, --client-ca" in result.stderr
    result = run("controller.runtime.cli", "serve", "--insecure", "--listen", "0.0.0.0:0")
    assert result.returncode == 2
    assert "--insecure is for development on a loopback address, not '0.0.0.0'" in result.stderr


def test_a_plaintext_client_gets_nothing_from_a_tls_controller(
    system: tuple[str, ControllerProcess],
) -> None:
    _, controller = system
    plaintext = run(
        "controller.ctl.main", "--controller", controller.target, "--insecure", "meters", "list"
    )
    assert plaintext.returncode == 1 and "this controller requires TLS" in plaintext.stderr
    no_certificate = run("controller.ctl.main", "--controller", controller.target, "meters", "list")
    assert no_certificate.returncode == 1
    assert "give --ca, --cert, --key" in no_certificate.stderr
    auditor = controller.client_args("auditor", "lab")
    listed = run(
        "controller.ctl.main", "--controller", controller.target, *auditor, "meters", "list"
    )
    assert listed.returncode == 0 and "cs-main (floor, caribbean-stud)" in listed.stdout
    created = run(
        "controller.ctl.main",
        "--controller",
        controller.target,
        *auditor,
        "link-groups",
        "create",
        "annex",
    )
    assert created.returncode == 1
    assert "PERMISSION_DENIED: jackpot://auditor/lab may not call CreateLinkGroup" in (
        created.stderr
    )


def test_controller_reports_an_unreachable_redis(tmp_path: Path) -> None:
    result = run(
        "controller.runtime.cli",
        "serve",
        "--insecure",
        "--listen",
        "127.0.0.1:0",
        "--metrics-port",
        "-1",
        "--redis",
        f"redis://127.0.0.1:{free_port()}/0",
    )
    assert result.returncode == 1
    assert "Redis is unreachable" in result.stderr


def test_agent_usage_errors() -> None:
    result = run("table_agent.cli", "--table-id", "t", "--controller", "127.0.0.1:1")
    assert result.returncode == 2 and "pass --sim" in result.stderr
    result = run(
        "table_agent.cli", "--table-id", "t", "--controller", "127.0.0.1:1", "--sim", "--seats", "8"
    )
    assert result.returncode == 2 and "§ 639a.2(a)" in result.stderr


def test_controller_refuses_an_invalid_rules_submission(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[meters]]\nid = "m"\nlink_group = "g"\ngame = "caribbean-stud"\n'
        'reset = "5000"\nrate_percent = "10"\n'
    )
    result = run("controller.runtime.cli", "serve", "--insecure", "--rules", str(rules))
    assert result.returncode == 2
    assert "below the $10,000.00 minimum for Caribbean Stud Poker (§ 639a.12(d)(3))" in (
        result.stderr
    )


def test_a_second_controller_on_a_port_in_use_does_not_start(
    system: tuple[str, ControllerProcess], tmp_path: Path, pki: TestPKI
) -> None:
    redis_url, running = system
    files = pki.server()
    tls_args = ["--tls-cert", str(files.cert), "--tls-key", str(files.key)]
    tls_args += ["--client-ca", str(files.client_ca)]
    for listen, metrics, message in (
        (running.target, str(free_port()), f"cannot listen on {running.target}"),
        (
            f"127.0.0.1:{free_port()}",
            str(running.metrics_port),
            f"cannot serve metrics on port {running.metrics_port}",
        ),
    ):
        second = run(
            "controller.runtime.cli",
            "serve",
            "--listen",
            listen,
            "--metrics-port",
            metrics,
            "--redis",
            redis_url,
            *tls_args,
        )
        assert second.returncode == 1, second.stderr
        assert message in second.stderr

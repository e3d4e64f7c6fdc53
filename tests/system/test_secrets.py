"""Secrets as processes: the Redis password from a file or the environment, never in the
command line, the log, the metrics or a client's error; a wrong one is said plainly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from controller.testing import ControllerProcess, RedisServer, TestPKI
from tests.helpers import CARIBBEAN_RULES as RULES

PASSWORD = "correct-horse-battery-staple-42"


def _ctl(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.ctl.main", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_the_redis_password_comes_from_a_file_and_is_never_shown(
    tmp_path: Path, pki: TestPKI
) -> None:
    secret = tmp_path / "redis-password"
    secret.write_text(PASSWORD + "\n")
    with RedisServer(tmp_path / "redis", extra_args=("--requirepass", PASSWORD)) as redis:
        controller = ControllerProcess(
            redis.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=RULES,
            extra_args=("--redis-password-file", str(secret)),
        )
        with controller:
            assert PASSWORD not in " ".join(controller.security_args() + controller.extra_args)
            auditor = controller.client_args("auditor", "lab")
            listed = _ctl("--controller", controller.target, *auditor, "meters", "list")
            assert listed.returncode == 0 and "cs-main" in listed.stdout
            url = f"http://127.0.0.1:{controller.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as reply:
                assert PASSWORD not in reply.read().decode()
            audit = _ctl(
                "audit", "verify", "--redis", redis.url, env={"JACKPOT_REDIS_PASSWORD": PASSWORD}
            )
            assert audit.returncode == 0, audit.stdout + audit.stderr
            wrong = _ctl(
                "audit", "verify", "--redis", redis.url, env={"JACKPOT_REDIS_PASSWORD": "nope"}
            )
            assert wrong.returncode == 1 and "Redis refused the password" in wrong.stderr
        log = controller.log_tail(1_000_000)
        assert "controller serving on" in log and PASSWORD not in log


def test_a_controller_with_a_wrong_password_does_not_start(tmp_path: Path, pki: TestPKI) -> None:
    with RedisServer(tmp_path / "redis", extra_args=("--requirepass", PASSWORD)) as redis:
        files = pki.server()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "controller.runtime.cli",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--metrics-port",
                "-1",
                "--redis",
                redis.url,
                "--tls-cert",
                str(files.cert),
                "--tls-key",
                str(files.key),
                "--client-ca",
                str(files.client_ca),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "JACKPOT_REDIS_PASSWORD": "not-it"},
        )
    assert result.returncode == 1
    assert "Redis refused the password" in result.stderr
    assert "not-it" not in result.stderr


def test_sighup_rereads_the_deny_list_and_a_revoked_table_is_refused(
    tmp_path: Path, pki: TestPKI
) -> None:
    deny_list = tmp_path / "deny-list.txt"
    deny_list.write_text("# none revoked yet\n")
    with RedisServer(tmp_path / "redis") as redis:
        controller = ControllerProcess(
            redis.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=RULES,
            extra_args=("--deny-list", str(deny_list)),
        )
        with controller:
            agent = [
                sys.executable,
                "-m",
                "table_agent.cli",
                "--table-id",
                "cs-1",
                "--controller",
                controller.target,
                "--sim",
                "--rounds",
                "3",
                *controller.client_args("table", "cs-1"),
            ]
            played = subprocess.run(agent, capture_output=True, text=True, timeout=60, check=False)
            assert played.returncode == 0, played.stderr
            fingerprint = _ctl("certs", "fingerprint", str(pki.client("table", "cs-1").cert))
            deny_list.write_text(deny_list.read_text() + fingerprint.stdout)
            controller.process.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
            refused = subprocess.run(agent, capture_output=True, text=True, timeout=60, check=False)
            assert refused.returncode == 1
            assert "UNAUTHENTICATED" in refused.stderr and "is revoked" in refused.stderr
            assert controller.process is not None and controller.process.poll() is None
        assert "deny list" in controller.log_tail(1_000_000)

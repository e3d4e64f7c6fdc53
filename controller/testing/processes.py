"""Run the controller as a child process on a free loopback port."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from controller.testing.children import Started, free_port, stop_process
from controller.testing.pki import TestPKI
from jackpot import tls


class ControllerProcess(Started):
    """``jackpot-controller serve`` on a free loopback port with mutual TLS from ``pki``
    (``--insecure`` when it is None), logging to a file, optionally applying Rules
    Submissions at start, ``--first-install`` unless ``first_install`` is False (a controller
    over a Redis without the installation record is NOT_SERVING); ``--payout-compliance
    none`` unless ``payout_compliance`` names another preset (None: no option, the
    controller's default, us-default); ``extra_args`` go on its command line.

    :meth:`start` returns once the gRPC health service answers SERVING.
    """

    def __init__(
        self,
        redis_url: str,
        log_path: Path,
        *,
        pki: TestPKI | None,
        metrics: bool = True,
        rules: Path | Sequence[Path] = (),
        first_install: bool = True,
        extra_args: Sequence[str] = (),
        payout_compliance: str | None = "none",
    ) -> None:
        self.redis_url = redis_url
        self.first_install = first_install
        self.log_path = log_path
        self.pki = pki
        self.extra_args = list(extra_args)
        self.payout_compliance = payout_compliance
        self.rules = [rules] if isinstance(rules, Path) else list(rules)
        self.port = free_port()
        self.metrics_port = free_port() if metrics else -1
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def target(self) -> str:
        """The gRPC address, ``127.0.0.1:PORT``."""
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """The process id (the controller must be running)."""
        if self.process is None:
            raise RuntimeError("the controller is not running")
        return self.process.pid

    def security_args(self) -> list[str]:
        """``--tls-cert``, ``--tls-key``, ``--client-ca``, ``--position-key``; or
        ``--insecure``."""
        if self.pki is None:
            return ["--insecure"]
        files = self.pki.server()
        return [
            "--tls-cert",
            str(files.cert),
            "--tls-key",
            str(files.key),
            "--client-ca",
            str(files.client_ca),
            "--position-key",
            str(self.pki.position_key()),
        ]

    def client_args(self, role: str, name: str) -> list[str]:
        """A client command's TLS options as ``role``/``name`` (``--insecure`` without TLS)."""
        return ["--insecure"] if self.pki is None else self.pki.client_args(role, name)

    def start(self, timeout_s: float = 30.0, *, serving: bool = True) -> ControllerProcess:
        """Start the process and wait until it reports SERVING (or, with ``serving`` False,
        NOT_SERVING: up, but refusing to serve, e.g. over a Redis that lost its data)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "controller.runtime.cli",
                    "serve",
                    *self.security_args(),
                    "--listen",
                    self.target,
                    "--redis",
                    self.redis_url,
                    "--metrics-port",
                    str(self.metrics_port),
                    *(arg for path in self.rules for arg in ("--rules", str(path))),
                    *(["--first-install"] if self.first_install else []),
                    *(
                        ["--payout-compliance", self.payout_compliance]
                        if self.payout_compliance is not None
                        else []
                    ),
                    *self.extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout_s
        probe = self.pki.client("auditor", "health-probe") if self.pki else None
        with tls.channel(self.target, probe) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the controller exited:\n{self.log_tail()}")
                try:
                    reply = health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                    expected = (
                        health_pb2.HealthCheckResponse.SERVING
                        if serving
                        else health_pb2.HealthCheckResponse.NOT_SERVING
                    )
                    if reply.status == expected:
                        return self
                except grpc.RpcError:
                    pass
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the controller did not serve within {timeout_s}s")

    def stop(self) -> None:
        """Stop the controller (SIGTERM, SIGKILL after 10 s)."""
        stop_process(self.process)
        self.process = None

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the controller's log."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

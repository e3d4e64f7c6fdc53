"""The table agent's own meter sign (``table-agent --web-port``): fed by its WatchMeters
stream, for display certificates only, and PROGRESSIVE OFFLINE exactly while the table is
(its controller stopped past ``--offline-after``), then live again."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.security.certs import issue_controller
from controller.testing import ControllerProcess, RedisServer, TestPKI
from controller.testing.children import free_port, stop_process


def _context(pki: TestPKI, role: str, name: str) -> ssl.SSLContext:
    files = pki.client(role, name)
    context = ssl.create_default_context(cafile=str(files.ca))
    context.check_hostname = False
    context.load_cert_chain(files.cert, files.key)
    return context


def _wait_listening(url: str, context: ssl.SSLContext, agent: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert agent.poll() is None, "the agent exited"
        try:
            with urllib.request.urlopen(url, context=context, timeout=5):
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within 60 s")


def _until(
    stream: Any, check: Callable[[dict[str, Any]], bool], timeout_s: float
) -> dict[str, Any]:
    """Read events from ``stream`` until one satisfies ``check`` (bounded by a deadline)."""
    deadline = time.monotonic() + timeout_s
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        line = stream.readline()
        if line.startswith(b"data: "):
            last = json.loads(line[6:])
            if check(last):
                return last
    raise AssertionError(f"no such event within {timeout_s}s; last: {last}")


@pytest.fixture
def agent_sign(
    system: tuple[RedisServer, ControllerProcess], pki: TestPKI, tmp_path: Path
) -> Iterator[tuple[ControllerProcess, int]]:
    _, controller = system
    server = issue_controller(pki.directory, out=tmp_path / "sign")
    port = free_port()
    command = [sys.executable, "-m", "table_agent.cli", "--table-id", "cs-1", "--sim"]
    command += ["--controller", controller.target, "--quiet", "--rounds", "100000"]
    command += ["--pace", "0.5", "--offline-after", "2", "--retry-for", "600"]
    command += ["--web-port", str(port), "--web-cert", str(server.cert)]
    command += ["--web-key", str(server.key), *controller.client_args("table", "cs-1")]
    log = (tmp_path / "agent.log").open("wb")
    agent = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_listening(
            f"https://127.0.0.1:{port}/sign", _context(pki, "display", "table-sign"), agent
        )
        yield controller, port
    finally:
        stop_process(agent)
        log.close()


def test_the_agents_sign_follows_the_table(agent_sign, pki: TestPKI) -> None:
    controller, port = agent_sign
    base = f"https://127.0.0.1:{port}"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(base + "/sign", context=_context(pki, "table", "cs-1"), timeout=10)
    assert refused.value.code == 403
    assert b"it is for: display" in refused.value.read()
    display = _context(pki, "display", "table-sign")
    with urllib.request.urlopen(base + "/sign", context=display, timeout=10) as page:
        assert b"PROGRESSIVE OFFLINE" in page.read()
    with urllib.request.urlopen(base + "/sign/events", context=display, timeout=10) as stream:
        first = _until(stream, lambda e: not e["stale"] and e["meters"], 30)
        assert first["title"] == "table cs-1"
        assert [m["meter_id"] for m in first["meters"]] == ["cs-main"]
        _until(stream, lambda e: e["meters"][0]["cents"] > 1_000_000, 60)  # play raises it
        os.kill(controller.pid, signal.SIGSTOP)
        try:
            _until(stream, lambda e: e["stale"], 30)
        finally:
            os.kill(controller.pid, signal.SIGCONT)
        _until(stream, lambda e: not e["stale"], 60)

"""The real runs of the documentation, executed verbatim: the README's ten steps ("A real run
in ten steps") and the full first installation (docs/operating/install.md). Every shell block
marked ``<!-- real-run -->`` there runs, in order, in one bash, in a temporary folder, on
loopback, with free ports given through the variables the page itself sets (JACKPOT_ETC,
JACKPOT_VAR, CONTROLLER_HOST, CONTROLLER_PORT, METRICS_PORT, REDIS_PORT): a real redis-server,
a real controller and a simulated table with its certificate."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from controller.api.peers import read_deny_list
from controller.security.certs import fingerprint
from controller.testing.children import free_port

REPO = Path(__file__).resolve().parents[2]
MARK = "<!-- real-run -->"
BLOCK = re.compile(r"^" + re.escape(MARK) + r"\n```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


#: Where the real runs are: the file, and the heading of its section ("" for the whole page).
RUNS = {
    "readme": ("README.md", "## A real run in ten steps"),
    "install": ("docs/operating/install.md", ""),
}


def real_run_blocks(run: str) -> list[str]:
    """The marked blocks of one real run, in order."""
    path, heading = RUNS[run]
    text = (REPO / path).read_text(encoding="utf-8")
    section = text
    if heading:
        start = text.index(f"\n{heading}\n")
        end = text.find("\n## ", start + 1)
        section = text[start : end if end > 0 else len(text)]
    blocks = BLOCK.findall(section)
    assert len(blocks) == section.count(f"\n{MARK}\n"), "a mark not followed by a ```sh block"
    return blocks


@pytest.mark.parametrize("run", sorted(RUNS))
def test_the_blocks_cover_what_a_real_run_needs(run: str) -> None:
    script = "\n".join(real_run_blocks(run))
    for needed in (
        "certs init",
        "--role table",
        "--role supervisor",
        "--role cashier",
        "--role operator --name ops-1",
        "--role operator --name ops-2",
        "--role auditor",
        "--role display",
        "redis-password",
        "deny-list.txt",
        "position-key",
        "bind 127.0.0.1",
        "port $REDIS_PORT",
        "maxmemory ",
        "maxmemory-policy noeviction",
        "appendfsync always",
        "jackpot-controller serve",
        "table-agent",
        "approve-adjustment",
        "audit verify",
    ):
        assert needed in script, needed
    reports = [line for line in script.splitlines() if line.startswith("jackpotctl report")]
    assert reports and all("$R" in line for line in reports)
    assert "--redis-password-file $JACKPOT_ETC/redis-password" in script
    # Explicit, so the run means the same under any default policy (docs/payout-compliance.md).
    assert "--payout-compliance " in script


def test_the_full_installation_pays_a_jackpot_under_its_policy() -> None:
    script = "\n".join(real_run_blocks("install"))
    for needed in ("--script", "jackpots approve", "jackpots witness", "--tax-form-ref"):
        assert needed in script, needed


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(RUNS))
def test_running_it_for_real_runs_as_written(page: str, tmp_path: Path) -> None:
    ports = {name: free_port() for name in ("CONTROLLER_PORT", "METRICS_PORT", "REDIS_PORT")}
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "JACKPOT_ETC": str(tmp_path / "etc"),
        "JACKPOT_VAR": str(tmp_path / "var"),
        "CONTROLLER_HOST": "127.0.0.1",
        **{name: str(port) for name, port in ports.items()},
    }
    for name in ("JACKPOT_CA", "JACKPOT_CERT", "JACKPOT_KEY", "JACKPOT_REDIS_PASSWORD"):
        env.pop(name, None)
    script = "set -euo pipefail\n" + "\n".join(real_run_blocks(page))
    (tmp_path / "real-run.sh").write_text(script, encoding="utf-8")
    run = subprocess.Popen(
        ["bash", str(tmp_path / "real-run.sh")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its background Redis and controller: one group to stop
    )
    try:
        output, _ = run.communicate(timeout=240)
        logs = "".join(
            f"\n--- {log.name}\n{log.read_text()[-3000:]}"
            for log in (tmp_path / "var").glob("*.log")
        )
        assert run.returncode == 0, output + logs
        password = (tmp_path / "etc" / "redis-password").read_text().strip()
        client = redis.Redis(port=ports["REDIS_PORT"], password=password)
        try:
            config = client.config_get("*")
            assert config["maxmemory-policy"] == "noeviction" and int(str(config["maxmemory"])) > 0
            assert (config["appendonly"], config["appendfsync"]) == ("yes", "always")
            assert config["bind"] == "127.0.0.1"
        finally:
            client.close()
        assert (tmp_path / "etc" / "redis-password").stat().st_mode & 0o077 == 0
        assert "audit: OK" in output
        assert "approved" in output  # ops-2 approved ops-1's adjustment
        assert re.search(r"cs-1\b.*10 rounds", output) or "10 rounds" in output, output
        if page == "install":  # the royal flush: approved, witnessed, then paid with its W-2G
            assert "missing the W-2G tax-form reference" in output, output
            assert "witnessed by jackpot://supervisor/b.chen" in output, output
            assert "paid by jackpot://cashier/cage-1" in output, output
        (revoked,) = read_deny_list(tmp_path / "etc" / "deny-list.txt")
        assert revoked == fingerprint((tmp_path / "out" / "sign-1" / "sign-1.crt").read_bytes())
    finally:
        if run.poll() is None:
            run.kill()
        run.wait(timeout=30)
        stop_group(run.pid)


def stop_group(group: int) -> None:
    """SIGTERM the process group (the README's background Redis and controller) and wait,
    bounded, until it is gone (SIGKILL after 20 s)."""
    for signum, waits in ((signal.SIGTERM, 100), (signal.SIGKILL, 50)):
        try:
            os.killpg(group, signum)
        except ProcessLookupError:
            return
        for _ in range(waits):
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)

"""``jackpot-controller serve --workers 2``: two processes on one port, one metrics endpoint."""

from __future__ import annotations

import re
import signal
import urllib.request
from pathlib import Path

import grpc

from controller.testing import ControllerProcess, RedisServer, TestPKI
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import CARIBBEAN_RULES, lockout, settle

CONNECTIONS = 16


def _metrics(controller: ControllerProcess) -> str:
    url = f"http://127.0.0.1:{controller.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as reply:
        return str(reply.read().decode())


def _sample(text: str, name: str, labels: str = "") -> float:
    match = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.MULTILINE)
    assert match, f"{name}{labels} is not exported"
    return float(match[1])


def test_two_workers_serve_one_port_with_one_metrics_endpoint(tmp_path: Path, pki: TestPKI) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        controller = ControllerProcess(
            redis.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=CARIBBEAN_RULES,
            extra_args=("--workers", "2", "--table-calls-per-second", "0"),
        )
        with controller:
            for _ in range(300):  # worker 1 starts once worker 0 serves
                if "worker 1 of 2 serving" in controller.log_tail(100_000):
                    break
                signal.sigtimedwait([], 0.1)
            assert "worker 1 of 2 serving" in controller.log_tail(100_000)
            files = pki.client("table", "cs-1")
            credentials = grpc.ssl_channel_credentials(
                files.ca.read_bytes(), files.key.read_bytes(), files.cert.read_bytes()
            )
            channels = [  # each its own connection
                grpc.secure_channel(
                    controller.target, credentials, [("grpc.use_local_subchannel_pool", 1)]
                )
                for _ in range(CONNECTIONS)
            ]
            for round_id, channel in enumerate(channels, start=1):
                tables = pb_grpc.TableServiceStub(channel)
                tables.Lockout(lockout("cs-1", round_id, [1, 2]), timeout=10)
                tables.Settle(settle("cs-1", round_id, {1: "2C 3D 9H JS KD"}, [2]), timeout=10)
            workers = _workers(controller.pid)
            served_by = {pid for pid in workers if _connections(pid, controller.port)}
            for channel in channels:
                channel.close()
            text = _metrics(controller)
            assert len(served_by) == 2, "the connections all landed on one worker"
            assert (
                _sample(
                    text,
                    "grpc_server_handled_total",
                    '{grpc_code="OK",grpc_method="Settle",grpc_service="jackpot.v1.TableService",'
                    'grpc_type="unary"}',
                )
                == CONNECTIONS
            )  # summed over both workers
            assert text.count("\njackpot_wagers_total{") == 1  # Redis's counters, once
            for _ in range(100):  # Redis's counters are read every refresh (2 s)
                text = _metrics(controller)
                if _sample(text, "jackpot_wagers_total", '{meter="cs-main"}') == 2 * CONNECTIONS:
                    break
                signal.sigtimedwait([], 0.1)
            assert _sample(text, "jackpot_wagers_total", '{meter="cs-main"}') == 2 * CONNECTIONS
            assert _sample(text, "jackpot_redis_up") == 1
            assert text.count("\njackpot_meter_cents{") == 1  # a state gauge, once
            pids = controller.pid
            controller.process.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
            assert controller.process.wait(timeout=30) == 0  # type: ignore[union-attr]
            for pid in served_by:
                assert not Path(f"/proc/{pid}").exists() or _zombie(pid), pids
            log = controller.log_tail(100_000)
            assert log.count("stopping: finishing calls in flight") == 2
            assert not list(Path("/tmp").glob(f"jackpot-metrics-*{pids}*"))


def _workers(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in children]


def _connections(pid: int, port: int) -> int:
    """Established TCP connections on local ``port`` that process ``pid`` holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().name
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01" and fields[9] in inodes:
                count += 1
    return count


def _zombie(pid: int) -> bool:
    return " Z " in Path(f"/proc/{pid}/stat").read_text()

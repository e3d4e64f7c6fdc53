"""``jackpot-controller serve --workers N``: N controller processes on one port.

One Python process serves about one core's worth of rounds (the GIL); workers use the other
cores of a host without more addresses to configure. This process (the supervisor) starts N
worker processes, each a whole :class:`~controller.runtime.server.ControllerServer` listening on the
same address with ``SO_REUSEPORT``: the kernel spreads new connections over them (a table
agent keeps its connection, so its calls stay on one worker). The controller is stateless,
so any worker may serve any call, as any replica may.

Metrics: one endpoint, served by worker 0 on ``--metrics-port``, with prometheus-client's
multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, a fresh directory for each start, removed
at the stop): call counters and latency histograms are summed over the workers, state gauges
read from Redis are exported once (:class:`~controller.observability.metrics.Metrics`).

Health: each worker answers gRPC health for itself; ``/healthz`` and ``/livez`` are worker
0's. Should any worker end, the supervisor stops the others and exits 1, so that the
orchestrator restarts the whole controller rather than leaving part of it serving. SIGTERM
or SIGINT stops every worker gracefully (calls in flight finish), then the supervisor.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import replace
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType

from controller.runtime.server import ServerConfig

log = logging.getLogger("controller.workers")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
START_TIMEOUT_S = 60.0
"""How long a worker may take to start serving (it checks Redis, applies the rules)."""
STOP_TIMEOUT_S = 15.0
"""How long the workers get to finish their calls after SIGTERM before they are killed."""
MAX_WORKERS = 64


class WorkersError(Exception):
    """The workers cannot be started (the message says why)."""


def check_address(listen: str, workers: int) -> None:
    """Refuse what N workers cannot share: a port chosen by the system (each worker would get
    its own), or an address already in use (by another controller, even one with workers:
    they would silently share its port)."""
    if not 2 <= workers <= MAX_WORKERS:
        raise WorkersError(f"--workers must be 1 to {MAX_WORKERS}, got {workers}")
    host, _, port = listen.rpartition(":")
    if port == "0":
        raise WorkersError("--workers needs a fixed --listen port, not 0")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host or "0.0.0.0", int(port)))
        except OSError as error:
            raise WorkersError(f"cannot listen on {listen}: {error.strerror or error}") from None


def _worker(config: ServerConfig, log_level: str, ready: Connection) -> None:
    """One worker process: serve until SIGTERM or SIGINT; say "ready" once serving."""
    from controller.observability import logs
    from controller.runtime import serving  # imported here: the worker is a fresh interpreter

    logs.configure(log_level)
    serving.run_server(config, lambda: ready.send("ready"))


def run(config: ServerConfig, workers: int, log_level: str) -> int:
    """Serve ``config`` with ``workers`` processes until SIGTERM or SIGINT (0), or until a
    worker ends or fails to start (1)."""
    check_address(config.listen, workers)
    metrics_dir = tempfile.mkdtemp(prefix="jackpot-metrics-")
    os.environ[MULTIPROC_ENV] = metrics_dir  # inherited by the workers, read at their start
    context = multiprocessing.get_context("spawn")
    processes: list[BaseProcess] = []
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for index in range(workers):
            worker_config = replace(
                config,
                reuse_port=True,
                metrics_dir=metrics_dir,
                metrics_port=config.metrics_port if index == 0 else None,
                web_port=config.web_port if index == 0 else None,  # one port, one worker
            )
            receive, send = context.Pipe(duplex=False)
            process = context.Process(
                target=_worker,
                args=(worker_config, log_level, send),
                name=f"jackpot-worker-{index}",
            )
            process.start()
            send.close()
            processes.append(process)
            # One at a time: the first applies the rules and opens the metrics port.
            if not _started(process, receive) or stopping:
                if not stopping:
                    log.error("worker %d did not start; stopping", index)
                return 0 if stopping else 1
            log.info("worker %d of %d serving (pid %d)", index, workers, process.pid)
        while not stopping:
            ended = wait([p.sentinel for p in processes], timeout=0.5)
            if ended and not stopping:  # (a signal to the process group stops them too)
                for worker in processes:
                    if worker.sentinel in ended:
                        worker.join(1)
                        log.error(
                            "worker pid %s ended (exit %s); stopping the others",
                            worker.pid,
                            worker.exitcode,
                        )
                return 1
        return 0
    finally:
        _stop(processes)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(metrics_dir, ignore_errors=True)
        os.environ.pop(MULTIPROC_ENV, None)


def _started(process: BaseProcess, ready: Connection) -> bool:
    """Wait until the worker says it serves (True) or ends (False), at most
    :data:`START_TIMEOUT_S`."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if wait([ready, process.sentinel], timeout=0.5):
            try:
                return bool(ready.poll() and ready.recv() == "ready")
            except EOFError:
                return False
    return False


def _stop(processes: list[BaseProcess]) -> None:
    """SIGTERM every worker still running, wait for them, kill what is left."""
    for process in processes:
        if process.is_alive() and process.pid is not None:
            os.kill(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            log.error("worker pid %s did not stop in time; killing it", process.pid)
            process.kill()
            process.join(5)

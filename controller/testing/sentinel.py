"""Redis high availability as real processes: a primary, a replica and Redis Sentinels.

:class:`RedisSentinel` is one ``redis-server --sentinel`` child process with a generated
config file in its own directory (a Sentinel rewrites that file as it learns its peers, so it
must be writable). :class:`SentinelGroup` starts a primary, one replica (``--replicaof``) and
three Sentinels (quorum 2) on free loopback ports, waits until every Sentinel knows the
replica and its two peers, and can then fail the primary over: ``kill -9`` (:meth:`kill_primary`)
or ``SENTINEL FAILOVER`` (:meth:`failover`). Every process it started is stopped when the
group stops, also when starting it failed half way.

Times are in milliseconds where Redis takes milliseconds (``down_after_ms``,
``failover_timeout_ms``), in seconds elsewhere (``timeout_s``).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from controller.testing.children import Started, free_port, program, stop_process
from controller.testing.redis_server import RedisServer

SERVICE = "jackpot"
"""The Sentinel service name the group's primary is monitored under."""


class RedisSentinel:
    """A Sentinel on a free loopback port monitoring ``service`` at 127.0.0.1:``primary_port``.

    ``quorum`` Sentinels must agree that the primary is down before a failover;
    ``down_after_ms`` without an answer makes it subjectively down; ``failover_timeout_ms``
    bounds one failover attempt. ``auth_pass`` is the password of the monitored Redis servers;
    ``password`` that of the Sentinel itself (and of its peers).
    """

    def __init__(
        self,
        directory: Path,
        primary_port: int,
        *,
        service: str = SERVICE,
        quorum: int = 2,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 5000,
        auth_pass: str | None = None,
        password: str | None = None,
        port: int | None = None,
    ) -> None:
        binary = program("redis-server", "redis-server")
        self.binary = binary
        self.directory = directory
        self.primary_port = primary_port
        self.service = service
        self.quorum = quorum
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.auth_pass = auth_pass
        self.password = password
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"

    @property
    def config_path(self) -> Path:
        """The generated (and by the Sentinel rewritten) ``sentinel.conf``."""
        return self.directory / "sentinel.conf"

    @property
    def log_path(self) -> Path:
        """The Sentinel's log file."""
        return self.directory / "sentinel.log"

    def config(self) -> str:
        """The config file's text."""
        lines = [
            f"port {self.port}",
            "bind 127.0.0.1",
            "daemonize no",
            f"dir {self.directory}",
            f"logfile {self.log_path}",
            f"sentinel monitor {self.service} 127.0.0.1 {self.primary_port} {self.quorum}",
            f"sentinel down-after-milliseconds {self.service} {self.down_after_ms}",
            f"sentinel failover-timeout {self.service} {self.failover_timeout_ms}",
            f"sentinel parallel-syncs {self.service} 1",
        ]
        if self.auth_pass is not None:
            lines.append(f"sentinel auth-pass {self.service} {self.auth_pass}")
        if self.password is not None:
            lines += [f"requirepass {self.password}", f"sentinel sentinel-pass {self.password}"]
        return "\n".join(lines) + "\n"

    def client(self) -> redis.Redis:
        """A synchronous client of this Sentinel (short timeouts; the caller closes it)."""
        return redis.Redis(
            host="127.0.0.1",
            port=self.port,
            password=self.password,
            socket_timeout=1.0,
            socket_connect_timeout=1.0,
            decode_responses=True,
        )

    def start(self, timeout_s: float = 10.0) -> RedisSentinel:
        """Write the config, start the Sentinel and wait until it answers PING."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self.config(), encoding="utf-8")
        self.process = subprocess.Popen(
            [self.binary, str(self.config_path), "--sentinel"], stdout=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout_s
        with contextlib.closing(self.client()) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the Sentinel exited at start:\n{self.log_tail()}")
                with contextlib.suppress(redis.RedisError):
                    if client.ping():
                        return self
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the Sentinel did not answer on port {self.port} in {timeout_s}s")

    def stop(self) -> None:
        """Stop the Sentinel (SIGTERM, then SIGKILL after 5 s)."""
        stop_process(self.process, timeout_s=5)
        self.process = None

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the Sentinel's log."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


class SentinelGroup(Started):
    """A primary, one replica and ``sentinels`` Sentinels (quorum 2) under ``directory``.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. :attr:`url` is the
    ``sentinel://`` URL the controller is given. The servers run with the append-only file on
    and ``appendfsync always`` (:class:`RedisServer`'s defaults). With ``password`` the
    servers require it (and use it with each other); with ``sentinel_password`` the Sentinels
    require theirs. (Both are on the test processes' command lines or in their config files:
    for tests only.)
    """

    def __init__(
        self,
        directory: Path,
        *,
        service: str = SERVICE,
        sentinels: int = 3,
        quorum: int = 2,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 5000,
        password: str | None = None,
        sentinel_password: str | None = None,
    ) -> None:
        self.directory = directory
        self.service = service
        self.password = password
        # No pause before a full sync (Redis waits 5 s for more replicas by default): a
        # replica, and a former primary that rejoins, are in sync at once.
        at_once: tuple[str, ...] = ("--repl-diskless-sync-delay", "0")
        if password is not None:
            at_once += ("--requirepass", password, "--masterauth", password)
        self.primary = RedisServer(directory / "redis-a", extra_args=at_once)
        self.replica = RedisServer(
            directory / "redis-b",
            extra_args=(*at_once, "--replicaof", "127.0.0.1", str(self.primary.port)),
        )
        self.servers = (self.primary, self.replica)
        self.sentinels = [
            RedisSentinel(
                directory / f"sentinel-{number}",
                self.primary.port,
                service=service,
                quorum=quorum,
                down_after_ms=down_after_ms,
                failover_timeout_ms=failover_timeout_ms,
                auth_pass=password,
                password=sentinel_password,
            )
            for number in range(1, sentinels + 1)
        ]

    @property
    def url(self) -> str:
        """``sentinel://127.0.0.1:<port>,.../<service>``: every Sentinel of the group."""
        hosts = ",".join(sentinel.address for sentinel in self.sentinels)
        return f"sentinel://{hosts}/{self.service}"

    def start(self, timeout_s: float = 30.0) -> SentinelGroup:
        """Start the primary, the replica (in sync before the Sentinels start, so that they
        find it at once) and the Sentinels; return once every Sentinel sees the replica and
        all of its peers. Everything started is stopped again if this fails."""
        deadline = time.monotonic() + timeout_s
        try:
            self.primary.start()
            self.replica.start()
            self._wait(deadline, "the replica to be in sync", self._replica_in_sync)
            for sentinel in self.sentinels:
                sentinel.start()
            self._wait(deadline, "the Sentinels to know each other", self._sentinels_ready)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every Sentinel and server (each one even if stopping another failed)."""
        for sentinel in self.sentinels:
            with contextlib.suppress(Exception):
                sentinel.stop()
        for server in self.servers:
            with contextlib.suppress(Exception):
                server.stop()

    # ------------------------------------------------------------------ state

    def primary_address(self) -> tuple[str, int]:
        """(host, port) of the primary as the first Sentinel that answers names it."""
        for sentinel in self.sentinels:
            with (
                contextlib.suppress(redis.RedisError),
                contextlib.closing(sentinel.client()) as client,
            ):
                address: Any = client.sentinel_get_master_addr_by_name(self.service)
                if address:
                    return str(address[0]), int(address[1])
        raise RuntimeError("no Sentinel names a primary")

    def server_at(self, port: int) -> RedisServer:
        """The group's server listening on ``port``."""
        for server in self.servers:
            if server.port == port:
                return server
        raise LookupError(f"no server of this group listens on port {port}")

    def current_primary(self) -> RedisServer:
        """The server the Sentinels name as the primary now."""
        return self.server_at(self.primary_address()[1])

    def client(self, server: RedisServer) -> redis.Redis:
        """A synchronous client of ``server`` (the caller closes it)."""
        return redis.Redis(
            host="127.0.0.1",
            port=server.port,
            password=self.password,
            socket_timeout=1.0,
            decode_responses=True,
        )

    def role(self, server: RedisServer) -> dict[str, Any]:
        """``INFO replication`` of ``server`` (``slave0``: a dict with ``state``, ...);
        empty when it does not answer."""
        client = self.client(server)
        with contextlib.closing(client):
            try:
                return dict(client.info("replication"))
            except redis.RedisError:
                return {}

    def _replica_in_sync(self) -> bool:
        return self.role(self.replica).get("master_link_status") == "up"

    def _sentinels_ready(self) -> bool:
        peers = len(self.sentinels) - 1
        for sentinel in self.sentinels:
            with (
                contextlib.suppress(redis.RedisError),
                contextlib.closing(sentinel.client()) as client,
            ):
                state: Any = client.sentinel_master(self.service)
                if state["num-other-sentinels"] >= peers and state["num-slaves"] >= 1:
                    continue
            return False
        return True

    def _wait(self, deadline: float, what: str, done: Callable[[], bool]) -> None:
        while time.monotonic() < deadline:
            if done():
                return
            time.sleep(0.1)
        logs = "\n".join(s.log_tail(1500) for s in self.sentinels)
        raise RuntimeError(f"timed out waiting for {what}:\n{logs}")

    # ------------------------------------------------------------------ failing over

    def kill_primary(self) -> RedisServer:
        """``kill -9`` the current primary; returns it (stopped; :meth:`RedisServer.start`
        brings it back with its data, and the Sentinels then make it a replica)."""
        server = self.current_primary()
        if server.process is not None:
            server.process.send_signal(signal.SIGKILL)
            server.process.wait()
            server.process = None
        return server

    def _replicas_settled(self) -> bool:
        """Every Sentinel sees every replica up, reporting the replica role, its link up."""
        for sentinel in self.sentinels:
            with contextlib.closing(sentinel.client()) as client:
                try:
                    replicas: Any = client.sentinel_slaves(self.service)
                except redis.RedisError:
                    return False
            if not replicas:
                return False
            for replica in replicas:
                if replica.get("is_sdown") or replica.get("is_odown"):
                    return False
                if (replica.get("role-reported"), replica.get("master-link-status")) != (
                    "slave",
                    "ok",
                ):
                    return False
        return True

    def failover(self, timeout_s: float = 30.0) -> None:
        """``SENTINEL FAILOVER``: promote the replica while the primary is still up.

        First waits until every Sentinel sees the replica as one, in sync: a Sentinel that
        still thinks a rejoined server must be turned into a replica would otherwise undo the
        promotion (the failover then aborts). Asked again (bounded by ``timeout_s``) while
        the Sentinel answers that no replica is good yet (NOGOODSLAVE) or that a failover is
        still in progress (INPROG)."""
        deadline = time.monotonic() + timeout_s
        self._wait(deadline, "every Sentinel to see the replica in sync", self._replicas_settled)
        with contextlib.closing(self.sentinels[0].client()) as client:
            while True:
                try:
                    client.execute_command(  # type: ignore[no-untyped-call]
                        "SENTINEL FAILOVER", self.service
                    )
                    return
                except redis.ResponseError as error:
                    not_yet = str(error).startswith(("NOGOODSLAVE", "INPROG"))
                    if not not_yet or time.monotonic() > deadline:
                        raise
                time.sleep(0.2)

    def named_ports(self) -> set[int]:
        """The primary's port as each Sentinel names it (a Sentinel that does not answer is
        left out; peers learn of a failover within about two seconds)."""
        ports = set()
        for sentinel in self.sentinels:
            with (
                contextlib.suppress(redis.RedisError),
                contextlib.closing(sentinel.client()) as client,
            ):
                address: Any = client.sentinel_get_master_addr_by_name(self.service)
                if address:
                    ports.add(int(address[1]))
        return ports

    def wait_for_new_primary(self, old_port: int, timeout_s: float = 30.0) -> RedisServer:
        """Wait until every Sentinel names the same primary, not ``old_port``, and that
        server reports the master role; return it."""
        deadline = time.monotonic() + timeout_s

        def promoted() -> bool:
            ports = self.named_ports()
            if len(ports) != 1 or old_port in ports:
                return False
            (port,) = ports
            return self.role(self.server_at(port)).get("role") == "master"

        self._wait(deadline, "a new primary", promoted)
        return self.current_primary()

    def wait_for_replicas(self, count: int = 1, timeout_s: float = 30.0) -> None:
        """Wait until the current primary has ``count`` replicas with their link up."""
        deadline = time.monotonic() + timeout_s

        def attached() -> bool:
            try:
                info = self.role(self.current_primary())
            except (RuntimeError, LookupError):
                return False
            online = [
                value
                for key, value in info.items()
                if key.startswith("slave") and isinstance(value, dict)
                if value.get("state") == "online"
            ]
            return info.get("role") == "master" and len(online) >= count

        self._wait(deadline, f"{count} replica(s) of the primary", attached)

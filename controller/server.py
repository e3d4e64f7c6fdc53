"""Wiring: the grpc.aio server, health, reflection, the interceptor, metrics and the store.

:class:`ControllerServer` is what ``jackpot-controller serve`` runs and what the tests start
in-process on a free port. The controller is stateless: any number of replicas may serve
the same Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from importlib import metadata
from threading import Thread
from wsgiref.simple_server import WSGIServer

from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio  # type: ignore[attr-defined]
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from controller.api.admin_service import AdminService
from controller.api.interceptor import ServerInterceptor
from controller.api.table_service import TableService
from controller.domain.submission import RulesSubmission
from controller.errors import StoreUnavailable
from controller.metrics import Metrics
from controller.rules_file import apply as apply_rules
from controller.store.redis_store import DEFAULT_ROUND_RETENTION_SECONDS, RedisStore
from jackpot.v1 import jackpot_pb2, jackpot_pb2_grpc

log = logging.getLogger("controller.server")

SERVICE_NAMES = (
    jackpot_pb2.DESCRIPTOR.services_by_name["TableService"].full_name,
    jackpot_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name,
)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """How to run one controller.

    ``listen`` is HOST:PORT (port 0 picks a free one); ``metrics_port`` None disables the
    metrics endpoint (0 picks a free one); ``wait_replicas`` > 0 makes every acknowledged
    write wait for that many Redis replicas.
    """

    listen: str = "127.0.0.1:50051"
    redis_url: str = "redis://127.0.0.1:6379/0"
    metrics_port: int | None = 9102
    round_retention_seconds: int = DEFAULT_ROUND_RETENTION_SECONDS
    wait_replicas: int = 0
    wait_timeout_ms: int = 1000
    refresh_interval_s: float = 5.0
    rules: tuple[RulesSubmission, ...] = ()  # applied at start, in order


def _version() -> str:
    try:
        return metadata.version("table-jackpot")
    except metadata.PackageNotFoundError:
        return "0+unknown"


class ControllerServer:
    """One controller process: start, serve, stop."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.metrics = Metrics(_version())
        self.store = RedisStore.from_url(
            config.redis_url,
            round_retention_seconds=config.round_retention_seconds,
            wait_replicas=config.wait_replicas,
            wait_timeout_ms=config.wait_timeout_ms,
        )
        self.health = health_aio.HealthServicer()
        self.server = aio.server(interceptors=[ServerInterceptor(self.metrics)])
        jackpot_pb2_grpc.add_TableServiceServicer_to_server(
            TableService(self.store, self.metrics), self.server
        )
        jackpot_pb2_grpc.add_AdminServiceServicer_to_server(
            AdminService(self.store, self.metrics), self.server
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (
                *SERVICE_NAMES,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            ),
            self.server,
        )
        self.port = 0
        self.metrics_port = 0
        self._metrics_http: tuple[WSGIServer, Thread] | None = None
        self._refresher: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Check Redis, report its durability, open the ports, then report SERVING."""
        persistence = await self.store.persistence()
        self.metrics.set_persistence(persistence)
        log.info(
            "redis %s role=%s appendonly=%s appendfsync=%s replicas=%d",
            persistence.redis_version,
            persistence.role,
            "yes" if persistence.aof_enabled else "no",
            persistence.appendfsync,
            persistence.connected_replicas,
        )
        if persistence.aof_enabled is None:
            log.warning(
                "cannot read Redis's persistence settings (CONFIG is disabled); make "
                "sure the append-only file is on with appendfsync always"
            )
        elif not persistence.aof_enabled:
            log.warning(
                "\n"
                + "!" * 78
                + "\n!! REDIS APPEND-ONLY FILE IS OFF: meters, rounds and the journal "
                "can be lost\n!! on a restart. Run redis-server with --appendonly yes "
                "--appendfsync always.\n" + "!" * 78
            )
        elif persistence.appendfsync != "always":
            log.warning(
                "redis appendfsync=%s: an acknowledged write can be lost in the last "
                "second before a crash; use appendfsync always (or --wait-replicas)",
                persistence.appendfsync,
            )
        for rules in self.config.rules:
            await apply_rules(self.store, rules)
            log.info(
                "rules submission applied: %d link groups, %d meters, %d tables",
                len(rules.link_groups),
                len(rules.meters),
                len(rules.tables),
            )
        host, _, port = self.config.listen.rpartition(":")
        self.port = self.server.add_insecure_port(f"{host}:{port}")
        if self.port == 0:
            raise OSError(f"cannot listen on {self.config.listen}")
        if self.config.metrics_port is not None:
            self._metrics_http = start_http_server(
                self.config.metrics_port, addr=host or "0.0.0.0", registry=self.metrics.registry
            )
            self.metrics_port = int(self._metrics_http[0].server_port)
        await self.server.start()
        await self._refresh_meters()
        self._refresher = asyncio.create_task(self._refresh_forever())
        for service in ("", *SERVICE_NAMES):
            await self.health.set(service, health_pb2.HealthCheckResponse.SERVING)
        log.info(
            "controller serving on %s:%d (metrics on port %s)",
            host,
            self.port,
            self.metrics_port or "off",
        )

    async def _refresh_meters(self) -> None:
        try:
            self.metrics.set_meter_states(await self.store.list_meters())
        except StoreUnavailable as error:
            log.warning("cannot refresh meter metrics: %s", error)

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.refresh_interval_s)
            try:
                await self._refresh_meters()
            except Exception:  # keep refreshing; the next round may succeed
                log.exception("meter metrics refresh failed")

    async def stop(self, grace_s: float = 5.0) -> None:
        """Report NOT_SERVING, finish calls in flight (up to ``grace_s``), close everything."""
        await self.health.enter_graceful_shutdown()
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
        await self.server.stop(grace_s)
        if self._metrics_http is not None:
            http, thread = self._metrics_http
            http.shutdown()
            http.server_close()
            thread.join(timeout=5)
        await self.store.close()

    async def wait(self) -> None:
        """Serve until the server stops."""
        await self.server.wait_for_termination()

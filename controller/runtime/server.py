"""Wiring: the grpc.aio server, TLS, access, health, reflection, metrics and the store.

:class:`ControllerServer` is what ``jackpot-controller serve`` runs and what the tests start
in-process on a free port. The controller is stateless: any number of replicas may serve
the same Redis.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio  # type: ignore[attr-defined]
from grpc_reflection.v1alpha import reflection, reflection_pb2

from controller.api import reflection_v1
from controller.api.admin_service import AdminService
from controller.api.interceptor import ServerInterceptor
from controller.api.limits import RateLimiter, StreamSlots
from controller.api.liveness import TableLiveness
from controller.api.meter_watch import MeterWatcher
from controller.api.peers import Authenticator, DenyList
from controller.api.table_service import TableService
from controller.api.unregistered import add_unregistered
from controller.domain.payout_compliance import DEFAULT, PRESETS, PayoutCompliance
from controller.domain.submission import RulesSubmission
from controller.observability.http import HttpEndpoint
from controller.observability.metrics import CODE_LABELS, Metrics
from controller.runtime.rules_file import apply as apply_rules
from controller.security.position_key import read_position_key
from controller.security.tls import ServerCertificates, TLSFiles, is_loopback
from controller.store.connection import follow_primary
from controller.store.persistence import Persistence
from controller.store.redis_store import DEFAULT_MAX_CONNECTIONS, RedisStore
from controller.store.rounds import DEFAULT_MAX_ROUND_STEP, DEFAULT_ROUND_RETENTION_SECONDS
from controller.store.state_guard import StateGuard
from controller.web.app import WebApp
from jackpot.errors import FailedPrecondition, StoreUnavailable
from jackpot.stopping import cancel_and_wait
from jackpot.v1 import jackpot_pb2, jackpot_pb2_grpc

log = logging.getLogger("controller.server")

SERVICE_NAMES = (
    jackpot_pb2.DESCRIPTOR.services_by_name["TableService"].full_name,
    jackpot_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name,
)
LINK_GROUP_HEALTH = "jackpot.v1.LinkGroup/"
"""The health service name of one link group is this prefix and its id."""
MAX_REQUEST_BYTES = 256 * 1024
"""The largest request body accepted (the largest real one, a table registration with
written paytables, is a few kilobytes); a larger one is refused by gRPC before decoding."""
MAX_CONCURRENT_RPCS = 4096
"""Calls in progress at once on one controller, streams included (keep ``max_streams`` well
below it, so that unary calls always find room)."""
MAX_STREAMS_PER_CONNECTION = 100
"""Calls in progress at once on one client connection (HTTP/2 streams); a client that
sends more waits for one of its own to finish."""
MAX_CALLS_PER_CALLER = 64
"""Calls in progress at once for one identity, streams included (a table makes one call at a
time and holds one WatchMeters stream): one certificate cannot take the controller's
:data:`MAX_CONCURRENT_RPCS`."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """How to run one controller.

    ``listen`` is HOST:PORT (port 0 picks a free one). ``tls`` None serves plaintext with no
    identities (development only: refused unless ``listen`` is loopback). ``metrics_port``
    None disables the HTTP endpoint (0 picks a free one), as ``web_port`` does the meter
    signs and the floor view (:mod:`controller.web`); ``wait_replicas`` > 0 makes every
    acknowledged write wait for that many Redis replicas. ``redis_url`` may be a
    ``sentinel://`` URL (:mod:`controller.store.connection`); ``redis_password`` and
    ``sentinel_password`` are never logged or shown (they stay out of ``repr``).
    ``reuse_port`` and ``metrics_dir`` make it one worker of ``serve --workers N``
    (:mod:`controller.runtime.workers`).
    """

    listen: str = "127.0.0.1:50051"
    redis_url: str = "redis://127.0.0.1:6379/0"
    tls: TLSFiles | None = None
    deny_list: Path | None = None
    position_key: Path | None = (
        None  # the macs over tables' positions (controller.security.position_key)
    )
    redis_password: str | None = field(default=None, repr=False)
    sentinel_password: str | None = field(default=None, repr=False)
    metrics_port: int | None = 9102
    web_port: int | None = None  # the signs and the floor view (controller.web); 0: any free
    round_retention_seconds: int = DEFAULT_ROUND_RETENTION_SECONDS
    max_round_step: int = DEFAULT_MAX_ROUND_STEP
    wait_replicas: int = 0
    wait_timeout_ms: int = 1000
    refresh_interval_s: float = 2.0  # Redis's health, durability settings and meter gauges
    table_calls_per_s: float = 2.0
    table_call_burst: int = 20
    client_calls_per_s: float = 10.0
    client_call_burst: int = 20
    max_streams: int = 1000
    max_streams_per_caller: int = 8
    max_calls_per_caller: int = MAX_CALLS_PER_CALLER
    first_message_s: float = 10.0  # a started call's request must arrive this soon
    handshake_timeout_s: float = 10.0  # a connection's TLS handshake (gRPC and the web port)
    max_connection_idle_s: float = 300.0  # a gRPC connection without calls is closed then
    redis_max_connections: int = DEFAULT_MAX_CONNECTIONS
    rules: tuple[RulesSubmission, ...] = ()  # applied at start, in order
    first_install: bool = False  # a Redis without an installation record is a new one
    reuse_port: bool = False  # one of the workers sharing ``listen`` (SO_REUSEPORT)
    metrics_dir: str | None = (
        None  # the workers' PROMETHEUS_MULTIPROC_DIR (controller.runtime.workers)
    )
    # what a hand-pay needs (tax-form reference, witness): docs/payout-compliance.md; the
    # default is the CLI's, us-default (``PRESETS[NONE]`` asks for nothing)
    payout_compliance: PayoutCompliance = PRESETS[DEFAULT]


def _version() -> str:
    try:
        return metadata.version("table-jackpot")
    except metadata.PackageNotFoundError:
        return "0+unknown"


class ControllerServer:
    """One controller process: start, serve, stop."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.host = config.listen.rpartition(":")[0]  # "[::]" for IPv6
        if config.tls is None and not is_loopback(self.host):
            raise ValueError(
                f"plaintext (--insecure) is for development on loopback only, not {self.host!r}"
                "; configure mutual TLS (--tls-cert, --tls-key, --client-ca)"
            )
        self.metrics = Metrics(_version(), config.metrics_dir)
        self.metrics.redis_replicas_required.set(config.wait_replicas)
        self.store = RedisStore.from_url(
            config.redis_url,
            password=config.redis_password,
            sentinel_password=config.sentinel_password,
            max_connections=config.redis_max_connections,
            round_retention_seconds=config.round_retention_seconds,
            max_round_step=config.max_round_step,
            wait_replicas=config.wait_replicas,
            wait_timeout_ms=config.wait_timeout_ms,
        )
        self.store.gateway.on_corrupt = self.metrics.record_corrupt
        self.deny_list = (
            DenyList(config.deny_list, self.metrics.revoked_certificates.set)
            if config.deny_list
            else None
        )
        self.position_key = read_position_key(config.position_key) if config.position_key else None
        self.certificates = (
            ServerCertificates(config.tls, self.metrics.set_server_certificates)
            if config.tls
            else None
        )
        self.watcher = MeterWatcher(self.store.catalog.meter_values)
        self.guard = StateGuard(
            self.store,
            first_install=config.first_install,
            expected=frozenset(
                group.link_group_id for rules in config.rules for group in rules.link_groups
            ),
        )
        self.guard.learn_tables(
            (table.table_id, table.link_group_id)
            for rules in config.rules
            for table in rules.table_configs()
        )
        self._rules_applied = False
        self._metered: set[str] = set()  # tables whose series are initialised
        self.health = health_aio.HealthServicer()
        self.authenticator = Authenticator(
            insecure=config.tls is None,
            deny_list=self.deny_list,
            observe=self.metrics.set_client_certificate,
        )
        self.liveness = TableLiveness(self.store)
        self.interceptor = ServerInterceptor(
            self.metrics,
            self.authenticator,
            table_rates=RateLimiter(config.table_calls_per_s, config.table_call_burst),
            client_rates=RateLimiter(config.client_calls_per_s, config.client_call_burst),
            streams=StreamSlots(config.max_streams, config.max_streams_per_caller),
            calls=StreamSlots(
                MAX_CONCURRENT_RPCS, config.max_calls_per_caller, "calls in progress"
            ),
            first_message_s=config.first_message_s,
            liveness=self.liveness,
        )
        self.server = aio.server(
            interceptors=[self.interceptor],
            options=[
                ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
                # A second controller on a used port fails to start; workers share theirs.
                ("grpc.so_reuseport", 1 if config.reuse_port else 0),
                ("grpc.max_concurrent_streams", MAX_STREAMS_PER_CONNECTION),
                # A connection that does not finish its TLS handshake in time is closed (gRPC's
                # default is 120 s); one without calls for max_connection_idle_s too (clients
                # reconnect at their next call).
                ("grpc.server_handshake_timeout_ms", int(config.handshake_timeout_s * 1000)),
                ("grpc.max_connection_idle_ms", int(config.max_connection_idle_s * 1000)),
                # Clients ping every 20 s to find dead connections (jackpot/tls.py).
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
                # No bandwidth-delay probing: it pings to grow flow-control windows for bulk
                # transfers, and every call here is a few hundred bytes (2% of the CPU of a
                # round went to it).
                ("grpc.http2.bdp_probe", 0),
            ],
            maximum_concurrent_rpcs=MAX_CONCURRENT_RPCS,
        )
        # The tables' methods registered (a pending request each: calls that arrive together
        # are taken together); the others not: grpc.aio waits on every pending request at
        # every call (controller/api/unregistered.py).
        jackpot_pb2_grpc.add_TableServiceServicer_to_server(
            TableService(self.store, self.metrics, self.watcher, self.guard, self.position_key),
            self.server,
        )
        add_unregistered(
            jackpot_pb2_grpc.add_AdminServiceServicer_to_server,
            AdminService(
                self.store,
                self.metrics,
                self.guard,
                self.check_state,
                self.config.payout_compliance,
            ),
            self.server,
        )
        add_unregistered(health_pb2_grpc.add_HealthServicer_to_server, self.health, self.server)
        reflected = (
            *SERVICE_NAMES,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
            reflection_v1.SERVICE_NAME,
        )
        reflection.enable_server_reflection(reflected, self.server)
        reflection_v1.add_v1_reflection(reflected, self.server)  # what current tools ask first
        self.port = 0
        self.metrics_port = 0
        self.web_port = 0
        self.web: WebApp | None = None
        self.serving = False
        self.redis_up = False
        self._http: HttpEndpoint | None = None
        self._refresher: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Check Redis, report its durability, open the ports, then report SERVING."""
        persistence = await self.store.server.persistence()
        self.metrics.set_persistence(persistence)
        log.info(
            "redis %s role=%s appendonly=%s appendfsync=%s replicas=%d",
            persistence.redis_version,
            persistence.role,
            "yes" if persistence.aof_enabled else "no",
            persistence.appendfsync,
            persistence.connected_replicas,
        )
        _warn_about(persistence.aof_enabled, persistence.appendfsync)
        await self._check_state()
        address = self.config.listen
        if self.certificates is None:
            log.warning(
                "serving PLAINTEXT gRPC on %s without identities (--insecure): every caller "
                "may call everything; for development only",
                address,
            )
        try:
            if self.certificates is None:
                self.port = self.server.add_insecure_port(address)
            else:
                self.port = self.server.add_secure_port(address, self.certificates.credentials())
        except RuntimeError:  # gRPC's "Failed to bind"
            self.port = 0
        if self.port == 0:
            raise OSError(f"cannot listen on {address} (in use, or not an address of this host)")
        if self.config.metrics_port is not None:
            try:
                self._http = HttpEndpoint(
                    self.host.strip("[]") or "0.0.0.0",
                    self.config.metrics_port,
                    self.metrics.exposed,
                    self._serves,
                    lambda: self.serving,
                )
            except OSError as error:
                raise OSError(
                    f"cannot serve metrics on port {self.config.metrics_port}: "
                    f"{error.strerror or error}"
                ) from None
            self.metrics_port = self._http.port
        if self.config.web_port is not None:
            await self._start_web(self.config.web_port)
        self.metrics.initialise_rpcs(_served_rpcs(), CODE_LABELS)
        await self.server.start()
        await self._refresh_meters()
        self.serving = True
        await self._set_health(redis_up=True)
        self._refresher = asyncio.create_task(self._refresh_forever())
        self.liveness.start()
        log.info(
            "controller serving on %s:%d with %s (metrics and /healthz on port %s, "
            "signs and floor view on port %s)",
            self.host,
            self.port,
            "mutual TLS" if self.certificates else "no TLS",
            self.metrics_port or "off",
            self.web_port or "off",
        )

    async def _start_web(self, port: int) -> None:
        """Open the web port: the signs and the floor view, with the gRPC port's TLS files."""
        self.web = WebApp(
            self.store,
            self.metrics,
            self.watcher,
            self.authenticator,
            host=self.host.strip("[]") or "0.0.0.0",
            port=port,
            tls=self.config.tls,
            handshake_timeout_s=self.config.handshake_timeout_s,
            rules=self.config.rules,
            payout_compliance=self.config.payout_compliance,
        )
        try:
            await self.web.start()
        except OSError as error:
            reason = error.strerror or error
            raise OSError(f"cannot serve the web pages on port {port}: {reason}") from None
        self.web_port = self.web.port

    def reload(self) -> None:
        """Re-read what may change while serving (SIGHUP): the deny list. Certificates are
        re-read by themselves when their files change."""
        if self.deny_list is not None:
            self.deny_list.reload()

    async def _check_state(self) -> None:
        """Check every link group's state (:class:`StateGuard`); once Redis is installed,
        apply the Rules Submissions (never in a lost or stopped link group) and check again."""
        await self.guard.check()
        if self.guard.installed and not self._rules_applied:
            for rules in self.config.rules:
                await apply_rules(self.store, rules, skip=self.guard.problems)
                log.info(
                    "rules submission applied: %d link groups, %d meters, %d tables",
                    len(rules.link_groups),
                    len(rules.meters),
                    len(rules.tables),
                )
            self._rules_applied = True
            await self.guard.check()
        tables = [
            t for t in await self.store.tables.list_tables() if t.table_id not in self._metered
        ]
        self.guard.learn_tables((table.table_id, table.link_group_id) for table in tables)
        self.metrics.initialise_tables(tables)  # the series of tables not seen before
        self._metered.update(table.table_id for table in tables)
        self.metrics.set_link_groups(self.guard.known(), self.guard.problems)
        for group in self.guard.seen:
            if group not in self.guard.problems:
                try:
                    exported_at_ms = (await self.store.journal.checkpoint(group)).exported_at_ms
                except FailedPrecondition as error:  # a checkpoint the codec refuses
                    log.error("link group %s: %s", group, error)
                    exported_at_ms = 0  # shown as never exported: the export alert fires
                entries = await self.store.journal.length(group)
                self.metrics.set_journal(group, entries, exported_at_ms)
                self.metrics.set_counters(group, await self.store.journal.counters(group))
                pending = await self.store.jackpots.list_pending_jackpots(group)
                self.metrics.set_pending_jackpots(group, pending)

    async def check_state(self) -> None:
        """Check every link group's state now and report it in health and metrics (the
        refresh loop does this every ``refresh_interval_s``; a resume does it at once)."""
        await self._check_state()
        await self._set_health(redis_up=self.redis_up)

    def _serves(self) -> bool:
        return self.serving and self.redis_up and not self.guard.nothing_to_serve()

    async def _set_health(self, *, redis_up: bool) -> None:
        """SERVING while the controller serves, Redis answers and some known link group is
        sound; NOT_SERVING otherwise (gRPC health, ``/healthz``, ``jackpot_redis_up``). Each
        link group has its own service, ``jackpot.v1.LinkGroup/<id>``."""
        self.redis_up = redis_up
        self.metrics.redis_up.set(1 if redis_up else 0)
        status = _status(self._serves())
        for service in ("", *SERVICE_NAMES):
            await self.health.set(service, status)
        for group in self.guard.known():
            await self.health.set(
                LINK_GROUP_HEALTH + group,
                _status(self.serving and redis_up and group not in self.guard.problems),
            )

    async def _refresh_meters(self) -> None:
        try:
            self.metrics.set_meter_states(await self.store.catalog.list_meters())
        except StoreUnavailable as error:
            log.warning("cannot refresh meter metrics: %s", error)

    async def _check_redis(self) -> None:
        """Read Redis's durability settings again (they can change at runtime) and follow
        whether it answers at all."""
        try:
            persistence = await asyncio.wait_for(
                self._primary_persistence(), timeout=max(1.0, self.config.refresh_interval_s)
            )
        except (StoreUnavailable, TimeoutError) as error:
            if self.redis_up:
                reason = error or "no answer in time"
                log.error("Redis does not answer: NOT_SERVING until it does (%s)", reason)
                await self._set_health(redis_up=False)
            return
        self.metrics.set_persistence(persistence)
        if not self.redis_up:
            log.warning("Redis answers again")
        self.redis_up = True
        await self.check_state()
        await self._refresh_meters()

    async def _primary_persistence(self) -> Persistence:
        """On a sentinel:// URL, ask the Sentinels for the primary first (so that a primary
        replaced while still up is left within one refresh); then the durability settings of
        the server the writes go to."""
        await follow_primary(self.store.client)
        return await self.store.server.persistence()

    async def _refresh_forever(self) -> None:
        while self.serving:  # also ends it should a cancellation be lost (wait_for in 3.11)
            await asyncio.sleep(self.config.refresh_interval_s)
            try:
                await self._check_redis()
            except Exception:  # keep refreshing; the next round may succeed
                log.exception("refreshing Redis's state failed")

    async def stop(self, grace_s: float = 5.0) -> None:
        """Report NOT_SERVING, finish calls in flight (up to ``grace_s``), close everything."""
        self.serving = False
        await self.health.enter_graceful_shutdown()
        if self._refresher is not None:  # one cancel can be lost (jackpot.stopping)
            await cancel_and_wait(self._refresher, max(2.0, self.config.refresh_interval_s * 2))
        if self.web is not None:
            await self.web.close()
        await self.liveness.close()
        await self.watcher.close()
        await self.server.stop(grace_s)
        if self._http is not None:
            self._http.close()
        await self.store.close()

    async def wait(self) -> None:
        """Serve until the server stops."""
        await self.server.wait_for_termination()


def _status(serving: bool) -> health_pb2.HealthCheckResponse.ServingStatus.ValueType:
    return (
        health_pb2.HealthCheckResponse.SERVING
        if serving
        else health_pb2.HealthCheckResponse.NOT_SERVING
    )


def _served_rpcs() -> list[tuple[str, str, str]]:
    """(grpc_type, grpc_service, grpc_method) of every RPC this server serves."""
    services = [
        *jackpot_pb2.DESCRIPTOR.services_by_name.values(),
        health_pb2.DESCRIPTOR.services_by_name["Health"],
        reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"],
        reflection_v1.v1_file().services_by_name["ServerReflection"],
    ]
    kinds = {
        (False, False): "unary",
        (False, True): "server_stream",
        (True, False): "client_stream",
        (True, True): "bidi_stream",
    }
    return [
        (kinds[(m.client_streaming, m.server_streaming)], service.full_name, m.name)
        for service in services
        for m in service.methods
    ]


def _warn_about(aof_enabled: bool | None, appendfsync: str) -> None:
    """Say loudly when an acknowledged write may not survive a Redis restart."""
    if aof_enabled is None:
        log.warning(
            "cannot read Redis's persistence settings (CONFIG is disabled); make "
            "sure the append-only file is on with appendfsync always"
        )
    elif not aof_enabled:
        log.warning(
            "\n" + "!" * 78 + "\n!! REDIS APPEND-ONLY FILE IS OFF: meters, rounds and the journal "
            "can be lost\n!! on a restart. Run redis-server with --appendonly yes "
            "--appendfsync always.\n" + "!" * 78
        )
    elif appendfsync != "always":
        log.warning(
            "redis appendfsync=%s: an acknowledged write can be lost in the last "
            "second before a crash; use appendfsync always (or --wait-replicas)",
            appendfsync,
        )

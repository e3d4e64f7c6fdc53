"""Prometheus metrics of one controller process.

Business metrics are labelled by meter, wager kind or paytable line (bounded: what a casino
configures), never by table on a histogram. Money is exposed in cents (``*_cents``), as
Prometheus gauges and counters; the counters of money are accumulated here as exact integers
of microcents and only converted at exposition, because the text format has no integer type.

* Gauges (state, the same on every replica; aggregate with ``max``): meter, reserve and
  pending jackpots per meter, refreshed from Redis and after every transition.
* Counters (events this replica applied; aggregate with ``sum``): wagers, contributions,
  hits (per meter and paytable line), awards (per wager kind and award kind), voids,
  idempotent replays. Every counter whose label values are known from the registered tables
  is created at zero when the controller starts or a table is registered, so that
  ``increase()`` sees the first event too.
* gRPC server metrics with the go-grpc-prometheus names and code names (``grpc_code="OK"``,
  ``"Unavailable"``), every served method and code created at zero, so stock dashboards and
  the rules in deploy/ work.
* The process and Python collectors (``process_*``, ``python_*``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from threading import Lock

from prometheus_client import (
    GC_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from controller.domain.config import TableConfig
from controller.domain.money import MICROCENTS_PER_CENT, floor_cents
from controller.domain.paytables import AwardKind
from controller.domain.records import (
    AcceptedWager,
    Contribution,
    LockoutResult,
    MeterState,
    MeterValue,
    SeatOutcome,
    SeatResult,
    SettleResult,
    VoidResult,
)
from controller.store.redis_store import Persistence

# No *_created series: they double the series count and no dashboard here reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]

# Seconds; around the latency objective of a settlement (tens of milliseconds).
LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class _ExactMoneyCounter(Collector):
    """A counter of money with one label (a meter, a wager kind) kept as integer microcents,
    exposed in cents."""

    def __init__(self, name: str, documentation: str, label: str = "meter") -> None:
        self._name = name
        self._documentation = documentation
        self._label = label
        self._totals_microcents: dict[str, int] = {}
        self._lock = Lock()

    def add(self, key: str, microcents: int) -> None:
        """Add ``microcents`` (0 creates the series); a counter only goes up."""
        if microcents < 0:
            raise ValueError(f"a counter cannot go down ({microcents} microcents)")
        with self._lock:
            self._totals_microcents[key] = self._totals_microcents.get(key, 0) + microcents

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(self._name, self._documentation, labels=[self._label])
        with self._lock:
            for key, total in sorted(self._totals_microcents.items()):
                family.add_metric([key], total / MICROCENTS_PER_CENT)
        yield family

    def value_microcents(self, key: str) -> int:
        """The exact total for ``key`` (for tests)."""
        with self._lock:
            return self._totals_microcents.get(key, 0)


class Metrics:
    """Every metric of one controller, in its own registry (so tests can build many)."""

    def __init__(self, version: str = "0") -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.meter_cents = Gauge(
            "jackpot_meter_cents", "Meter value in cents (rounded down).", ["meter"], registry=r
        )
        self.reserve_cents = Gauge(
            "jackpot_reserve_cents",
            "Reserve (hidden) pool in cents (rounded down).",
            ["meter"],
            registry=r,
        )
        self.pending_jackpots = Gauge(
            "jackpot_pending_jackpots",
            "Jackpots waiting for a supervisor's validation.",
            ["meter"],
            registry=r,
        )
        self.wagers = Counter(
            "jackpot_wagers",
            "Wagers accepted at lockout, per meter they feed.",
            ["meter"],
            registry=r,
        )
        self.voids = Counter(
            "jackpot_voids", "Wagers returned by a voided round.", ["meter"], registry=r
        )
        self.hits = Counter(
            "jackpot_hits",
            "Percentage-of-meter awards (hits), by meter and the paytable line paid.",
            ["meter", "line"],
            registry=r,
        )
        self.awards = Counter(
            "jackpot_awards",
            "Paid awards (envy bonuses included), by wager kind and award kind.",
            ["wager", "kind"],
            registry=r,
        )
        self.replays = Counter(
            "jackpot_replayed_requests",
            "Retried requests answered from the stored reply.",
            ["phase"],
            registry=r,
        )
        self.contributions_cents = _ExactMoneyCounter(
            "jackpot_contributions_cents_total",
            "Contributions of accepted wagers in cents (meter and reserve parts).",
        )
        self.void_contributions_cents = _ExactMoneyCounter(
            "jackpot_void_contributions_cents_total",
            "Contributions taken back out of the meter and reserve by voided rounds, in cents.",
        )
        self.awards_cents = _ExactMoneyCounter(
            "jackpot_awards_cents_total",
            "Paid awards (envy bonuses included) by wager kind, in cents.",
            label="wager",
        )
        self.meter_awards_cents = _ExactMoneyCounter(
            "jackpot_meter_awards_cents_total",
            "Percentage-of-meter awards (hits) taken from each meter, in cents.",
        )
        r.register(self.contributions_cents)
        r.register(self.void_contributions_cents)
        r.register(self.awards_cents)
        r.register(self.meter_awards_cents)
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        r.register(GC_COLLECTOR)
        self.redis_up = Gauge(
            "jackpot_redis_up",
            "1 while Redis answers this controller (checked every few seconds), else 0.",
            registry=r,
        )
        self.aof_enabled = Gauge(
            "jackpot_redis_aof_enabled", "1 when Redis has the append-only file on.", registry=r
        )
        self.fsync_always = Gauge(
            "jackpot_redis_appendfsync_always",
            "1 when Redis fsyncs every write before answering.",
            registry=r,
        )
        self.redis_primary = Gauge(
            "jackpot_redis_primary",
            "1 when the Redis this controller writes to reports the primary (master) role, 0 "
            "when it reports replica (a failover not yet followed).",
            registry=r,
        )
        self.redis_connected_replicas = Gauge(
            "jackpot_redis_connected_replicas",
            "Replicas connected to the Redis this controller writes to.",
            registry=r,
        )
        self.redis_replicas_required = Gauge(
            "jackpot_redis_replicas_required",
            "Replicas that must confirm every write before it is acknowledged "
            "(--wait-replicas; 0: none).",
            registry=r,
        )
        Info("jackpot_build", "Controller version.", registry=r).info({"version": version})
        self.link_group_serving = Gauge(
            "jackpot_link_group_serving",
            "1 while the link group's state in Redis is sound and served; 0 while it is lost "
            "or stopped (Redis lacks state it had: see the controller's log and the RUNBOOK)",
            ["link_group"],
            registry=r,
        )
        self.journal_entries = Gauge(
            "jackpot_journal_entries",
            "Journal entries the link group's stream holds in Redis (exported entries are "
            "trimmed by jackpotctl journal trim)",
            ["link_group"],
            registry=r,
        )
        self.journal_exported_at = Gauge(
            "jackpot_journal_last_export_timestamp_seconds",
            "When the link group's journal was last exported (jackpotctl journal export); 0: never",
            ["link_group"],
            registry=r,
        )
        self.access_denied = Counter(
            "jackpot_access_denied",
            "Calls refused for who made them: no or revoked certificate, a role that may not "
            "call the method, a table's certificate naming another table.",
            ["grpc_method", "role", "reason"],
            registry=r,
        )
        self.meter_streams = Gauge(
            "jackpot_meter_streams", "WatchMeters streams open now.", registry=r
        )
        self.grpc_started = Counter(
            "grpc_server_started",
            "RPCs started on the server.",
            ["grpc_type", "grpc_service", "grpc_method"],
            registry=r,
        )
        self.grpc_handled = Counter(
            "grpc_server_handled",
            "RPCs completed on the server, by status code.",
            ["grpc_type", "grpc_service", "grpc_method", "grpc_code"],
            registry=r,
        )
        self.grpc_latency = Histogram(
            "grpc_server_handling_seconds",
            "Time to handle an RPC, in seconds.",
            ["grpc_type", "grpc_service", "grpc_method"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )

    # ------------------------------------------------------------ series known in advance

    def initialise_rpcs(self, rpcs: Iterable[tuple[str, str, str]], codes: Iterable[str]) -> None:
        """Create every (grpc_type, grpc_service, grpc_method) at zero, with every code."""
        names = tuple(codes)
        for labels in rpcs:
            self.grpc_started.labels(*labels)
            self.grpc_latency.labels(*labels)
            for code in names:
                self.grpc_handled.labels(*labels, code)

    def initialise_tables(self, tables: Iterable[TableConfig]) -> None:
        """Create at zero every business series the tables' wagers can move: wagers,
        contributions and voids of each meter; hits of each percentage line; awards of each
        wager kind and award kind (envy included); the replay counters."""
        for phase in ("lockout", "settle", "void"):
            self.replays.labels(phase)
        for table in tables:
            for offer in table.wagers:
                self.awards_cents.add(offer.wager, 0)
                for meter_id in offer.meter_ids:
                    self.wagers.labels(meter_id)
                    self.voids.labels(meter_id)
                    self.contributions_cents.add(meter_id, 0)
                    self.void_contributions_cents.add(meter_id, 0)
                    self.meter_awards_cents.add(meter_id, 0)
                for line, rule in offer.paytable.lines:
                    self.awards.labels(offer.wager, str(rule.kind))
                    if rule.kind is AwardKind.PERCENT_OF_METER:
                        self.hits.labels(offer.meter_of(rule), line)
                if offer.paytable.envy_lines:
                    self.awards.labels(offer.wager, str(AwardKind.ENVY))

    # ------------------------------------------------------------ state

    def set_link_groups(self, known: Iterable[str], problems: Iterable[str]) -> None:
        """Whether each known link group is served (1) or lost or stopped (0)."""
        not_served = set(problems)
        for group in known:
            self.link_group_serving.labels(group).set(0 if group in not_served else 1)

    def set_journal(self, link_group_id: str, entries: int, exported_at_ms: int) -> None:
        """The journal's length in Redis and when it was last exported (ms since the epoch)."""
        self.journal_entries.labels(link_group_id).set(entries)
        self.journal_exported_at.labels(link_group_id).set(exported_at_ms / 1000)

    def set_meters(self, meters: Iterable[MeterValue]) -> None:
        """Show meter values (from a transition's answer)."""
        for meter in meters:
            self.meter_cents.labels(meter.meter_id).set(meter.amount_cents)

    def set_meter_states(self, states: Iterable[MeterState]) -> None:
        """Show meters, reserves and pending counts read from Redis."""
        for state in states:
            self.meter_cents.labels(state.meter_id).set(floor_cents(state.amount_microcents))
            self.reserve_cents.labels(state.meter_id).set(floor_cents(state.reserve_microcents))
            self.pending_jackpots.labels(state.meter_id).set(state.pending_jackpots)

    def set_persistence(self, persistence: Persistence) -> None:
        """Show Redis's role, replicas and durability settings as last read (the append-only
        file's settings not when they cannot be read)."""
        self.redis_primary.set(1 if persistence.role == "master" else 0)
        self.redis_connected_replicas.set(persistence.connected_replicas)
        if persistence.aof_enabled is None:
            return
        self.aof_enabled.set(1 if persistence.aof_enabled else 0)
        self.fsync_always.set(1 if persistence.appendfsync == "always" else 0)

    # ------------------------------------------------------------ events

    def record_lockout(self, result: LockoutResult) -> None:
        """Count a lockout this replica applied (replays are counted apart)."""
        if result.replayed:
            self.replays.labels("lockout").inc()
            return
        for contribution in _contributions(result.accepted):
            self.wagers.labels(contribution.meter_id).inc()
            self.contributions_cents.add(contribution.meter_id, contribution.total_microcents)
        self.set_meters(result.meters)

    def record_settle(self, result: SettleResult) -> None:
        """Count the awards and hits of a settlement this replica applied."""
        if result.replayed:
            self.replays.labels("settle").inc()
            return
        for seat in _paid(result):
            microcents = seat.amount_cents * MICROCENTS_PER_CENT
            self.awards.labels(seat.wager, seat.award_kind).inc()
            self.awards_cents.add(seat.wager, microcents)
            if seat.pending_validation:  # a percentage of the meter: a hit
                self.hits.labels(seat.meter_id, seat.line).inc()
                self.meter_awards_cents.add(seat.meter_id, microcents)
                self.pending_jackpots.labels(seat.meter_id).inc()
        self.set_meters(result.meters)

    def record_void(self, result: VoidResult) -> None:
        """Count the wagers a void returned and take their contributions back out."""
        if result.replayed:
            self.replays.labels("void").inc()
            return
        for contribution in _contributions(result.reversed):
            self.voids.labels(contribution.meter_id).inc()
            self.void_contributions_cents.add(contribution.meter_id, contribution.total_microcents)
        self.set_meters(result.meters)


def _contributions(wagers: Iterable[AcceptedWager]) -> Iterator[Contribution]:
    return (contribution for wager in wagers for contribution in wager.contributions)


def _paid(result: SettleResult) -> Iterator[SeatResult]:
    return (seat for seat in result.results if seat.outcome is SeatOutcome.PAID)

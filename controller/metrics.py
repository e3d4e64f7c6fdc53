"""Prometheus metrics of one controller process.

Business metrics are labelled by meter (bounded: the meters a casino configures), never by
table on a histogram. Money is exposed in cents (``*_cents``), as Prometheus gauges and
counters; the counters of money are accumulated here as exact integers of microcents and
only converted at exposition, because the text format has no integer type.

* Gauges (state, the same on every replica; aggregate with ``max``): meter, reserve and
  pending jackpots per meter, refreshed from Redis and after every transition.
* Counters (events this replica applied; aggregate with ``sum``): wagers, contributions,
  hits, awards, voids, idempotent replays.
* gRPC server metrics with the go-grpc-prometheus names, so stock dashboards work.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from threading import Lock

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from controller.domain.money import MICROCENTS_PER_CENT, floor_cents
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
    """A counter of money per meter kept as integer microcents, exposed in cents."""

    def __init__(self, name: str, documentation: str) -> None:
        self._name = name
        self._documentation = documentation
        self._totals_microcents: dict[str, int] = {}
        self._lock = Lock()

    def add(self, meter_id: str, microcents: int) -> None:
        """Add ``microcents``; a counter only goes up."""
        if microcents < 0:
            raise ValueError(f"a counter cannot go down ({microcents} microcents)")
        with self._lock:
            self._totals_microcents[meter_id] = (
                self._totals_microcents.get(meter_id, 0) + microcents
            )

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(self._name, self._documentation, labels=["meter"])
        with self._lock:
            for meter_id, total in sorted(self._totals_microcents.items()):
                family.add_metric([meter_id], total / MICROCENTS_PER_CENT)
        yield family

    def value_microcents(self, meter_id: str) -> int:
        """The exact total for ``meter_id`` (for tests)."""
        with self._lock:
            return self._totals_microcents.get(meter_id, 0)


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
            "Percentage-of-meter awards (hits) by hand.",
            ["meter", "hand"],
            registry=r,
        )
        self.awards = Counter(
            "jackpot_awards",
            "Winning wagers and envy bonuses by award kind (meter empty: a fixed award).",
            ["meter", "kind"],
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
            "jackpot_awards_cents_total", "Awards won on progressive wagers, in cents."
        )
        r.register(self.contributions_cents)
        r.register(self.void_contributions_cents)
        r.register(self.awards_cents)
        self.aof_enabled = Gauge(
            "jackpot_redis_aof_enabled", "1 when Redis has the append-only file on.", registry=r
        )
        self.fsync_always = Gauge(
            "jackpot_redis_appendfsync_always",
            "1 when Redis fsyncs every write before answering.",
            registry=r,
        )
        Info("jackpot_build", "Controller version.", registry=r).info({"version": version})
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

    # ------------------------------------------------------------ state

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
        """Show the durability settings found at start (nothing when they cannot be read)."""
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
            self.awards.labels(seat.meter_id, seat.award_kind).inc()
            self.awards_cents.add(seat.meter_id, seat.amount_cents * MICROCENTS_PER_CENT)
            if seat.pending_validation:
                self.hits.labels(seat.meter_id, seat.hand).inc()
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

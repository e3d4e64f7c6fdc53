"""Prometheus metrics of one controller process.

Business metrics are labelled by meter, wager kind or paytable line (bounded: what a casino
configures), never by table on a histogram. Money is exposed in cents (``*_cents``), as
Prometheus gauges and counters; the counters of money are accumulated here as exact integers
of microcents and only converted at exposition, because the text format has no integer type.

* Gauges (state, the same on every replica; aggregate with ``max``): meter, reserve, reset,
  ceiling and pending jackpots per meter, refreshed from Redis and after every transition; the
  oldest pending jackpot's hit time per link group; which link group and game each meter and
  table belong to (``*_info``, value 1, for the dashboards' variables); and the exact
  probability that one wager hits each percentage line (from the odds of the table's
  paytable, :mod:`controller.domain.odds`), to compare with the hits counted.
* Actual against theoretical (docs/theoretical.md): this process's counts of settled wagers
  and of the paytable line each was paid on, per link group, game, wager kind and paytable
  (``jackpot_theoretical_*``, counted from the settlement's answer, no Redis work; aggregate
  with ``sum``), and each line's exact probability.
* Counters of business events (wagers, contributions, voids, hits per meter and paytable
  line, awards per wager kind and award kind, their amounts, the handle per table and wager
  kind): Redis counts them, in the same atomic step as the event (each link group's
  ``counters`` hash), and every replica shows Redis's totals, read every refresh (2 s) - so a
  step whose answer was lost is counted once all the same, and the replicas agree: aggregate
  with ``max``. Every series whose label
  values are known from the registered tables exists from zero, so that ``increase()`` sees
  the first event too. ``jackpot_replayed_requests_total`` counts what this replica answered
  from a stored reply (aggregate with ``sum``).
* gRPC server metrics with the go-grpc-prometheus names and code names (``grpc_code="OK"``,
  ``"Unavailable"``), every served method and code created at zero, so stock dashboards and
  the rules in deploy/ work.
* Certificates: when each expires (``jackpot_certificate_expiry_timestamp_seconds``: the
  controller's, its client CAs', and the last one each identity presented, bounded to
  :data:`MAX_CLIENT_EXPIRY_SERIES` identities) and how many are revoked
  (``jackpot_revoked_certificates``).
* The process and Python collectors (``process_*``, ``python_*``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from threading import Lock
from typing import TypeAlias

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID
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
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from controller.domain.config import MUST_HIT_BY, TableConfig, WagerOffer
from controller.domain.identity import Identity
from controller.domain.odds import paytable_odds
from controller.domain.records import Jackpot, MeterState
from controller.store.codec import CORRUPT_KINDS
from controller.store.persistence import Persistence
from jackpot.errors import CorruptRecord
from jackpot.kinds import AwardKind, IrregularityKind
from jackpot.money import MICROCENTS_PER_CENT, floor_cents
from jackpot.results import (
    ChipCountResult,
    IrregularityResult,
    LockoutResult,
    MeterValue,
    SeatOutcome,
    SettleResult,
    VoidResult,
)

# No *_created series: they double the series count and no dashboard here reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]

MAX_CLIENT_EXPIRY_SERIES = 2000
"""Client identities whose certificate expiry is exported (tables, signs and people: a
casino has hundreds); later ones are not, so that no series count grows without bound."""


def _cert_name(certificate: x509.Certificate) -> str:
    """A CA's or the controller's certificate as a label: common name and fingerprint."""
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common = str(names[0].value)[:64] if names else "?"
    return f"{common} {certificate.fingerprint(hashes.SHA256()).hex()[:16]}"


# Seconds; around the latency objective of a settlement (tens of milliseconds).
LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


def code_label(code: grpc.StatusCode) -> str:
    """A status code as the ``grpc_code`` label value of go-grpc-prometheus, which stock
    dashboards and the rules in deploy/ query: ``OK``, ``InvalidArgument``, ``Unavailable``."""
    if code is grpc.StatusCode.OK:
        return "OK"
    if code is grpc.StatusCode.CANCELLED:
        return "Canceled"  # Go's spelling
    return code.name.title().replace("_", "")


CODE_LABELS = tuple(code_label(code) for code in grpc.StatusCode)
"""Every ``grpc_code`` label value, for the series created at zero."""


@dataclass(frozen=True, slots=True)
class _Counted:
    """One counter Redis keeps: its metric name, help, labels, and the unit's size (money
    counted in microcents is shown in cents)."""

    name: str
    documentation: str
    labels: tuple[str, ...]
    per_unit: int = 1


COUNTED: dict[str, _Counted] = {
    "wagers": _Counted(
        "jackpot_wagers", "Wagers accepted at lockout, per meter they feed.", ("meter",)
    ),
    "contributions_microcents": _Counted(
        "jackpot_contributions_cents",
        "Contributions of accepted wagers in cents (meter and reserve parts).",
        ("meter",),
        MICROCENTS_PER_CENT,
    ),
    "voids": _Counted("jackpot_voids", "Wagers returned by a voided round.", ("meter",)),
    "void_contributions_microcents": _Counted(
        "jackpot_void_contributions_cents",
        "Contributions taken back out of the meter and reserve by voided rounds, in cents.",
        ("meter",),
        MICROCENTS_PER_CENT,
    ),
    "hits": _Counted(
        "jackpot_hits",
        "Percentage-of-meter awards (hits), by meter and the paytable line paid.",
        ("meter", "line"),
    ),
    "meter_awards_cents": _Counted(
        "jackpot_meter_awards_cents",
        "Percentage-of-meter awards (hits) taken from each meter, in cents.",
        ("meter",),
    ),
    "awards": _Counted(
        "jackpot_awards",
        "Paid awards (envy bonuses included), by wager kind and award kind.",
        ("wager", "kind"),
    ),
    "awards_cents": _Counted(
        "jackpot_awards_cents",
        "Paid awards (envy bonuses included) by wager kind and award kind, in cents: "
        "percent_of_meter and must_hit_by come from meters, the others are fixed.",
        ("wager", "kind"),
    ),
    "handle": _Counted(
        "jackpot_handle_wagers",
        "Wagers accepted at lockout, of every kind (fed meter or not), by table and wager kind "
        "(voided rounds' wagers are not taken back: jackpot_voids_total).",
        ("table", "wager"),
    ),
    "handle_cents": _Counted(
        "jackpot_handle_cents",
        "The handle: amounts wagered in the wagers accepted at lockout, in cents, by table and "
        "wager kind (voided rounds' wagers are not taken back).",
        ("table", "wager"),
    ),
    "void_wagers": _Counted(
        "jackpot_void_wagers",
        "Wagers returned by voided rounds, by table: with jackpot_handle_wagers_total, a "
        "table's void rate (alert JackpotTableVoidRateHigh).",
        ("table",),
    ),
    "voided_mystery_hits": _Counted(
        "jackpot_voided_mystery_hits",
        "Must-hit-by hits reversed by a supervisor's void of the round that won them, by meter.",
        ("meter",),
    ),
    "irregularities": _Counted(
        "jackpot_irregularities",
        "Irregularities recorded, by kind: chip counts that differed from the Progressive "
        "Payout Wagers accepted (chip_count, § 639a.8(b)) and the seeded irregularities tables "
        "reported (misdeal, wrong_card_count, cards_exposed, dealer_card_exposed, shoe_jam).",
        ("kind",),
    ),
}
"""The link groups' counters hash field kinds (controller/store/keys.py) and their metrics."""


class _StoredCounters(Collector):
    """The business counters as Redis keeps them (see the module): the last totals read of
    each link group, summed over the link groups, over series created at zero."""

    def __init__(self) -> None:
        self._zero: set[tuple[str, tuple[str, ...]]] = set()
        self._by_group: dict[str, dict[tuple[str, tuple[str, ...]], int]] = {}
        self._lock = Lock()

    def create(self, kind: str, *labels: str) -> None:
        """Make the series exist (at zero until Redis counts it)."""
        with self._lock:
            self._zero.add((kind, labels))

    def set_group(self, link_group_id: str, fields: Mapping[str, int]) -> None:
        """A link group's counters as read from Redis (``kind|label|label`` -> total)."""
        totals: dict[tuple[str, tuple[str, ...]], int] = {}
        for field, total in fields.items():
            kind, *labels = field.split("|")
            counted = COUNTED.get(kind)
            if counted is not None and len(labels) == len(counted.labels):
                totals[(kind, tuple(labels))] = int(total)
        with self._lock:
            self._by_group[link_group_id] = totals

    def value(self, kind: str, *labels: str) -> int:
        """The total of one series, in Redis's unit (for tests)."""
        with self._lock:
            return sum(group.get((kind, labels), 0) for group in self._by_group.values())

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            totals = dict.fromkeys(self._zero, 0)
            for group in self._by_group.values():
                for key, total in group.items():
                    totals[key] = totals.get(key, 0) + total
        for kind, counted in COUNTED.items():
            family = CounterMetricFamily(
                counted.name, counted.documentation, labels=list(counted.labels)
            )
            for (series_kind, labels), total in sorted(totals.items()):
                if series_kind == kind:
                    family.add_metric(list(labels), total / counted.per_unit)
            yield family


_WagerSeries: TypeAlias = tuple[Counter, dict[str, Counter]]
"""A wager's settled-wagers series and its hits series by paytable line."""

Labels: TypeAlias = tuple[str, str, str]
"""An RPC's (grpc_type, grpc_service, grpc_method)."""


class RpcSeries:
    """The ``grpc_server_*`` series of one RPC, looked up once rather than at every call."""

    def __init__(self, metrics: Metrics, labels: Labels) -> None:
        self.method = f"{labels[1]}/{labels[2]}"
        self.started = metrics.grpc_started.labels(*labels)
        self.latency = metrics.grpc_latency.labels(*labels)
        self._handled = metrics.grpc_handled
        self._labels = labels
        self._by_code: dict[grpc.StatusCode, Counter] = {}

    def handled(self, code: grpc.StatusCode) -> Counter:
        """The ``grpc_server_handled_total`` series of ``code``."""
        series = self._by_code.get(code)
        if series is None:
            series = self._handled.labels(*self._labels, code_label(code))
            self._by_code[code] = series
        return series


class Metrics:
    """Every metric of one controller, in its own registry (so tests can build many).

    ``multiprocess_dir``: this process is one of the workers of ``serve --workers N``, and
    ``PROMETHEUS_MULTIPROC_DIR`` named this directory before prometheus-client was imported
    (:mod:`controller.runtime.workers`). The counters, histograms and gauges then live in files
    there, and :attr:`exposed` - what the one metrics endpoint serves - merges every
    worker's: counters and histograms summed, state gauges the most recent value (the
    lowest for ``jackpot_redis_up`` and ``jackpot_link_group_serving``, the sum for
    streams), and adds this process's own collectors, which other workers do not export:
    the business counters Redis keeps, the build info, the ``process_*`` and ``python_*``
    series (of this worker).
    """

    def __init__(self, version: str = "0", multiprocess_dir: str | None = None) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.meter_cents = Gauge(
            "jackpot_meter_cents",
            "Meter value in cents (rounded down).",
            ["meter"],
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.reserve_cents = Gauge(
            "jackpot_reserve_cents",
            "Reserve (hidden) pool in cents (rounded down).",
            ["meter"],
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.pending_jackpots = Gauge(
            "jackpot_pending_jackpots",
            "Jackpots waiting for a supervisor's validation.",
            ["meter"],
            multiprocess_mode="max",
            registry=r,
        )
        self.reset_cents = Gauge(
            "jackpot_meter_reset_cents",
            "The amount in cents the meter resets to after a 100% award.",
            ["meter"],
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.ceiling_cents = Gauge(
            "jackpot_meter_ceiling_cents",
            "The meter's ceiling in cents (contributions beyond it go to overflow); 0: none.",
            ["meter"],
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.meter_info = Gauge(
            "jackpot_meter_info",
            "1 for each meter, labelled with its link group and game.",
            ["meter", "link_group", "game"],
            multiprocess_mode="max",
            registry=r,
        )
        self.table_info = Gauge(
            "jackpot_table_info",
            "1 for each registered table, labelled with its link group and game.",
            ["table", "link_group", "game"],
            multiprocess_mode="max",
            registry=r,
        )
        self.line_probability = Gauge(
            "jackpot_line_probability",
            "Probability that one wager of the kind hits the percentage-of-meter line, exact "
            "from the paytable's odds (one in 1/p wagers); compare with hits / wagers.",
            ["meter", "line", "wager"],
            multiprocess_mode="max",
            registry=r,
        )
        theoretical = ["link_group", "game", "wager", "paytable"]
        self.theoretical_wagers = Counter(
            "jackpot_theoretical_wagers",
            "Wagers settled by this process, by link group, game, wager kind and paytable "
            "(envy bonuses apart; replays not counted): the trials of actual against "
            "theoretical (docs/theoretical.md). Aggregate with sum.",
            theoretical,
            registry=r,
        )
        self.theoretical_hits = Counter(
            "jackpot_theoretical_hits",
            "Of those wagers, the ones paid on each paytable line (fixed and percentage lines): "
            "compare with jackpot_theoretical_wagers_total x jackpot_theoretical_line_probability."
            " Aggregate with sum.",
            [*theoretical, "line"],
            registry=r,
        )
        self.theoretical_probability = Gauge(
            "jackpot_theoretical_line_probability",
            "Exact probability (from the paytable's odds) that one wager is paid on the line.",
            [*theoretical, "line"],
            multiprocess_mode="max",
            registry=r,
        )
        self.oldest_pending_at = Gauge(
            "jackpot_oldest_pending_jackpot_timestamp_seconds",
            "When the link group's oldest jackpot waiting for validation was hit (seconds since "
            "the epoch, Redis's clock); 0: none waits. Its age: time() - this.",
            ["link_group"],
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.replays = Counter(
            "jackpot_replayed_requests",
            "Retried requests answered from the stored reply.",
            ["phase"],
            registry=r,
        )
        self.counted = _StoredCounters()
        own: list[Collector] = [
            self.counted,
            ProcessCollector(registry=None),
            PlatformCollector(registry=None),
            GC_COLLECTOR,
        ]
        self.redis_up = Gauge(
            "jackpot_redis_up",
            "1 while Redis answers this controller (checked every few seconds), else 0.",
            multiprocess_mode="livemin",
            registry=r,
        )
        self.aof_enabled = Gauge(
            "jackpot_redis_aof_enabled",
            "1 when Redis has the append-only file on.",
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.fsync_always = Gauge(
            "jackpot_redis_appendfsync_always",
            "1 when Redis fsyncs every write before answering.",
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.redis_primary = Gauge(
            "jackpot_redis_primary",
            "1 when the Redis this controller writes to reports the primary (master) role, 0 "
            "when it reports replica (a failover not yet followed).",
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.redis_connected_replicas = Gauge(
            "jackpot_redis_connected_replicas",
            "Replicas connected to the Redis this controller writes to.",
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.redis_replicas_required = Gauge(
            "jackpot_redis_replicas_required",
            "Replicas that must confirm every write before it is acknowledged "
            "(--wait-replicas; 0: none).",
            multiprocess_mode="mostrecent",
            registry=r,
        )
        build = Info("jackpot_build", "Controller version.", registry=None)
        build.info({"version": version})
        own.append(build)
        self.link_group_serving = Gauge(
            "jackpot_link_group_serving",
            "1 while the link group's state in Redis is sound and served; 0 while it is lost "
            "or stopped (Redis lacks state it had: see the controller's log and the RUNBOOK)",
            ["link_group"],
            multiprocess_mode="livemin",
            registry=r,
        )
        self.journal_entries = Gauge(
            "jackpot_journal_entries",
            "Journal entries the link group's stream holds in Redis (exported entries are "
            "trimmed by jackpotctl journal trim)",
            ["link_group"],
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.journal_exported_at = Gauge(
            "jackpot_journal_last_export_timestamp_seconds",
            "When the link group's journal was last exported (jackpotctl journal export); 0: never",
            ["link_group"],
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.access_denied = Counter(
            "jackpot_access_denied",
            "Calls refused for who made them: no or revoked certificate, a role that may not "
            "call the method, a table's certificate naming another table.",
            ["grpc_method", "role", "reason"],
            registry=r,
        )
        self.position_ahead = Counter(
            "jackpot_table_position_ahead",
            "Table calls refused because the table claimed a journal position ahead of its "
            "link group's state that this controller cannot verify it answered (no valid mac): "
            "only that table is refused (docs/journal.md, 'Verified positions').",
            ["table"],
            registry=r,
        )
        self.revoked_certificates = Gauge(
            "jackpot_revoked_certificates",
            "Certificates on the deny list in force (--deny-list).",
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self.certificate_expiry = Gauge(
            "jackpot_certificate_expiry_timestamp_seconds",
            "When a certificate expires (unix seconds): the controller's own "
            '(certificate="server"), each CA its clients chain to (certificate="ca", name: the '
            "CA's common name and fingerprint) and each client certificate seen "
            '(certificate="client", by role and name; at most '
            f"{MAX_CLIENT_EXPIRY_SERIES} identities, the last certificate seen of each).",
            ["certificate", "role", "name"],
            multiprocess_mode="mostrecent",
            registry=r,
        )
        self._server_expiry: set[tuple[str, str, str]] = set()
        self._client_expiry: set[tuple[str, str, str]] = set()
        self._expiry_lock = Lock()
        self._multiprocess = multiprocess_dir is not None
        self.corrupt_records = Counter(
            "jackpot_corrupt_records",
            "Reads of a stored record that is corrupt (JSON that does not parse, an amount that "
            "is not an integer, an unusable must-hit-by draw), by kind of record: each time a "
            "listing left one out or a request that needed one was refused with DATA_LOSS. "
            "The controller's log names the record and its Redis key.",
            ["kind"],
            registry=r,
        )
        for kind in CORRUPT_KINDS:
            self.corrupt_records.labels(kind)
        self.meter_streams = Gauge(
            "jackpot_meter_streams",
            "WatchMeters streams open now.",
            multiprocess_mode="livesum",
            registry=r,
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
        for collector in own:
            r.register(collector)
        self.exposed = r
        """What the metrics endpoint serves."""
        if multiprocess_dir is not None:
            self.exposed = CollectorRegistry()
            MultiProcessCollector(self.exposed, multiprocess_dir)  # type: ignore[no-untyped-call]
            for collector in own:
                self.exposed.register(collector)
        self._meter_series: dict[str, Gauge] = {}
        self._wagers_of_meter: dict[str, set[str]] = {}
        self._theoretical: dict[str, tuple[TableConfig, dict[str, _WagerSeries]]] = {}

    # ------------------------------------------------------------ certificates

    def set_server_certificates(
        self, certificate: x509.Certificate, authorities: Iterable[x509.Certificate]
    ) -> None:
        """The expiry of the controller's certificate and of each client CA (the series of a
        certificate no longer in use are removed, except under ``serve --workers``, where
        prometheus_client cannot remove a series: they stay until the restart)."""
        series = [(("server", "controller", _cert_name(certificate)), certificate)]
        series += [(("ca", "ca", _cert_name(ca)), ca) for ca in authorities]
        current = {labels for labels, _ in series}
        with self._expiry_lock:
            for labels in self._server_expiry - current:
                if not self._multiprocess:
                    self.certificate_expiry.remove(*labels)
            self._server_expiry = current
            for labels, cert in series:
                self.certificate_expiry.labels(*labels).set(cert.not_valid_after_utc.timestamp())

    def set_client_certificate(self, identity: Identity, not_after: float) -> None:
        """The expiry of a client certificate seen (the last one of each identity, at most
        :data:`MAX_CLIENT_EXPIRY_SERIES` identities)."""
        labels = ("client", identity.role.value, identity.name)
        with self._expiry_lock:
            if labels not in self._client_expiry:
                if len(self._client_expiry) >= MAX_CLIENT_EXPIRY_SERIES:
                    return
                self._client_expiry.add(labels)
        self.certificate_expiry.labels(*labels).set(not_after)

    # ------------------------------------------------------------ series known in advance

    def rpc_series(self, labels: Labels) -> RpcSeries:
        """The ``grpc_server_*`` series of one RPC (kept by the caller)."""
        return RpcSeries(self, labels)

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
        wager kind and award kind (envy included); the handle of each table and wager kind;
        each table's refusals of a position ahead; the replay counters. Show each table's
        link group and game, and each percentage line's probability per wager."""
        for phase in ("lockout", "settle", "void", "chip_count", "irregularity"):
            self.replays.labels(phase)
        for irregularity in IrregularityKind:
            self.counted.create("irregularities", irregularity.value)
        for table in tables:
            self.table_info.labels(table.table_id, table.link_group_id, table.game).set(1)
            self.counted.create("void_wagers", table.table_id)
            self.position_ahead.labels(table=table.table_id)
            for offer in table.wagers:
                self._initialise_offer(table, offer)
            self._theoretical_series(table)

    def _initialise_offer(self, table: TableConfig, offer: WagerOffer) -> None:
        create = self.counted.create
        self._set_line_probabilities(table, offer.wager)
        for kind in ("handle", "handle_cents"):
            create(kind, table.table_id, offer.wager)
        for meter_id in offer.meter_ids:
            self._wagers_of_meter.setdefault(meter_id, set()).add(offer.wager)
            for kind in ("wagers", "voids", "contributions_microcents"):
                create(kind, meter_id)
            create("void_contributions_microcents", meter_id)
            create("voided_mystery_hits", meter_id)
            create("meter_awards_cents", meter_id)
        for line, rule in offer.paytable.lines:
            for kind in ("awards", "awards_cents"):
                create(kind, offer.wager, str(rule.kind))
            if rule.kind is AwardKind.PERCENT_OF_METER:
                create("hits", offer.meter_of(rule), line)
        if offer.paytable.envy_lines:
            for kind in ("awards", "awards_cents"):
                create(kind, offer.wager, str(AwardKind.ENVY))

    def _set_line_probabilities(self, table: TableConfig, wager: str) -> None:
        offer = table.offer(wager)
        if offer is None:
            return
        counts = table.game_rules.wager(wager).line_counts()
        odds = paytable_odds(offer.paytable, counts, meter_cents=0, wager_cents=1)
        for line in odds.lines:
            if line.award.kind is AwardKind.PERCENT_OF_METER:
                meter_id = offer.meter_of(line.award)
                self.line_probability.labels(meter_id, line.hand, wager).set(
                    float(line.probability)
                )

    def _theoretical_series(self, table: TableConfig) -> dict[str, _WagerSeries]:
        """The table's actual-against-theoretical series (created at zero) by wager kind, and
        each line's probability; remembered with the configuration they were made from."""
        by_wager: dict[str, _WagerSeries] = {}
        for offer in table.wagers:
            labels = (table.link_group_id, table.game, offer.wager, offer.paytable.name)
            counts = table.game_rules.wager(offer.wager).line_counts()
            odds = paytable_odds(offer.paytable, counts, meter_cents=0, wager_cents=1)
            hits = {}
            for line in odds.lines:
                hits[line.hand] = self.theoretical_hits.labels(*labels, line.hand)
                self.theoretical_probability.labels(*labels, line.hand).set(float(line.probability))
            by_wager[offer.wager] = (self.theoretical_wagers.labels(*labels), hits)
        self._theoretical[table.table_id] = (table, by_wager)
        return by_wager

    def record_wager_lines(self, table: TableConfig, result: SettleResult) -> None:
        """Count a new settlement's wagers and the paytable line each was paid on, under the
        paytable of ``table``, the configuration it was planned with (a replay: nothing)."""
        if result.replayed:
            return
        known = self._theoretical.get(table.table_id)
        if known is not None and (known[0] is table or known[0] == table):
            by_wager = known[1]
        else:  # registered or changed since this process last saw it
            by_wager = self._theoretical_series(table)
        settled: dict[Counter, int] = {}
        for seat in result.results:
            if seat.kind is None or seat.envy_for_seat:
                continue
            series = by_wager.get(seat.kind)
            if series is None:
                continue
            settled[series[0]] = settled.get(series[0], 0) + 1
            if seat.outcome is SeatOutcome.PAID:
                hit = series[1].get(seat.line)
                if hit is not None:
                    hit.inc()
        for counter, wagers in settled.items():
            counter.inc(wagers)

    # ------------------------------------------------------------ state

    def set_link_groups(self, known: Iterable[str], problems: Iterable[str]) -> None:
        """Whether each known link group is served (1) or lost or stopped (0)."""
        not_served = set(problems)
        for group in known:
            self.link_group_serving.labels(group).set(0 if group in not_served else 1)

    def record_corrupt(self, error: CorruptRecord) -> None:
        """Count one read of a corrupt stored record (``ScriptGateway.on_corrupt``)."""
        kind = error.kind if error.kind in CORRUPT_KINDS else "record"
        self.corrupt_records.labels(kind).inc()

    def set_journal(self, link_group_id: str, entries: int, exported_at_ms: int) -> None:
        """The journal's length in Redis and when it was last exported (ms since the epoch)."""
        self.journal_entries.labels(link_group_id).set(entries)
        self.journal_exported_at.labels(link_group_id).set(exported_at_ms / 1000)

    def set_counters(self, link_group_id: str, fields: Mapping[str, int]) -> None:
        """The link group's event counters as Redis keeps them."""
        self.counted.set_group(link_group_id, fields)

    def set_meters(self, meters: Iterable[MeterValue]) -> None:
        """Show meter values (from a transition's answer)."""
        for meter in meters:
            series = self._meter_series.get(meter.meter_id)
            if series is None:
                series = self._meter_series[meter.meter_id] = self.meter_cents.labels(
                    meter.meter_id
                )
            series.set(meter.amount_cents)

    def set_meter_states(self, states: Iterable[MeterState]) -> None:
        """Show meters, reserves and pending counts read from Redis."""
        for state in states:
            self.meter_cents.labels(state.meter_id).set(floor_cents(state.amount_microcents))
            self.reserve_cents.labels(state.meter_id).set(floor_cents(state.reserve_microcents))
            self.pending_jackpots.labels(state.meter_id).set(state.pending_jackpots)
            self.reset_cents.labels(state.meter_id).set(state.reset_cents)
            self.ceiling_cents.labels(state.meter_id).set(state.ceiling_cents)
            self.meter_info.labels(state.meter_id, state.link_group_id, state.game).set(1)
            if state.kind == MUST_HIT_BY:  # its hits (lockout.lua) are counted by this line
                self.counted.create("hits", state.meter_id, MUST_HIT_BY)
                for wager in self._wagers_of_meter.get(state.meter_id, ()):
                    for kind in ("awards", "awards_cents"):
                        self.counted.create(kind, wager, MUST_HIT_BY)

    def set_pending_jackpots(self, link_group_id: str, pending: Iterable[Jackpot]) -> None:
        """The hit time of the link group's oldest jackpot waiting for validation (0: none)."""
        oldest_ms = min((jackpot.hit_at_ms for jackpot in pending), default=0)
        self.oldest_pending_at.labels(link_group_id).set(oldest_ms / 1000)

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
        """Show the meters after a lockout (Redis counts the event); count a replay."""
        self._record("lockout", result.replayed, result.meters)

    def record_settle(self, result: SettleResult) -> None:
        """Show the meters and pending jackpots after a settlement; count a replay."""
        if not result.replayed:
            for seat in result.results:
                if seat.outcome is SeatOutcome.PAID and seat.pending_validation and seat.meter_id:
                    self.pending_jackpots.labels(seat.meter_id).inc()
        self._record("settle", result.replayed, result.meters)

    def record_void(self, result: VoidResult) -> None:
        """Show the meters after a void; count a replay."""
        self._record("void", result.replayed, result.meters)

    def record_chip_count(self, result: ChipCountResult) -> None:
        """Count a replay of a chip count (Redis counts a count that differed)."""
        self._record("chip_count", result.replayed, ())

    def record_irregularity(self, result: IrregularityResult) -> None:
        """Show the meters after an irregularity's void; count a replay (Redis counts the
        irregularity)."""
        self._record("irregularity", result.replayed, result.meters)

    def _record(self, phase: str, replayed: bool, meters: Iterable[MeterValue]) -> None:
        if replayed:
            self.replays.labels(phase).inc()
        else:
            self.set_meters(meters)

"""Every Redis key name the controller uses, in one place.

All state of one link group lives under the hash tag ``{lg:<link_group_id>}`` so that each
transition is one script over keys of one slot: atomic, and unchanged on Redis Cluster.
Only four small, configuration-only records are global (they say which link group a table
or meter belongs to); they are written after the link group's own records and are never
touched by a money transition.

Identifiers are validated (``controller.domain.bounds.check_id``) before they reach here,
so they contain no braces, colons or spaces.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "jp"
LINK_GROUPS = f"{PREFIX}:link-groups"  # set of link group ids
TABLE_INDEX = f"{PREFIX}:index:tables"  # hash table_id -> link_group_id
METER_INDEX = f"{PREFIX}:index:meters"  # hash meter_id -> link_group_id
INSTALLATION = f"{PREFIX}:installation"
"""Hash: this installation's id, when and by whom it was created. A Redis without it holds no
jackpot state at all: a new installation, or a Redis that lost its data (never told apart
without it, so a controller creates nothing on a Redis without it unless told
``--first-install``)."""
TABLE_SEEN = f"{PREFIX}:tables:heard"
"""Hash table_id -> when the controller last heard from that table's agent (ms since the Unix
epoch, the replica's clock; :mod:`controller.api.liveness`). Not jackpot state: the floor
view's "online"/"offline" only, never journaled, never restored."""


@dataclass(frozen=True, slots=True)
class LinkGroupKeys:
    """The keys of one link group; every one carries the group's hash tag."""

    link_group_id: str

    @property
    def tag(self) -> str:
        """The hash tag, e.g. ``{lg:casino-1}``."""
        return f"{{lg:{self.link_group_id}}}"

    def _key(self, *parts: str | int) -> str:
        return ":".join((PREFIX, self.tag, *(str(part) for part in parts)))

    @property
    def info(self) -> str:
        """Hash: the link group's description."""
        return self._key("info")

    @property
    def meters(self) -> str:
        """Set: the meter ids of the group."""
        return self._key("meters")

    @property
    def tables(self) -> str:
        """Set: the table ids of the group."""
        return self._key("tables")

    @property
    def journal(self) -> str:
        """Stream: the append-only journal of every money and configuration change."""
        return self._key("journal")

    @property
    def seq(self) -> str:
        """String counter: the last journal sequence number (1, 2, 3, ... without gaps)."""
        return self._key("seq")

    @property
    def epoch(self) -> str:
        """Hash: the identity of the group's state (``id``, ``lineage``, ``stopped``,
        ``since_seq``; see :mod:`jackpot.epochs`)."""
        return self._key("epoch")

    @property
    def checkpoint(self) -> str:
        """Hash: what the trimmed part of the journal summed to (``seq``, and per meter
        ``value:<id>``/``reserve:<id>`` in microcents), and ``exported_seq``, the last entry
        written to an export."""
        return self._key("checkpoint")

    @property
    def counters(self) -> str:
        """Hash: the group's event counters, only ever added to, by the step that caused the
        event (``wagers|<meter>``, ``contributions_microcents|<meter>``, ``voids|<meter>``,
        ``void_contributions_microcents|<meter>``, ``hits|<meter>|<line>``,
        ``meter_awards_cents|<meter>``, ``awards|<wager>|<award kind>``,
        ``awards_cents|<wager>|<award kind>``, ``handle|<table>|<wager>``,
        ``handle_cents|<table>|<wager>``, ``irregularities|<kind>``): what the metrics'
        counters show."""
        return self._key("counters")

    @property
    def open_rounds(self) -> str:
        """Set: ``<table>:<round>`` of every round locked out and neither settled nor voided
        (an export carries their records, so a restored round can still be finished)."""
        return self._key("open-rounds")

    @property
    def jackpots(self) -> str:
        """Hash: jackpot id -> the jackpot record (JSON)."""
        return self._key("jackpots")

    @property
    def pending(self) -> str:
        """Set: ids of jackpots waiting for a supervisor's validation."""
        return self._key("pending")

    @property
    def irregularities(self) -> str:
        """Hash: ``<table>:<round>:<kind>`` -> the irregularity record (JSON): chip counts
        that differed (open until a supervisor resolves them) and seeded irregularities."""
        return self._key("irregularities")

    @property
    def maintenance(self) -> str:
        """Hash: the group's maintenance (``state`` 'maintenance' or 'play'; who entered and
        left it, why, at which journal seq and when). Missing: never in maintenance."""
        return self._key("maintenance")

    @property
    def adjustments(self) -> str:
        """Hash: adjustment id (``<link group>:<seq of its request>``) -> its record (JSON)."""
        return self._key("adjustments")

    @property
    def adjustment_requests(self) -> str:
        """Hash: request id -> the id of the adjustment it made (a request is idempotent by
        its id for ever). Not exported: a restore rebuilds it from the adjustments' records
        (each carries its ``request_id``)."""
        return self._key("adjustment-requests")

    @property
    def pending_adjustments(self) -> str:
        """Set: ids of adjustments waiting for a second operator's decision."""
        return self._key("pending-adjustments")

    @property
    def corrections(self) -> str:
        """Hash: correction id (``<link group>:<seq of its request>``) -> the record (JSON) of a
        correction of a settled round (docs/corrections.md). The round's own record names its
        correction (``correction``) and each request id (``correction_req:<id>``)."""
        return self._key("corrections")

    @property
    def restore_steps(self) -> str:
        """Hash: ``<table>:<round>:<phase>`` -> a step a table was answered before a restore
        and the restored state lacked, with its reconciliation (JSON;
        controller/actions/reconcile.py)."""
        return self._key("restore-steps")

    @property
    def restore_queue(self) -> str:
        """Sorted set: the restore steps not applied yet, scored by their lost sequence number
        (the order they are applied in)."""
        return self._key("restore-queue")

    @property
    def restore_tables(self) -> str:
        """Hash: table id -> when its outbox was collected after a restore, by whom (JSON)."""
        return self._key("restore-tables")

    @property
    def retired_meters(self) -> str:
        """Hash: meter id -> the retired meter's last record and its retirement (JSON)."""
        return self._key("retired-meters")

    @property
    def days_closed(self) -> str:
        """Hash: gaming day (YYYY-MM-DD) -> "<seq of its day_closed entry> <digest>"."""
        return self._key("days-closed")

    def meter(self, meter_id: str) -> str:
        """Hash: one meter's parameters, values (microcents) and counters."""
        return self._key("meter", meter_id)

    def mystery(self, meter_id: str) -> str:
        """Hash: a must-hit-by meter's secret draw (``hit_cents``, ``salt``) until its hit;
        read by the scripts only, never by an API, an export or the audit."""
        return self._key("mystery", meter_id)

    def table(self, table_id: str) -> str:
        """Hash: one table's configuration (JSON) and its last locked-out round id."""
        return self._key("table", table_id)

    def round(self, table_id: str, round_id: int) -> str:
        """Hash: one round's state, accepted wagers and the stored answer of each phase."""
        return self._key("round", table_id, round_id)

"""Generate the Grafana dashboards of deploy/grafana/dashboards from Python (the one way to).

    python scripts/gen_dashboards.py          # rewrite operations.json and progressive.json
    python scripts/gen_dashboards.py --check  # exit 1 if a committed dashboard is stale

Two dashboards, built with grafanalib and written as sorted, indented JSON (the same bytes
every run):

* **operations** (uid ``jackpot-operations``): gRPC rate, errors and latency; Redis up, its
  persistence and replicas; link groups served, journals; controllers and table agents online,
  PROGRESSIVE OFFLINE, outbox depth. Variables: link group, table.
* **progressive** (uid ``jackpot-progressive``): meters and reserves in dollars against their
  reset and ceiling; contributions and wagers; the handle per game, table and wager kind; hits
  and awards by hand and by kind; hit frequency against the exact odds; pending jackpots and
  their age. Variables: link group, meter, table.

Money: every series is exported in integer cents (controller/observability/metrics.py); a money
panel divides by 100 once and uses Grafana's ``currencyUSD`` unit, so a meter of 1,008,145 cents
reads $10,081.45. Counts over the time range: the business counters are Redis's totals
(every replica shows the same, never reset by a restart), so what happened in the range is
the exact difference between the total now and the total at the range's start - 0 for a
series Prometheus had not seen then. ``increase()`` would read 0 for events that happened
before Prometheus first scraped the series (a hit in the first rounds after a start).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from grafanalib import core as g
from grafanalib._gen import DashboardEncoder

ROOT = Path(__file__).resolve().parent.parent
TARGET_DIR = ROOT / "deploy" / "grafana" / "dashboards"

DATASOURCE = {"type": "prometheus", "uid": "jackpot-prometheus"}
"""deploy/grafana/provisioning/datasources/prometheus.yml's datasource (keep the uid)."""

SCHEMA_VERSION = 39
JACKPOT_RPCS = 'grpc_service=~"jackpot[.]v1[.].+"'
SERVER_ERRORS = 'grpc_code=~"Unknown|Internal|Unavailable|DeadlineExceeded"'
DOLLARS = "currencyUSD"

# Grid: 24 columns wide; a row header is one unit high.
WIDTH = 24
HEIGHT = 8


def in_range(metric: str, matchers: str, by: str) -> str:
    """What a counter Redis keeps counted in the time range, exactly, per ``by``: its total
    now less its total at the range's start (0 when Prometheus had no sample then)."""
    now = f"max by ({by}) ({metric}{{{matchers}}})"
    before = f"max by ({by}) ({metric}{{{matchers}}} offset $__range)"
    return f"clamp_min({now} - ({before} or {now} * 0), 0)"


def dollars(cents: str) -> str:
    """An expression in cents, in dollars (the panel's unit is currencyUSD)."""
    return f"({cents}) / 100"


def target(expr: str, legend: str, ref: str, *, instant: bool = False) -> g.Target:
    return g.Target(
        expr=expr,
        legendFormat=legend,
        refId=ref,
        instant=instant,
        datasource=DATASOURCE,
    )


def targets(queries: list[tuple[str, str]], *, instant: bool = False) -> list[g.Target]:
    return [
        target(expr, legend, chr(ord("A") + n), instant=instant)
        for n, (expr, legend) in enumerate(queries)
    ]


class Layout:
    """Places panels left to right, rows top to bottom, on Grafana's 24-column grid."""

    def __init__(self) -> None:
        self.panels: list[Any] = []
        self._x = 0
        self._y = 0
        self._row_height = 0

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append(g.RowPanel(title=title, gridPos=g.GridPos(h=1, w=WIDTH, x=0, y=self._y)))
        self._y += 1

    def add(self, panel: Any, width: int, height: int = HEIGHT) -> None:
        if self._x + width > WIDTH:
            self._newline()
        panel.gridPos = g.GridPos(h=height, w=width, x=self._x, y=self._y)
        panel.dataSource = DATASOURCE
        self.panels.append(panel)
        self._x += width
        self._row_height = max(self._row_height, height)

    def _newline(self) -> None:
        self._y += self._row_height
        self._x = 0
        self._row_height = 0


def timeseries(
    title: str, description: str, queries: list[tuple[str, str]], unit: str = "none"
) -> g.TimeSeries:
    return g.TimeSeries(
        title=title,
        description=description,
        targets=targets(queries),
        unit=unit,
        legendDisplayMode="list",
        tooltipMode="multi",
    )


def stat(title: str, description: str, expr: str, unit: str = "none", legend: str = "") -> g.Stat:
    """The value now of each series of ``expr``."""
    return g.Stat(
        title=title,
        description=description,
        targets=targets([(expr, legend or title)], instant=True),
        format=unit,
        reduceCalc="lastNotNull",
        graphMode="none",
        # grafanalib writes no threshold steps for a stat: one neutral base step.
        extraJson={
            "fieldConfig": {
                "defaults": {
                    "thresholds": {"mode": "absolute", "steps": [{"color": "blue", "value": None}]}
                }
            }
        },
    )


def bars(
    title: str, description: str, queries: list[tuple[str, str]], unit: str = "none"
) -> g.BarGauge:
    """A horizontal bar per series, of its value now (instant queries)."""
    return g.BarGauge(
        title=title,
        description=description,
        targets=targets(queries, instant=True),
        extraJson={
            "fieldConfig": {
                "defaults": {"unit": unit, "min": 0, "decimals": 2 if unit == DOLLARS else 0}
            },
            "options": {
                "orientation": "horizontal",
                "displayMode": "basic",
                "showUnfilled": True,
                "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            },
        },
    )


def variable(name: str, label: str, metric: str, label_name: str, matchers: str = "") -> Any:
    """A multi-value query variable over the values of one exported label."""
    query = (
        f"label_values({metric}{{{matchers}}}, {label_name})"
        if matchers
        else (f"label_values({metric}, {label_name})")
    )
    return g.Template(
        name=name,
        label=label,
        query=query,
        dataSource=DATASOURCE,
        includeAll=True,
        multi=True,
        allValue=".*",
        default="$__all",
        refresh=2,  # on time range change: a new table or meter shows without a reload
        sort=1,
    )


def dashboard(uid: str, title: str, description: str, layout: Layout, variables: list[Any]) -> Any:
    built = g.Dashboard(
        title=title,
        uid=uid,
        description=description,
        tags=["jackpot"],
        panels=layout.panels,
        templating=g.Templating(list=variables),
        time=g.Time("now-6h", "now"),
        timezone="browser",
        refresh="30s",
        editable=False,
        schemaVersion=SCHEMA_VERSION,
        version=1,
    ).auto_panel_ids()
    return built


LINK_GROUP = variable("link_group", "Link group", "jackpot_link_group_serving", "link_group")


def operations() -> Any:
    """RPCs, Redis, link groups, controllers and table agents."""
    layout = Layout()
    rpcs = f"rate(grpc_server_handled_total{{{JACKPOT_RPCS}}}[$__rate_interval])"
    errors = f"rate(grpc_server_handled_total{{{JACKPOT_RPCS},{SERVER_ERRORS}}}[$__rate_interval])"
    by_method = "sum by (grpc_service, grpc_method)"
    buckets = f'grpc_server_handling_seconds_bucket{{{JACKPOT_RPCS},grpc_type="unary"}}'
    quantile = (
        "histogram_quantile({q}, sum by (grpc_service, grpc_method, le) "
        "(rate({b}[$__rate_interval])))"
    )
    layout.row("RPCs: rate, errors, duration per gRPC method")
    layout.add(
        timeseries(
            "Requests /s",
            "RPCs completed per second, every status code, summed over the replicas.",
            [(f"{by_method} ({rpcs})", "{{grpc_service}}/{{grpc_method}}")],
            "reqps",
        ),
        8,
    )
    layout.add(
        timeseries(
            "Error ratio",
            "Share of RPCs that failed on the server's side (Unknown, Internal, Unavailable, "
            "DeadlineExceeded); refusals of bad input are not errors.",
            [
                (
                    f"{by_method} ({errors}) / {by_method} ({rpcs})",
                    "{{grpc_service}}/{{grpc_method}}",
                )
            ],
            "percentunit",
        ),
        8,
    )
    layout.add(
        timeseries(
            "Duration p50 / p99 (unary)",
            "Time to handle an RPC on the server.",
            [
                (quantile.format(q="0.5", b=buckets), "{{grpc_service}}/{{grpc_method}} p50"),
                (quantile.format(q="0.99", b=buckets), "{{grpc_service}}/{{grpc_method}} p99"),
            ],
            "s",
        ),
        8,
    )
    layout.row("Redis: up, persistence, replicas")
    layout.add(
        stat("Redis up", "1 while Redis answers every controller.", "min(jackpot_redis_up)"), 4
    )
    layout.add(
        stat(
            "AOF enabled",
            "1 when Redis keeps the append-only file.",
            "min(jackpot_redis_aof_enabled)",
        ),
        4,
    )
    layout.add(
        stat(
            "appendfsync always",
            "1 when Redis fsyncs every write before it answers.",
            "min(jackpot_redis_appendfsync_always)",
        ),
        4,
    )
    layout.add(
        timeseries(
            "Redis per controller",
            "What each controller sees: Redis answers, the primary role, its replicas.",
            [
                ("min by (instance) (jackpot_redis_up)", "up {{instance}}"),
                ("min by (instance) (jackpot_redis_primary)", "primary {{instance}}"),
            ],
        ),
        6,
    )
    layout.add(
        timeseries(
            "Replicas connected / required",
            "Replicas connected to the primary, and how many must confirm every write.",
            [
                ("min(jackpot_redis_connected_replicas)", "connected"),
                ("max(jackpot_redis_replicas_required)", "required"),
            ],
        ),
        6,
    )
    layout.row("Link groups ($link_group): served, journal")
    lg = 'link_group=~"$link_group"'
    layout.add(
        timeseries(
            "Link groups served",
            "1 while the link group's state in Redis is sound and served; 0 while lost or "
            "stopped (RUNBOOK: JackpotLinkGroupNotServing).",
            [(f"min by (link_group) (jackpot_link_group_serving{{{lg}}})", "{{link_group}}")],
        ),
        8,
    )
    layout.add(
        timeseries(
            "Journal entries in Redis",
            "Entries of each link group's journal stream (exported ones are trimmed).",
            [(f"max by (link_group) (jackpot_journal_entries{{{lg}}})", "{{link_group}}")],
        ),
        8,
    )
    layout.add(
        stat(
            "Journal last exported",
            "When jackpotctl journal export last ran for the link group (1970: never; "
            "RUNBOOK: JackpotJournalNotExported).",
            f"max by (link_group) (jackpot_journal_last_export_timestamp_seconds{{{lg}}}) * 1000",
            "dateTimeFromNow",
            "{{link_group}}",
        ),
        8,
    )
    layout.row("Controllers and table agents ($table): online, outbox")
    table = 'table=~"$table"'
    offline = f"max by (table) (jackpot_agent_progressive_offline{{{table}}})"
    layout.add(
        stat(
            "Controllers up",
            "Controller replicas Prometheus scrapes.",
            'sum(up{job="jackpot-controller"})',
        ),
        4,
    )
    layout.add(
        stat(
            "Agents online",
            "Table agents that take side wagers (not PROGRESSIVE OFFLINE).",
            f"count({offline} == 0) or vector(0)",
        ),
        4,
    )
    layout.add(
        stat(
            "Tables PROGRESSIVE OFFLINE",
            "Tables that take no side wagers because the controller does not answer them.",
            f"sum({offline})",
        ),
        4,
    )
    layout.add(
        timeseries(
            "PROGRESSIVE OFFLINE by table",
            "1 while the table is PROGRESSIVE OFFLINE.",
            [(offline, "{{table}}")],
        ),
        12,
    )
    layout.add(
        timeseries(
            "Seconds since the controller answered",
            "Each agent's silence, against the silence after which its table goes offline.",
            [
                (
                    f"max by (table) (jackpot_agent_seconds_since_last_answer{{{table}}})",
                    "{{table}}",
                ),
                (
                    f"max by (table) (jackpot_agent_offline_after_seconds{{{table}}})",
                    "{{table}} offline after",
                ),
            ],
            "s",
        ),
        8,
    )
    layout.add(
        timeseries(
            "Outbox depth",
            "Reports written to the agent's outbox and not yet answered by the controller.",
            [(f"max by (table) (jackpot_agent_outbox_depth{{{table}}})", "{{table}}")],
        ),
        8,
    )
    layout.add(
        timeseries(
            "Seconds since the last acknowledged report",
            "Since the controller last acknowledged one of the table's reports.",
            [(f"max by (table) (jackpot_agent_seconds_since_last_ack{{{table}}})", "{{table}}")],
            "s",
        ),
        8,
    )
    layout.add(
        timeseries(
            "Reports /s by phase and outcome",
            "The agents' reports: acknowledged, refused (a precise error), unreachable.",
            [
                (
                    "sum by (phase, outcome) "
                    f"(rate(jackpot_agent_reports_total{{{table}}}[$__rate_interval]))",
                    "{{phase}} {{outcome}}",
                )
            ],
            "reqps",
        ),
        12,
    )
    layout.add(
        timeseries(
            "Calls refused for who made them /s",
            "Certificates refused: none or revoked, a role that may not call, a table's "
            "certificate naming another table (RUNBOOK: JackpotAccessDenied).",
            [
                (
                    "sum by (grpc_method, reason) "
                    "(rate(jackpot_access_denied_total[$__rate_interval]))",
                    "{{grpc_method}} {{reason}}",
                )
            ],
            "reqps",
        ),
        12,
    )
    layout.add(
        timeseries(
            "Reads of corrupt records /s",
            "Records in Redis that do not decode, by kind: what needs one is refused with "
            "DATA_LOSS, the rest goes on; the log names each (RUNBOOK: JackpotCorruptRecord).",
            [
                (
                    "sum by (kind) (rate(jackpot_corrupt_records_total[$__rate_interval]))",
                    "{{kind}}",
                )
            ],
            "reqps",
        ),
        12,
    )
    table_variable = variable(
        "table", "Table", "jackpot_table_info", "table", 'link_group=~"$link_group"'
    )
    return dashboard(
        "jackpot-operations",
        "Jackpot operations",
        "Controllers (gRPC rate, errors, latency), Redis (up, persistence, replicas), link "
        "groups, journals, table agents (online, PROGRESSIVE OFFLINE, outboxes).",
        layout,
        [LINK_GROUP, table_variable],
    )


def progressive() -> Any:
    """Meters, contributions, hits, awards, odds, pending jackpots."""
    layout = Layout()
    m = 'meter=~"$meter"'
    layout.row("Meters ($meter): dollars against reset and ceiling")
    layout.add(
        timeseries(
            "Meter value ($) against reset and ceiling",
            "The amount on each meter, the amount it resets to after a 100% award, and its "
            "ceiling (none when absent).",
            [
                (dollars(f"max by (meter) (jackpot_meter_cents{{{m}}})"), "{{meter}}"),
                (dollars(f"max by (meter) (jackpot_meter_reset_cents{{{m}}})"), "{{meter}} reset"),
                (
                    dollars(f"max by (meter) (jackpot_meter_ceiling_cents{{{m}}} > 0)"),
                    "{{meter}} ceiling",
                ),
            ],
            DOLLARS,
        ),
        12,
    )
    layout.add(
        timeseries(
            "Reserve ($)",
            "The hidden pool that funds the next reset.",
            [(dollars(f"max by (meter) (jackpot_reserve_cents{{{m}}})"), "{{meter}}")],
            DOLLARS,
        ),
        12,
    )
    layout.add(
        timeseries(
            "Contributions ($/s)",
            "What accepted wagers add to each meter and its reserve.",
            [
                (
                    dollars(
                        "max by (meter) "
                        f"(rate(jackpot_contributions_cents_total{{{m}}}[$__rate_interval]))"
                    ),
                    "{{meter}}",
                )
            ],
            DOLLARS,
        ),
        8,
    )
    layout.add(
        timeseries(
            "Progressive wagers /s by meter",
            "Wagers accepted at lockout, per meter they feed.",
            [
                (
                    f"max by (meter) (rate(jackpot_wagers_total{{{m}}}[$__rate_interval]))",
                    "{{meter}}",
                )
            ],
            "reqps",
        ),
        8,
    )
    layout.add(
        timeseries(
            "Progressive wagers /s by game",
            "Wagers accepted at lockout, per game (the game of the meter they feed).",
            [
                (
                    "sum by (game) (max by (meter) "
                    f"(rate(jackpot_wagers_total{{{m}}}[$__rate_interval])) * on (meter) "
                    f"group_left (game) max by (meter, game) (jackpot_meter_info{{{m}}}))",
                    "{{game}}",
                )
            ],
            "reqps",
        ),
        8,
    )
    layout.row("Handle ($table): what the tables' players wagered")
    t = 'table=~"$table"'
    game_of_table = f"max by (table, game) (jackpot_table_info{{{t}}})"
    layout.add(
        timeseries(
            "Handle ($/s) by game and wager kind",
            "Amounts wagered in the wagers accepted at lockout, every kind (fed meter or not).",
            [
                (
                    dollars(
                        "sum by (game, wager) (max by (table, wager) "
                        f"(rate(jackpot_handle_cents_total{{{t}}}[$__rate_interval])) "
                        f"* on (table) group_left (game) {game_of_table})"
                    ),
                    "{{game}} {{wager}}",
                )
            ],
            DOLLARS,
        ),
        12,
    )
    layout.add(
        bars(
            "Handle ($) by table and wager kind",
            "Amounts wagered in the time range (voided rounds' wagers are not taken back).",
            [
                (
                    dollars(in_range("jackpot_handle_cents_total", t, "table, wager")),
                    "{{table}} {{wager}}",
                )
            ],
            DOLLARS,
        ),
        12,
    )
    layout.row("Hits and awards ($meter, time range)")
    hits = in_range("jackpot_hits_total", m, "meter, line")
    layout.add(
        bars(
            "Hits by hand",
            "Percentage-of-meter awards in the time range, by the paytable line (hand) paid.",
            [(f"sum by (line) ({hits})", "{{line}}")],
        ),
        8,
    )
    layout.add(
        bars(
            "Awards by wager and award kind",
            "Awards paid in the time range: percent_of_meter and must_hit_by from meters, "
            "the others fixed (for_one, to_one, fixed amounts, envy bonuses).",
            [(in_range("jackpot_awards_total", "", "wager, kind"), "{{wager}} {{kind}}")],
        ),
        8,
    )
    layout.add(
        bars(
            "Award amounts by wager and award kind ($)",
            "Dollars paid in the time range, meters' awards apart from fixed and bonus ones.",
            [
                (
                    dollars(in_range("jackpot_awards_cents_total", "", "wager, kind")),
                    "{{wager}} {{kind}}",
                )
            ],
            DOLLARS,
        ),
        8,
    )
    wagers = in_range("jackpot_wagers_total", m, "meter")
    layout.add(
        bars(
            "Hit frequency: one hit in N wagers, observed and expected",
            "Wagers per hit of each line in the time range, against the exact expectation "
            "from the paytable's odds (1 / probability, jackpotctl odds). Few hits: wide "
            "spread.",
            [
                (
                    f"{wagers} / on (meter) group_right () ({hits} > 0)",
                    "{{meter}} {{line}} observed",
                ),
                (
                    f"1 / max by (meter, line) (jackpot_line_probability{{{m}}})",
                    "{{meter}} {{line}} expected",
                ),
            ],
        ),
        12,
    )
    layout.add(
        bars(
            "Meter awards ($) by meter",
            "Dollars taken from each meter by its hits in the time range.",
            [(dollars(in_range("jackpot_meter_awards_cents_total", m, "meter")), "{{meter}}")],
            DOLLARS,
        ),
        6,
    )
    layout.add(
        bars(
            "Voids",
            "Wagers returned by voided rounds in the time range.",
            [(in_range("jackpot_voids_total", m, "meter"), "{{meter}}")],
        ),
        6,
    )
    layout.row("Pending jackpots: waiting for a supervisor")
    lg = 'link_group=~"$link_group"'
    layout.add(
        timeseries(
            "Pending jackpots",
            "Jackpots waiting for a supervisor's validation, per meter.",
            [(f"max by (meter) (jackpot_pending_jackpots{{{m}}})", "{{meter}}")],
        ),
        12,
    )
    layout.add(
        timeseries(
            "Oldest pending jackpot's age",
            "Since the oldest jackpot still waiting for validation was hit, per link group.",
            [
                (
                    "time() - max by (link_group) "
                    f"(jackpot_oldest_pending_jackpot_timestamp_seconds{{{lg}}} > 0)",
                    "{{link_group}}",
                )
            ],
            "s",
        ),
        12,
    )
    meter_variable = variable(
        "meter", "Meter", "jackpot_meter_info", "meter", 'link_group=~"$link_group"'
    )
    table_variable = variable(
        "table", "Table", "jackpot_table_info", "table", 'link_group=~"$link_group"'
    )
    return dashboard(
        "jackpot-progressive",
        "Jackpot progressives",
        "Meters and reserves in dollars against reset and ceiling, contributions, handle, "
        "hits and awards by hand and kind, hit frequency against the odds, pending jackpots.",
        layout,
        [LINK_GROUP, meter_variable, table_variable],
    )


DASHBOARDS = {"operations.json": operations, "progressive.json": progressive}


def render(name: str) -> str:
    """The JSON text of the dashboard ``name`` (deterministic: keys sorted)."""
    data = json.loads(json.dumps(DASHBOARDS[name]().to_json_data(), cls=DashboardEncoder))
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a dashboard is stale")
    args = parser.parse_args()
    stale = []
    TARGET_DIR.mkdir(parents=True, exist_ok=True)
    for name in DASHBOARDS:
        path = TARGET_DIR / name
        fresh = render(name)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != fresh:
                stale.append(name)
        else:
            path.write_text(fresh, encoding="utf-8")
    stale += sorted(p.name for p in TARGET_DIR.glob("*.json") if p.name not in DASHBOARDS)
    relative = TARGET_DIR.relative_to(ROOT)
    if stale:
        print(
            f"{relative}: stale {', '.join(stale)}; run: python scripts/gen_dashboards.py",
            file=sys.stderr,
        )
        return 1
    print(f"{relative}: {', '.join(DASHBOARDS)} {'up to date' if args.check else 'written'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

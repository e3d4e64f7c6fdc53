"""Static checks of deploy/: files parse, names match the product, promtool agrees, and the
deployments run the controller as docs/security.md says (mutual TLS, Redis behind a password
read from a file, probes on /healthz, network policies, every option one the programs know).

Nothing here starts a container. The promtool tests run when `promtool` is on PATH (Debian
package `prometheus`) and are skipped otherwise; the Redis password scripts run under /bin/sh.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.api.peers import read_deny_list
from controller.ctl import main as ctl_main
from controller.runtime import cli as controller_cli
from table_agent import cli as agent_cli
from table_agent.client import ControllerClient
from table_agent.link import Link
from table_agent.metrics import agent_registry
from table_agent.table import TableAgent

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
RULES = DEPLOY / "prometheus" / "rules" / "jackpot.rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "rules" / "jackpot.rules.test.yml"
RUNBOOK = DEPLOY / "RUNBOOK.md"
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
DASHBOARD_PROVIDER = DEPLOY / "grafana" / "provisioning" / "dashboards" / "jackpot.yml"
COMPOSE = DEPLOY / "compose" / "docker-compose.yml"
COMPOSE_SENTINEL = DEPLOY / "compose" / "docker-compose.sentinel.yml"
DOCKERFILE = DEPLOY / "compose" / "Dockerfile"
KUBERNETES = DEPLOY / "kubernetes"

YAML_FILES = sorted([*DEPLOY.rglob("*.yml"), *DEPLOY.rglob("*.yaml")])
DASHBOARDS = sorted((DEPLOY / "grafana" / "dashboards").glob("*.json"))
GEN_DASHBOARDS = ROOT / "scripts" / "gen_dashboards.py"

# Every metric family the controller and the table agents export, with its label names. Renaming
# a metric or a label in either must be mirrored here, and then in the rules and dashboards.
GRPC_LABELS = frozenset({"grpc_type", "grpc_service", "grpc_method"})
METRICS: dict[str, frozenset[str]] = {
    "jackpot_meter_cents": frozenset({"meter"}),
    "jackpot_reserve_cents": frozenset({"meter"}),
    "jackpot_pending_jackpots": frozenset({"meter"}),
    "jackpot_wagers_total": frozenset({"meter"}),
    "jackpot_contributions_cents_total": frozenset({"meter"}),
    "jackpot_hits_total": frozenset({"meter", "line"}),
    "jackpot_awards_total": frozenset({"wager", "kind"}),
    "jackpot_awards_cents_total": frozenset({"wager", "kind"}),
    "jackpot_meter_awards_cents_total": frozenset({"meter"}),
    "jackpot_voids_total": frozenset({"meter"}),
    "jackpot_void_wagers_total": frozenset({"table"}),
    "jackpot_voided_mystery_hits_total": frozenset({"meter"}),
    "jackpot_handle_wagers_total": frozenset({"table", "wager"}),
    "jackpot_handle_cents_total": frozenset({"table", "wager"}),
    "jackpot_meter_reset_cents": frozenset({"meter"}),
    "jackpot_meter_ceiling_cents": frozenset({"meter"}),
    "jackpot_meter_info": frozenset({"meter", "link_group", "game"}),
    "jackpot_table_info": frozenset({"table", "link_group", "game"}),
    "jackpot_line_probability": frozenset({"meter", "line", "wager"}),
    "jackpot_oldest_pending_jackpot_timestamp_seconds": frozenset({"link_group"}),
    "grpc_server_started_total": GRPC_LABELS,
    "grpc_server_handled_total": GRPC_LABELS | {"grpc_code"},
    "grpc_server_handling_seconds": GRPC_LABELS,
    "jackpot_redis_up": frozenset(),
    "jackpot_redis_aof_enabled": frozenset(),
    "jackpot_redis_appendfsync_always": frozenset(),
    "jackpot_redis_primary": frozenset(),
    "jackpot_redis_connected_replicas": frozenset(),
    "jackpot_redis_replicas_required": frozenset(),
    "jackpot_build_info": frozenset({"version"}),
    "jackpot_access_denied_total": frozenset({"grpc_method", "role", "reason"}),
    "jackpot_table_position_ahead_total": frozenset({"table"}),
    "jackpot_certificate_expiry_timestamp_seconds": frozenset({"certificate", "role", "name"}),
    "jackpot_corrupt_records_total": frozenset({"kind"}),
    "jackpot_link_group_serving": frozenset({"link_group"}),
    "jackpot_journal_entries": frozenset({"link_group"}),
    "jackpot_journal_last_export_timestamp_seconds": frozenset({"link_group"}),
    "jackpot_theoretical_wagers_total": frozenset({"link_group", "game", "wager", "paytable"}),
    "jackpot_theoretical_hits_total": frozenset(
        {"link_group", "game", "wager", "paytable", "line"}
    ),
    "jackpot_theoretical_line_probability": frozenset(
        {"link_group", "game", "wager", "paytable", "line"}
    ),
    "up": frozenset(),  # synthesized by Prometheus for every scrape target
}
AGENT_METRICS: dict[str, frozenset[str]] = {
    "jackpot_agent_progressive_offline": frozenset({"table"}),
    "jackpot_agent_seconds_since_last_answer": frozenset({"table"}),
    "jackpot_agent_offline_after_seconds": frozenset({"table"}),
    "jackpot_agent_outbox_depth": frozenset({"table"}),
    "jackpot_agent_seconds_since_last_ack": frozenset({"table"}),
    "jackpot_agent_reports_total": frozenset({"table", "phase", "outcome"}),
    "jackpot_agent_offline_periods_total": frozenset({"table"}),
}
METRICS |= AGENT_METRICS
HISTOGRAMS = frozenset({"grpc_server_handling_seconds"})
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
SCRAPE_LABELS = frozenset({"job", "instance"})  # attached by Prometheus to every series
KNOWN_LABELS = frozenset().union(*METRICS.values(), SCRAPE_LABELS, {"le"})

EXPECTED_ALERTS = frozenset(
    {
        "JackpotGrpcErrorRatioHigh",
        "JackpotSettleLatencyHigh",
        "JackpotMeterStalled",
        "JackpotPendingJackpotsWaiting",
        "JackpotRedisAofDisabled",
        "JackpotRedisFsyncNotAlways",
        "JackpotRedisReplicasMissing",
        "JackpotRedisDown",
        "JackpotControllerTargetDown",
        "JackpotControllerAllDown",
        "JackpotAccessDenied",
        "JackpotTablePositionAhead",
        "JackpotCertificateExpiresIn30Days",
        "JackpotCertificateExpiresIn7Days",
        "JackpotCorruptRecord",
        "JackpotTableVoidRateHigh",
        "JackpotLinkGroupNotServing",
        "JackpotJournalNotExported",
        "JackpotAgentDown",
        "JackpotTableProgressiveOffline",
        "JackpotAgentOutboxNotDraining",
        "JackpotLineHitRateOutsideBand",
    }
)
SEVERITIES = frozenset({"critical", "warning", "info"})
PUBLISHED_RUNBOOK = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "urls"
]["Runbook"]
ALERTMANAGER_CONFIG = DEPLOY / "alertmanager" / "alertmanager.yml"

# --- helpers ---------------------------------------------------------------------------------


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_yaml_all(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_RANGE = re.compile(r"\[[^\]]*\]")
_MATCHERS = re.compile(r"\{([^}]*)\}")
_MATCHER_LABEL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_IDENT = re.compile(r"(?<![\w.$])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?")
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})


def promql_names(expr: str) -> tuple[set[str], set[str]]:
    """Return (metric names, label names) referenced by a PromQL expression.

    Good enough for the expressions in deploy/: string literals, ranges, label matchers and
    grouping clauses are taken out first; an identifier followed by "(" is a function.
    """
    text = _STRING.sub('""', expr)
    labels = {m for block in _MATCHERS.findall(text) for m in _MATCHER_LABEL.findall(block)}
    grouped = (name.strip() for clause in _GROUPING.findall(text) for name in clause.split(","))
    labels |= {name for name in grouped if name}
    text = _GROUPING.sub(" ", _RANGE.sub(" ", _MATCHERS.sub(" ", text)))
    metrics = {
        name for name, call in _IDENT.findall(text) if not call and name.lower() not in _KEYWORDS
    }
    return metrics, labels


def is_known_metric(name: str) -> bool:
    if name in METRICS:
        return True
    return any(
        name.endswith(suffix) and name.removesuffix(suffix) in HISTOGRAMS
        for suffix in HISTOGRAM_SUFFIXES
    )


def base_metric(name: str) -> str:
    for suffix in HISTOGRAM_SUFFIXES:
        if name.removesuffix(suffix) in HISTOGRAMS:
            return name.removesuffix(suffix)
    return name


def alert_rules() -> list[dict[str, Any]]:
    doc = load_yaml(RULES)
    return [rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule]


def iter_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from iter_panels(panel.get("panels", []))


def dashboard_exprs(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title/refId, expr) of every Prometheus query in a dashboard."""
    return [
        (f"{panel['title']}/{target['refId']}", target["expr"])
        for panel in iter_panels(dashboard["panels"])
        for target in panel.get("targets", [])
        if "expr" in target
    ]


def runbook_anchors() -> set[str]:
    """GitHub-style anchors of the Markdown headings in RUNBOOK.md."""
    anchors = set()
    for line in RUNBOOK.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{1,6}\s+(.+?)\s*$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            anchors.add(slug.replace(" ", "-"))
    return anchors


def services() -> dict[str, dict[str, Any]]:
    compose: dict[str, dict[str, Any]] = load_yaml(COMPOSE)["services"]
    return compose


def kube_objects() -> dict[tuple[str, str], dict[str, Any]]:
    objects = {}
    for path in sorted(KUBERNETES.glob("*.yaml")):
        for doc in load_yaml_all(path):
            if "metadata" in doc:
                objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


# --- (a) every file parses -------------------------------------------------------------------


def test_deploy_tree_is_populated() -> None:
    assert len(YAML_FILES) >= 8
    assert DASHBOARDS
    assert RUNBOOK.is_file()


@pytest.mark.parametrize("path", YAML_FILES, ids=rel)
def test_yaml_parses(path: Path) -> None:
    docs = load_yaml_all(path)
    assert docs, f"{rel(path)} has no YAML document"
    assert all(isinstance(doc, dict) for doc in docs)


@pytest.mark.parametrize("path", DASHBOARDS, ids=rel)
def test_dashboard_structure(path: Path) -> None:
    dashboard = load_json(path)
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["uid"] and dashboard["title"]
    panels = list(iter_panels(dashboard["panels"]))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        pos = panel["gridPos"]
        assert all(isinstance(pos[k], int) for k in ("x", "y", "w", "h")), panel["title"]
        assert pos["w"] >= 1 and pos["h"] >= 1 and pos["x"] + pos["w"] <= 24, panel["title"]
        area = {
            (x, y)
            for x in range(pos["x"], pos["x"] + pos["w"])
            for y in range(pos["y"], pos["y"] + pos["h"])
        }
        assert not cells & area, f"panel {panel['title']!r} overlaps another"
        cells |= area


@pytest.mark.parametrize("path", DASHBOARDS, ids=rel)
def test_dashboard_uses_provisioned_datasource(path: Path) -> None:
    (source,) = load_yaml(DATASOURCES)["datasources"]
    uid = source["uid"]
    for panel in iter_panels(load_json(path)["panels"]):
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == uid, panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == uid, panel["title"]


def variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def test_dashboards_are_generated_and_fresh() -> None:
    """deploy/grafana/dashboards holds exactly what scripts/gen_dashboards.py writes."""
    spec = importlib.util.spec_from_file_location("gen_dashboards", GEN_DASHBOARDS)
    assert spec is not None and spec.loader is not None
    gen_dashboards = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_dashboards)
    assert [path.name for path in DASHBOARDS] == sorted(gen_dashboards.DASHBOARDS)
    for path in DASHBOARDS:
        fresh = gen_dashboards.render(path.name)
        assert path.read_text(encoding="utf-8") == fresh, f"{rel(path)} is stale"
        assert gen_dashboards.render(path.name) == fresh, "the generator is not deterministic"


def test_dashboard_rows_and_variables() -> None:
    operations = load_json(DEPLOY / "grafana" / "dashboards" / "operations.json")
    progressive = load_json(DEPLOY / "grafana" / "dashboards" / "progressive.json")
    for dashboard, rows, names in (
        (operations, ["RPCs:", "Redis:", "Link", "Controllers"], ["link_group", "table"]),
        (progressive, ["Meters", "Handle", "Hits", "Pending"], ["link_group", "meter", "table"]),
    ):
        found = sorted(
            (p for p in dashboard["panels"] if p["type"] == "row"), key=lambda p: p["gridPos"]["y"]
        )
        assert [r["title"].split()[0] for r in found] == rows
        assert list(variables(dashboard)) == names
    # A table or a meter is chosen within the chosen link group.
    assert 'link_group=~"$link_group"' in variables(operations)["table"]["query"]
    assert 'link_group=~"$link_group"' in variables(progressive)["meter"]["query"]
    assert 'link_group=~"$link_group"' in variables(progressive)["table"]["query"]
    agent_metrics_shown = set()
    for dashboard in (operations, progressive):
        for _, expr in dashboard_exprs(dashboard):
            metrics, _ = promql_names(expr)
            for label in variables(dashboard):
                # Every query of a series labelled by a variable's label filters by it.
                # (A meter is chosen within the chosen link group.)
                chosen = label == "link_group" and ("$meter" in expr or "$table" in expr)
                if any(label in METRICS[base_metric(m)] for m in metrics) and not chosen:
                    assert f'{label}=~"${label}"' in expr, f"per-{label} query ignores it: {expr}"
            agent_metrics_shown |= metrics & set(AGENT_METRICS)
    assert agent_metrics_shown == set(AGENT_METRICS) - {"jackpot_agent_offline_periods_total"}


def test_hits_and_awards_are_counted_exactly_over_the_range() -> None:
    """Redis's totals never reset with a controller: the range's count is the difference of
    totals (a series Prometheus first saw after its first events still counts them), not
    increase(), which reads 0 for a series first scraped at its final value."""
    progressive = load_json(DEPLOY / "grafana" / "dashboards" / "progressive.json")
    for where, expr in dashboard_exprs(progressive):
        assert "increase(" not in expr, where
        if "$__range" in expr:
            assert "offset $__range" in expr and " * 0)" in expr, where
    titles = {panel["title"] for panel in iter_panels(progressive["panels"])}
    assert {"Hits by hand", "Award amounts by wager and award kind ($)"} <= titles


# --- (b) metric and label names ----------------------------------------------------------------


def test_promql_names_extractor() -> None:
    metrics, labels = promql_names(
        "histogram_quantile(0.99, sum by (le) (rate(grpc_server_handling_seconds_bucket"
        '{grpc_method="Settle"}[5m]))) > 1e3 and on (meter) renamed_total offset 5m'
    )
    assert metrics == {"grpc_server_handling_seconds_bucket", "renamed_total"}
    assert labels == {"le", "grpc_method", "meter"}
    assert not is_known_metric("renamed_total")
    assert not is_known_metric("jackpot_meter_cents_bucket")


def referenced_exprs() -> list[tuple[str, str]]:
    """(where, expr) of every PromQL expression in the rules and the dashboards."""
    exprs = [(f"{RULES.name}: {rule['alert']}", str(rule["expr"])) for rule in alert_rules()]
    for path in DASHBOARDS:
        exprs += [(f"{path.name}: {w}", expr) for w, expr in dashboard_exprs(load_json(path))]
    return exprs


EXPRS = referenced_exprs()


@pytest.mark.parametrize(("where", "expr"), EXPRS, ids=[where for where, _ in EXPRS])
def test_expression_names_are_exported(where: str, expr: str) -> None:
    metrics, labels = promql_names(expr)
    assert metrics, f"{where}: no metric found in {expr!r}"
    unknown = sorted(m for m in metrics if not is_known_metric(m))
    assert not unknown, f"{where}: metrics the controller does not export: {unknown}"
    assert labels <= KNOWN_LABELS, f"{where}: unknown labels {sorted(labels - KNOWN_LABELS)}"


@pytest.mark.parametrize("path", DASHBOARDS, ids=rel)
def test_dashboard_variable_queries_use_exported_metrics(path: Path) -> None:
    for variable in load_json(path)["templating"]["list"]:
        call = re.fullmatch(r"label_values\((\w+)(\{[^}]*\})?,\s*(\w+)\)", variable["query"])
        assert call, f"unexpected variable query {variable['query']!r}"
        assert call.group(3) in METRICS[call.group(1)]
        _, labels = promql_names(call.group(1) + (call.group(2) or ""))
        assert labels <= METRICS[call.group(1)], variable["query"]


# --- (c) promtool ------------------------------------------------------------------------------


@pytest.fixture
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not on PATH (Debian/Ubuntu: apt-get install prometheus)")
    return path


def run_promtool(promtool: str, *args: str | Path) -> None:
    result = subprocess.run(
        [promtool, *map(str, args)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"promtool {args}:\n{result.stdout}\n{result.stderr}"


def test_promtool_check_config(promtool: str) -> None:
    run_promtool(promtool, "check", "config", PROMETHEUS_CONFIG)


def test_promtool_check_rules(promtool: str) -> None:
    run_promtool(promtool, "check", "rules", RULES)


def test_promtool_test_rules(promtool: str) -> None:
    run_promtool(promtool, "test", "rules", RULE_TESTS)


def test_promtool_parses_dashboard_queries(promtool: str, tmp_path: Path) -> None:
    grafana_vars = {
        "$__rate_interval": "5m",
        "$__range": "1h",
        "$meter": ".*",
        "$table": ".*",
        "$link_group": ".*",
    }
    records = []
    for number, (_, expr) in enumerate(EXPRS):
        for var, value in grafana_vars.items():
            expr = expr.replace(var, value)
        records.append({"record": f"dashboard:query_{number}", "expr": expr})
    rules = tmp_path / "dashboard_queries.yml"
    rules.write_text(yaml.safe_dump({"groups": [{"name": "q", "rules": records}]}))
    run_promtool(promtool, "check", "rules", rules)


# --- (d) alert metadata and runbook ---------------------------------------------------------------


def test_expected_alerts() -> None:
    names = [rule["alert"] for rule in alert_rules()]
    assert len(names) == len(set(names)), "duplicate alert names"
    assert set(names) == EXPECTED_ALERTS


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: str(rule["alert"]))
def test_alert_metadata(rule: dict[str, Any]) -> None:
    assert rule["labels"]["severity"] in SEVERITIES
    annotations = rule["annotations"]
    for key in ("summary", "description", "runbook_url"):
        assert str(annotations.get(key, "")).strip(), f"{rule['alert']}: missing {key}"
    url = annotations["runbook_url"]
    published, _, anchor = url.partition("#")
    assert published == PUBLISHED_RUNBOOK, f"{url}: not the published RUNBOOK (pyproject.toml)"
    assert published.startswith("https://"), "an absolute URL, opened from a notification"
    assert anchor == rule["alert"].lower(), url
    assert anchor in runbook_anchors(), f"no runbook section for {url}"


def test_every_alert_section_of_the_runbook_has_a_rule() -> None:
    sections = re.findall(r"^## (Jackpot\w+)\s*$", RUNBOOK.read_text(encoding="utf-8"), re.M)
    assert len(sections) == len(set(sections))
    assert set(sections) == EXPECTED_ALERTS


def test_runbook_anchors_follow_github_slugs() -> None:
    assert runbook_anchors() >= {"jackpotredisdown", "redis-failover-sentinel"}


def test_every_alert_has_a_firing_unit_test() -> None:
    fired = {
        case["alertname"]
        for test in load_yaml(RULE_TESTS)["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert fired >= EXPECTED_ALERTS, f"alerts never tested firing: {EXPECTED_ALERTS - fired}"


# --- consistency of the deployment files ---------------------------------------------------------


@pytest.fixture
def amtool() -> str:
    path = shutil.which("amtool")
    if path is None and os.environ.get("JACKPOT_REQUIRE_PROMETHEUS") != "1":
        pytest.skip("amtool not on PATH (Debian: apt-get install prometheus-alertmanager)")
    assert path, "amtool is required here (JACKPOT_REQUIRE_PROMETHEUS=1)"
    return path


def amtool_route(amtool: str, *labels: str) -> str:
    """The receiver the shipped routing tree picks for an alert with ``labels``."""
    done = subprocess.run(
        [amtool, "config", "routes", "test", f"--config.file={ALERTMANAGER_CONFIG}", *labels],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def test_amtool_check_config(amtool: str) -> None:
    done = subprocess.run(
        [amtool, "check-config", str(ALERTMANAGER_CONFIG)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: str(rule["alert"]))
def test_alerts_are_routed_by_severity(amtool: str, rule: dict[str, Any]) -> None:
    severity = rule["labels"]["severity"]
    receiver = amtool_route(amtool, f"alertname={rule['alert']}", f"severity={severity}")
    assert receiver == ("page" if severity == "critical" else "ticket")


def test_alertmanager_inhibitions_name_real_alerts() -> None:
    config = load_yaml(ALERTMANAGER_CONFIG)
    for inhibit in config["inhibit_rules"]:
        for matcher in [*inhibit["source_matchers"], *inhibit["target_matchers"]]:
            name, _, value = matcher.partition("=")
            if name == "alertname":
                names = set(value.strip('~"').split("|"))
                assert names <= EXPECTED_ALERTS, names - EXPECTED_ALERTS
    assert {r["receiver"] for r in config["route"]["routes"]} == {"page", "ticket"}
    assert set(config["route"]["group_by"]) >= {"link_group", "table"}


def test_prometheus_config() -> None:
    config = load_yaml(PROMETHEUS_CONFIG)
    (alertmanagers,) = config["alerting"]["alertmanagers"]
    assert alertmanagers["static_configs"] == [{"targets": ["alertmanager:9093"]}]
    for rule_file in config["rule_files"]:
        assert (PROMETHEUS_CONFIG.parent / rule_file).is_file(), rule_file
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"jackpot-controller", "jackpot-agent"}
    (sd,) = jobs["jackpot-controller"]["dns_sd_configs"]
    assert sd["port"] == 9102
    for job in jobs.values():
        assert job.get("scheme", "http") == "http", "the metrics ports are HTTP"


def test_prometheus_scrapes_every_compose_agent_where_it_serves_metrics() -> None:
    config = load_yaml(PROMETHEUS_CONFIG)
    (job,) = [job for job in config["scrape_configs"] if job["job_name"] == "jackpot-agent"]
    (static,) = job["static_configs"]
    served = set()
    for name, service in agent_services().items():
        command = service["command"]
        assert flag_value(command, "--metrics-host") == "0.0.0.0", f"{name}: unreachable"
        served.add(f"{name}:{flag_value(command, '--metrics-port')}")
    assert set(static["targets"]) == served


def test_the_agent_exports_the_metrics_the_rules_and_dashboards_expect() -> None:
    agent = TableAgent("cs-1", _Unconnected())
    exported = {
        metric.name + ("_total" if metric.type == "counter" else ""): {
            label for sample in metric.samples for label in sample.labels
        }
        for metric in agent_registry(agent).collect()
        if metric.name.startswith("jackpot_agent_")
    }
    assert exported == AGENT_METRICS


class _Unconnected(ControllerClient):
    """A table agent's client that never connects (the agent's metrics need none)."""

    def __init__(self) -> None:
        self.link = Link()


def kube_workload(kind: str, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = kube_objects()[(kind, name)]["spec"]["template"]
    return pod


def kube_container(name: str) -> dict[str, Any]:
    pods = [kube_workload("Deployment", "jackpot-controller")]
    pods.append(kube_workload("StatefulSet", "jackpot-redis"))
    for pod in pods:
        for container in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
            if container["name"] == name:
                found: dict[str, Any] = container
                return found
    raise AssertionError(f"no container {name}")


# --- the programs' options --------------------------------------------------------------------


def option_strings(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(s for action in parser._actions for s in action.option_strings)


SERVE_OPTIONS = option_strings(controller_cli._parser()[1])
AGENT_OPTIONS = option_strings(agent_cli._parser())


def flags(command: list[str]) -> list[str]:
    return [arg.partition("=")[0] for arg in command if arg.startswith("--")]


def flag_value(command: list[str], flag: str) -> str:
    assert command.count(flag) == 1, f"{flag} given {command.count(flag)} times in {command}"
    return command[command.index(flag) + 1]


def env_option(variable: str) -> str:
    """The serve option a JACKPOT_<NAME> variable sets (controller.runtime.settings)."""
    return "--" + variable.removeprefix("JACKPOT_").lower().replace("_", "-")


def dockerfile_cmd() -> list[str]:
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    (cmd,) = re.findall(r"^CMD\s+(\[.*\])\s*$", text, re.MULTILINE)
    command: list[str] = json.loads(cmd)
    return command


def test_option_helpers() -> None:
    assert {"--tls-cert", "--client-ca", "--deny-list", "--insecure"} <= SERVE_OPTIONS
    assert "--no-such-option" not in SERVE_OPTIONS
    assert {"--ca", "--cert", "--key", "--table-id"} <= AGENT_OPTIONS
    assert flags(["serve", "--listen", "x", "--log-level=INFO"]) == ["--listen", "--log-level"]
    assert env_option("JACKPOT_REDIS_PASSWORD_FILE") == "--redis-password-file"


def controller_commands() -> list[tuple[str, list[str], dict[str, str]]]:
    """(where, command, environment) of every place deploy/ starts the controller."""
    found: list[tuple[str, list[str], dict[str, str]]] = [(rel(DOCKERFILE), dockerfile_cmd(), {})]
    service = services()["controller"]
    found.append((rel(COMPOSE), service["command"], dict(service.get("environment") or {})))
    sentinel = load_yaml(COMPOSE_SENTINEL)["services"]["controller"]
    found.append((rel(COMPOSE_SENTINEL), sentinel["command"], {}))
    container = kube_container("controller")
    env = {e["name"]: e.get("value", "") for e in container.get("env", [])}
    found.append(("kubernetes controller.yaml", container["command"], env))
    return found


CONTROLLER_COMMANDS = controller_commands()


@pytest.mark.parametrize(
    ("where", "command", "env"), CONTROLLER_COMMANDS, ids=[c[0] for c in CONTROLLER_COMMANDS]
)
def test_controller_options_exist(where: str, command: list[str], env: dict[str, str]) -> None:
    """A manifest naming an option `jackpot-controller serve` does not have would crash-loop."""
    assert command[:2] == ["jackpot-controller", "serve"], where
    unknown = [flag for flag in flags(command) if flag not in SERVE_OPTIONS]
    assert not unknown, f"{where}: not options of jackpot-controller serve: {unknown}"
    variables = [name for name in env if name.startswith("JACKPOT_")]
    unknown = [name for name in variables if env_option(name) not in SERVE_OPTIONS]
    assert not unknown, f"{where}: not settings of jackpot-controller serve: {unknown}"
    # The same command line must parse (values of the right type, no stray arguments).
    parser, _ = controller_cli._parser()
    args = parser.parse_args(command[1:])
    assert args.command == "serve"


@pytest.mark.parametrize(
    ("where", "command", "env"), CONTROLLER_COMMANDS, ids=[c[0] for c in CONTROLLER_COMMANDS]
)
def test_controller_is_never_insecure(where: str, command: list[str], env: dict[str, str]) -> None:
    assert "--insecure" not in command, where
    assert "JACKPOT_INSECURE" not in env, where
    listen = flag_value(command, "--listen")
    assert listen.rpartition(":")[0] not in ("127.0.0.1", "localhost", "[::1]"), (
        f"{where}: a container's loopback address is unreachable"
    )
    redis = command[command.index("--redis") + 1] if "--redis" in command else ""
    assert "@" not in redis, f"{where}: no credentials in the --redis URL"


def test_dockerfile_default_command_needs_tls_from_the_environment() -> None:
    command = dockerfile_cmd()
    assert not {"--tls-cert", "--tls-key", "--client-ca"} & set(command)
    text = DOCKERFILE.read_text(encoding="utf-8")
    for variable in ("JACKPOT_TLS_CERT", "JACKPOT_TLS_KEY", "JACKPOT_CLIENT_CA"):
        assert variable in text, f"the Dockerfile should say that {variable} is needed"
        assert env_option(variable) in SERVE_OPTIONS
    ignored = (DEPLOY / "compose" / "Dockerfile.dockerignore").read_text(encoding="utf-8")
    assert "**/*.key" in ignored.split(), "never copy a private key into the image"


# --- Kubernetes ----------------------------------------------------------------------------------


def mounted_source(pod: dict[str, Any], container: dict[str, Any], path: str) -> tuple[str, str]:
    """(kind, name) of the volume source a file path of ``container`` is mounted from:
    ("secret", secret name), ("configMap", name), ("emptyDir", volume name), ...; asserts
    that the file is one the source provides and that the mount sees updates (no subPath)."""
    mounts = [m for m in container.get("volumeMounts", []) if path.startswith(m["mountPath"] + "/")]
    assert len(mounts) == 1, f"{path} is not on exactly one volume mount of {container['name']}"
    (mount,) = mounts
    assert "subPath" not in mount, f"{path}: a subPath mount never sees a Secret/ConfigMap update"
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    for kind, name_key in (("secret", "secretName"), ("configMap", "name")):
        if kind in volume:
            source = volume[kind]
            file = path.removeprefix(mount["mountPath"] + "/")
            items = source.get("items")
            if items is not None:
                assert file in {item["path"] for item in items}, f"{path}: not in the {kind}"
            assert not source.get("optional", False), f"{path}: the {kind} must exist"
            return kind, str(source[name_key])
    (kind,) = [key for key in volume if key != "name"]
    return kind, str(volume["name"])


def secret_key(pod: dict[str, Any], container: dict[str, Any], path: str) -> str:
    """The key of the Secret or ConfigMap that ``path`` shows."""
    (mount,) = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    source = volume.get("secret") or volume.get("configMap") or {}
    file = path.removeprefix(mount["mountPath"] + "/")
    keys = {item["path"]: item["key"] for item in source.get("items", [])}
    return str(keys.get(file, file))


def named_port(container: dict[str, Any], port: int | str) -> int:
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p["name"] == port]
    return int(number)


def test_kubernetes_controller() -> None:
    objects = kube_objects()
    deployment = objects[("Deployment", "jackpot-controller")]
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == "9102"
    (container,) = pod["spec"]["containers"]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "grpc": 50051,
        "metrics": 9102,
    }
    assert flag_value(container["command"], "--metrics-port") == "9102"
    assert flag_value(container["command"], "--listen").endswith(":50051")
    grpc_service = objects[("Service", "jackpot-controller-grpc")]["spec"]
    assert grpc_service["clusterIP"] == "None", "clients need every pod IP (round_robin)"
    assert "appProtocol" not in grpc_service["ports"][0], "the port is TLS, not h2c"
    metrics_service = objects[("Service", "jackpot-controller-metrics")]["spec"]
    assert [p["port"] for p in metrics_service["ports"]] == [9102]


def test_kubernetes_probes_use_healthz_on_the_metrics_port() -> None:
    """The gRPC port requires a client certificate the kubelet does not have. Readiness
    follows Redis and the state (/healthz); liveness must not (/livez): restarting every
    replica cures neither an outage nor a lost Redis."""
    container = kube_container("controller")
    paths = {"startupProbe": "/livez", "readinessProbe": "/healthz", "livenessProbe": "/livez"}
    for probe, path in paths.items():
        check = container[probe]
        assert set(check) & {"httpGet", "grpc", "exec", "tcpSocket"} == {"httpGet"}, probe
        assert check["httpGet"]["path"] == path, probe
        assert named_port(container, check["httpGet"]["port"]) == 9102, probe
        assert check["httpGet"].get("scheme", "HTTP") == "HTTP", probe


def test_kubernetes_controller_files_come_from_secrets() -> None:
    pod = kube_workload("Deployment", "jackpot-controller")
    container = kube_container("controller")
    command = container["command"]
    expected = {
        "--tls-cert": ("secret", "jackpot-controller-tls"),
        "--tls-key": ("secret", "jackpot-controller-tls"),
        "--client-ca": ("secret", "jackpot-controller-tls"),
        "--redis-password-file": ("secret", "jackpot-redis"),
        "--deny-list": ("configMap", "jackpot-deny-list"),
    }
    for flag, source in expected.items():
        path = flag_value(command, flag)
        assert mounted_source(pod, container, path) == source, flag
    assert secret_key(pod, container, flag_value(command, "--redis-password-file")) == "password"
    keys = {secret_key(pod, container, flag_value(command, f)) for f in expected}
    assert {"tls.crt", "tls.key", "ca.crt"} <= keys
    for volume in pod["spec"]["volumes"]:
        if "secret" in volume:
            mode = volume["secret"].get("defaultMode", 0o644)
            assert mode & 0o007 == 0, f"Secret volume {volume['name']} is world-readable"
    security = pod["spec"]["securityContext"]
    assert security["fsGroup"] == security["runAsUser"], "group-readable Secret files"
    assert "env" not in container or all("value" not in e for e in container["env"])


def test_kubernetes_redis_requires_the_password_and_is_durable() -> None:
    pod = kube_workload("StatefulSet", "jackpot-redis")
    redis = kube_container("redis")
    command = redis["command"]
    assert command[0] == "redis-server"
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--appendfsync") + 1] == "always"
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    assert command[command.index("--maxmemory") + 1].endswith("mb")
    config = command[1]
    assert config.endswith(".conf"), "the generated redis.conf comes first"
    assert mounted_source(pod, redis, config)[0] == "emptyDir"
    (conf_volume,) = [v for v in pod["spec"]["volumes"] if "emptyDir" in v]
    assert conf_volume["emptyDir"].get("medium") == "Memory", "keep the password off disk"
    # The init container writes requirepass into that file from the Secret.
    (init,) = pod["spec"]["initContainers"]
    script = init["command"][-1]
    (password_file,) = re.findall(r"cat ([^\s)]+)\)", script)
    assert mounted_source(pod, init, password_file) == ("secret", "jackpot-redis")
    assert secret_key(pod, init, password_file) == "password"
    assert "requirepass" in script and f"> {config}" in script
    # The readiness probe authenticates (redis-cli exits 0 on NOAUTH).
    probe = " ".join(redis["readinessProbe"]["exec"]["command"])
    assert "REDISCLI_AUTH=" in probe and "PONG" in probe
    (probe_file,) = re.findall(r"cat ([^\s)]+)\)", probe)
    assert mounted_source(pod, redis, probe_file) == ("secret", "jackpot-redis")


def pod_claims() -> list[dict[str, Any]]:
    claims: list[dict[str, Any]] = kube_objects()[("StatefulSet", "jackpot-redis")]["spec"][
        "volumeClaimTemplates"
    ]
    return claims


def test_kubernetes_redis_data_is_a_persistent_volume() -> None:
    redis = kube_container("redis")
    claims = {claim["metadata"]["name"] for claim in pod_claims()}
    data = [m for m in redis["volumeMounts"] if m["mountPath"] == "/data"]
    assert [m["name"] for m in data] == ["data"] and "data" in claims


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a Kubernetes label selector (matchLabels, matchExpressions In/Exists) selects
    ``labels``."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator = expression["key"], expression["operator"]
        if operator == "In" and labels.get(key) not in expression["values"]:
            return False
        if operator == "Exists" and key not in labels:
            return False
        assert operator in ("In", "Exists"), f"unexpected selector operator {operator}"
    return True


def policies_for(labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        obj["spec"]
        for (kind, _), obj in kube_objects().items()
        if kind == "NetworkPolicy" and selects(obj["spec"]["podSelector"], labels)
    ]


def ingress_by_port(labels: dict[str, str]) -> dict[int, list[dict[str, Any]]]:
    """Every peer (``from`` item) admitted to each port of the pods with ``labels``."""
    policies = policies_for(labels)
    assert policies, f"no NetworkPolicy selects {labels}"
    admitted: dict[int, list[dict[str, Any]]] = {}
    for policy in policies:
        assert "Ingress" in policy["policyTypes"]
        for rule in policy.get("ingress", []):
            assert rule.get("ports"), "a rule without ports admits every port"
            assert rule.get("from"), "a rule without peers admits everyone"
            for port in rule["ports"]:
                admitted.setdefault(int(port["port"]), []).extend(rule["from"])
    return admitted


CONTROLLER_LABELS = {"app.kubernetes.io/name": "jackpot-controller"}


def test_kubernetes_network_policy_of_the_controller() -> None:
    pod_labels = kube_workload("Deployment", "jackpot-controller")["metadata"]["labels"]
    assert pod_labels == CONTROLLER_LABELS
    admitted = ingress_by_port(pod_labels)
    assert set(admitted) == {50051, 9102}
    clients = admitted[50051]
    for peer in clients:
        assert set(peer) == {"podSelector"}, "gRPC from labelled pods only (no ipBlock/namespace)"
        assert peer["podSelector"], "an empty podSelector admits every pod"
    for component in ("table-agent", "jackpotctl", "meter-display"):
        assert any(
            selects(peer["podSelector"], {"app.kubernetes.io/component": component})
            for peer in clients
        ), component
    assert not any(selects(peer["podSelector"], {"app": "other"}) for peer in clients)
    (prometheus,) = admitted[9102]
    assert selects(prometheus["podSelector"], {"app.kubernetes.io/name": "prometheus"})
    assert not selects(prometheus["podSelector"], {"app.kubernetes.io/component": "table-agent"})
    assert prometheus["namespaceSelector"]["matchLabels"], "Prometheus's namespace, not any"


def test_kubernetes_network_policy_of_redis() -> None:
    pod_labels = kube_workload("StatefulSet", "jackpot-redis")["metadata"]["labels"]
    admitted = ingress_by_port(pod_labels)
    assert set(admitted) == {6379}
    controller, export = admitted[6379]
    for peer in (controller, export):
        assert set(peer) == {"podSelector"}
        assert not selects(peer["podSelector"], {"app.kubernetes.io/component": "table-agent"})
    assert selects(controller["podSelector"], CONTROLLER_LABELS)
    job = kube_objects()[("CronJob", "jackpot-journal-export")]
    job_labels = job["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    assert selects(export["podSelector"], job_labels)


def test_kubernetes_journal_export_job() -> None:
    """Export, then trim what is exported, onto its own volume, with the Redis password from
    the Secret (never a literal), one run at a time."""
    job = kube_objects()[("CronJob", "jackpot-journal-export")]["spec"]
    assert job["concurrencyPolicy"] == "Forbid"
    pod = job["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    script = container["command"][-1]
    assert script.index("journal export") < script.index("journal trim")
    assert "--redis-password-file /etc/jackpot/redis/password" in script
    volumes = {v["name"]: v for v in pod["volumes"]}
    claim = volumes["export"]["persistentVolumeClaim"]["claimName"]
    assert ("PersistentVolumeClaim", claim) in kube_objects()
    assert volumes["redis-password"]["secret"]["secretName"] == "jackpot-redis"


# --- no secret in the repository ---------------------------------------------------------------

DEPLOY_TEXT_FILES = sorted(
    p for p in DEPLOY.rglob("*") if p.is_file() and p.suffix not in (".json",)
)


@pytest.mark.parametrize("path", DEPLOY_TEXT_FILES, ids=rel)
def test_no_secret_literals(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "PRIVATE KEY-----" not in text, "a private key"
    for line in text.splitlines():
        code = line.split("#", 1)[0] if path.suffix in (".yml", ".yaml") else line
        match = re.search(r"\b(?:requirepass|masterauth)\s+(\S+)", code)
        if match:
            # printf's %s, or a shell variable (in a systemd unit, $$ is a literal $)
            assert match[1].startswith(("%s", "$p", "$$p")), f"a literal password: {line.strip()}"
        assert "--requirepass" not in code, "redis-server's arguments are visible in the pod"
        assert not re.search(r"rediss?://[^/\s]*@", code), "credentials in a Redis URL"


def test_kubernetes_has_no_secret_objects_or_password_values() -> None:
    for kind, name in kube_objects():
        assert kind != "Secret", f"Secret {name} belongs in the cluster, not the repository"
    for workload in (("Deployment", "jackpot-controller"), ("StatefulSet", "jackpot-redis")):
        spec = kube_workload(*workload)["spec"]
        for container in spec.get("initContainers", []) + spec["containers"]:
            for env in container.get("env", []):
                literal = "value" in env and "PASSWORD" in env["name"].upper()
                assert not literal, f"{container['name']}: {env['name']} is a literal"


# --- Docker Compose ----------------------------------------------------------------------------


def compose_script(service: dict[str, Any]) -> str:
    """The shell script of an ``entrypoint: [/bin/sh, -c]`` service, after Compose's own
    interpolation ($$ is a literal $)."""
    assert service["entrypoint"] == ["/bin/sh", "-c"]
    (script,) = service["command"]
    return str(script).replace("$$", "$")


def mount_of(service: dict[str, Any], path: str) -> str:
    """The volume (or relative host path) a file path of ``service`` is on."""
    sources = [
        volume.split(":")[0]
        for volume in service.get("volumes", [])
        if path.startswith(volume.split(":")[1].rstrip("/") + "/")
    ]
    assert len(sources) == 1, f"{path} is not on exactly one volume"
    return str(sources[0])


def expand_loops(script: str) -> str:
    """``for t in a b; do X $t; done`` written out as ``X a; X b;`` (enough for deploy/)."""

    def expand(loop: re.Match[str]) -> str:
        name, values, body = loop[1], loop[2].split(), loop[3]
        return " ".join(body.replace(f"${name}", value) for value in values)

    return re.sub(r"\bfor (\w+) in ([^;]+); do (.*?)\bdone\b", expand, script, flags=re.DOTALL)


def jackpotctl_calls(script: str) -> list[argparse.Namespace]:
    """Every jackpotctl command of a compose shell script, parsed by jackpotctl's own parser
    (an option it does not have fails here, as it would in the container)."""
    prefix = re.search(r'\bC="(jackpotctl[^"]*)";', script)
    if prefix:
        script = script.replace(prefix[0], "").replace("$C", prefix[1])
    calls = []
    for text in re.findall(r"\bjackpotctl\b[^;|]*", expand_loops(script)):
        calls.append(ctl_main._parser().parse_args(shlex.split(text)[1:]))
    return calls


def test_compose_script_helpers() -> None:
    script = (
        'C="jackpotctl --controller c:1"; for t in a b; do $C tables list --link-group $t; done'
    )
    calls = jackpotctl_calls(script)
    assert [(c.controller, c.link_group) for c in calls] == [("c:1", "a"), ("c:1", "b")]
    with pytest.raises(SystemExit):
        jackpotctl_calls("jackpotctl certs issue --no-such-flag")


def test_compose_redis_requires_the_password_and_is_durable() -> None:
    compose = load_yaml(COMPOSE)
    redis = compose["services"]["redis"]
    assert redis["secrets"] == ["redis-password"]
    secret = compose["secrets"]["redis-password"]
    assert set(secret) == {"file"}, "a file the operator creates, not a value"
    ignored = (COMPOSE.parent / ".gitignore").read_text(encoding="utf-8").split()
    assert "/" + Path(secret["file"]).name in ignored, "git must ignore the password file"
    script = compose_script(redis)
    assert 'p="$(cat /run/secrets/redis-password)"' in script
    (config,) = re.findall(r"printf 'requirepass %s\\n' \"\$p\" > (\S+);", script)
    assert any(config.startswith(tmpfs.rstrip("/") + "/") for tmpfs in redis["tmpfs"])
    server = shlex.split(script.partition("exec ")[2])
    assert server[:2] == ["redis-server", config]
    assert server[server.index("--appendonly") + 1] == "yes"
    assert server[server.index("--appendfsync") + 1] == "always"
    assert server[server.index("--maxmemory-policy") + 1] == "noeviction"
    assert any(v.startswith("redis-data:/data") for v in redis["volumes"])
    health = " ".join(redis["healthcheck"]["test"]).replace("$$", "$")
    assert "REDISCLI_AUTH=" in health and "/run/secrets/redis-password" in health
    assert "PONG" in health


def test_compose_controller() -> None:
    svc = services()
    controller = svc["controller"]
    assert controller["deploy"]["replicas"] == 2
    command = controller["command"]
    assert flag_value(command, "--redis-password-file") == "/run/secrets/redis-password"
    assert controller["secrets"] == ["redis-password"]
    for flag in ("--tls-cert", "--tls-key", "--client-ca"):
        assert mount_of(controller, flag_value(command, flag)) == "controller-tls", flag
    assert mount_of(controller, flag_value(command, "--deny-list")).startswith("./")
    assert controller["depends_on"]["certs"]["condition"] == "service_completed_successfully"
    health = " ".join(controller["healthcheck"]["test"])
    assert "http://localhost:9102/healthz" in health and "grpc" not in health
    build = controller["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).is_file()


def test_compose_deny_list_parses() -> None:
    controller = services()["controller"]
    path = flag_value(controller["command"], "--deny-list")
    source, target = next(
        v.split(":")[:2] for v in controller["volumes"] if path.startswith(v.split(":")[1])
    )
    assert read_deny_list(COMPOSE.parent / source / path.removeprefix(target + "/")) == frozenset()


def agent_services() -> dict[str, dict[str, Any]]:
    return {
        name: service
        for name, service in services().items()
        if service.get("command", [None])[0] == "table-agent"
    }


def test_compose_agents_use_their_own_table_certificate() -> None:
    table_ids = set()
    for name, service in agent_services().items():
        command = service["command"]
        unknown = [flag for flag in flags(command) if flag not in AGENT_OPTIONS]
        assert not unknown, f"{name}: not options of table-agent: {unknown}"
        agent_cli._parser().parse_args(command[1:])
        table_id = flag_value(command, "--table-id")
        table_ids.add(table_id)
        assert flag_value(command, "--controller") == "controller:50051", name
        assert "--sim" in command and "--insecure" not in command
        cert, key = flag_value(command, "--cert"), flag_value(command, "--key")
        assert (Path(cert).name, Path(key).name) == (f"{table_id}.crt", f"{table_id}.key")
        for path in (flag_value(command, "--ca"), cert, key):
            assert mount_of(service, path) == "agent-certs", name
    assert table_ids == {"cs-1", "cs-2", "cs-3"}


def test_compose_certs_service_issues_every_identity() -> None:
    svc = services()
    certs = svc["certs"]
    volumes = dict(v.split(":")[:2][::-1] for v in certs["volumes"])  # target -> volume
    calls = jackpotctl_calls(compose_script(certs))
    (init,) = [c for c in calls if c.action == "init"]
    agents_dial = {
        flag_value(s["command"], "--controller").rpartition(":")[0]
        for s in agent_services().values()
    }
    assert agents_dial <= set(init.san), "the controller's certificate must name its host"
    issued = {(c.role, c.name): volumes[str(c.out)] for c in calls if c.action == "issue"}
    for table_id in ("cs-1", "cs-2", "cs-3"):
        assert issued[("table", table_id)] == "agent-certs"
    roles = {role: volume for (role, _), volume in issued.items()}
    assert roles["operator"] == "ops-certs" and roles["supervisor"] == "ops-certs"
    assert volumes[str(init.dir)] == "ca"
    for name, service in svc.items():
        if name != "certs":
            assert not any(v.startswith("ca:") for v in service.get("volumes", [])), (
                f"{name} must not see the CA's key"
            )
    script = compose_script(certs)
    assert "cp /ca/controller.crt /ca/controller.key /ca/ca.crt /tls/" in script
    assert "chown -R 10001:10001" in script  # the image's user


# --- the Redis password scripts, run --------------------------------------------------------


def redis_password_scripts() -> list[tuple[str, str, str, str]]:
    """(where, script, password file, config file) of both ways deploy/ writes redis.conf."""
    (init,) = kube_workload("StatefulSet", "jackpot-redis")["spec"]["initContainers"]
    kube = str(init["command"][-1])
    compose = compose_script(services()["redis"]).partition("exec ")[0] + "exit 0"
    return [
        ("kubernetes", kube, "/etc/redis-auth/password", "/run/redis/redis.conf"),
        ("compose", compose, "/run/secrets/redis-password", "/run/redis/redis.conf"),
    ]


PASSWORD_SCRIPTS = redis_password_scripts()
GOOD_PASSWORDS = ["0123456789abcdef" * 4, "Zm9v+YmFy/YmF6=._-"]
BAD_PASSWORDS = ["", "two words", 'quote"d', "new\nline", "semi;colon", "back\\slash"]


@pytest.mark.skipif(not Path("/bin/sh").exists(), reason="needs /bin/sh")
@pytest.mark.parametrize(
    ("where", "script", "secret", "config"), PASSWORD_SCRIPTS, ids=[s[0] for s in PASSWORD_SCRIPTS]
)
@pytest.mark.parametrize("password", GOOD_PASSWORDS + BAD_PASSWORDS)
def test_redis_password_script(
    tmp_path: Path, where: str, script: str, secret: str, config: str, password: str
) -> None:
    secret_file, config_file = tmp_path / "password", tmp_path / "conf" / "redis.conf"
    config_file.parent.mkdir()
    secret_file.write_text(password + "\n", encoding="utf-8")
    script = script.replace(secret, str(secret_file)).replace(config, str(config_file))
    result = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, check=False)
    if password in GOOD_PASSWORDS:
        assert result.returncode == 0, result.stderr
        assert config_file.read_text(encoding="utf-8") == f"requirepass {password}\n"
        assert config_file.stat().st_mode & 0o077 == 0, "redis.conf readable by its owner only"
    else:
        assert result.returncode != 0, f"{where} accepted {password!r}"
        assert "openssl rand -hex 32" in result.stderr
        assert not config_file.exists()


def test_money_panels_show_dollars() -> None:
    """Amounts are exported in cents; each money panel divides by 100 exactly once and shows
    dollars."""
    money = 0
    for path in DASHBOARDS:
        for panel in iter_panels(load_json(path)["panels"]):
            exprs = [target.get("expr", "") for target in panel.get("targets", [])]
            if not any("_cents" in expr for expr in exprs):
                continue
            money += 1
            for expr in exprs:
                assert expr.count("/ 100") == 1, f"{panel['title']}: {expr}"
            assert panel["fieldConfig"]["defaults"]["unit"] == "currencyUSD", panel["title"]
            assert "cents" not in panel["title"], panel["title"]
    assert money >= 4

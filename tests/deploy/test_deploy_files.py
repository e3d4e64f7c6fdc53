"""Static checks of deploy/: files parse, names match the product, promtool agrees.

Nothing here starts a container. The promtool tests run when `promtool` is on PATH (Debian
package `prometheus`) and are skipped otherwise.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
RULES = DEPLOY / "prometheus" / "rules" / "jackpot.rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "rules" / "jackpot.rules.test.yml"
RUNBOOK = DEPLOY / "RUNBOOK.md"
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
DASHBOARD_PROVIDER = DEPLOY / "grafana" / "provisioning" / "dashboards" / "jackpot.yml"
COMPOSE = DEPLOY / "compose" / "docker-compose.yml"
KUBERNETES = DEPLOY / "kubernetes"

YAML_FILES = sorted([*DEPLOY.rglob("*.yml"), *DEPLOY.rglob("*.yaml")])
DASHBOARDS = sorted((DEPLOY / "grafana" / "dashboards").glob("*.json"))

# Every metric family the controller exports, with its label names. Renaming a metric or a label
# in the controller must be mirrored here, and then in the rules and dashboards.
GRPC_LABELS = frozenset({"grpc_type", "grpc_service", "grpc_method"})
METRICS: dict[str, frozenset[str]] = {
    "jackpot_meter_cents": frozenset({"meter"}),
    "jackpot_reserve_cents": frozenset({"meter"}),
    "jackpot_pending_jackpots": frozenset({"meter"}),
    "jackpot_wagers_total": frozenset({"meter"}),
    "jackpot_contributions_cents_total": frozenset({"meter"}),
    "jackpot_hits_total": frozenset({"meter", "hand"}),
    "jackpot_awards_cents_total": frozenset({"meter"}),
    "jackpot_voids_total": frozenset({"meter"}),
    "grpc_server_started_total": GRPC_LABELS,
    "grpc_server_handled_total": GRPC_LABELS | {"grpc_code"},
    "grpc_server_handling_seconds": GRPC_LABELS,
    "jackpot_redis_aof_enabled": frozenset(),
    "jackpot_redis_appendfsync_always": frozenset(),
    "jackpot_build_info": frozenset({"version"}),
    "up": frozenset(),  # synthesized by Prometheus for every scrape target
}
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
        "JackpotControllerTargetDown",
        "JackpotControllerAllDown",
    }
)
SEVERITIES = frozenset({"critical", "warning", "info"})
RUNBOOK_PREFIX = "deploy/RUNBOOK.md#"

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


def test_dashboard_layout_and_meter_variable() -> None:
    dashboard = load_json(DEPLOY / "grafana" / "dashboards" / "jackpot.json")
    (variable,) = [v for v in dashboard["templating"]["list"] if v["name"] == "meter"]
    assert "jackpot_meter_cents" in variable["definition"]
    rows = sorted(
        (p for p in dashboard["panels"] if p["type"] == "row"), key=lambda p: p["gridPos"]["y"]
    )
    assert [r["title"].split()[0] for r in rows] == ["RPCs:", "Meters", "Redis"]
    for _, expr in dashboard_exprs(dashboard):
        metrics, _ = promql_names(expr)
        if any("meter" in METRICS[base_metric(m)] for m in metrics):
            assert 'meter=~"$meter"' in expr, f"per-meter query ignores $meter: {expr}"


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
        call = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["definition"])
        assert call, f"unexpected variable query {variable['definition']!r}"
        assert call.group(2) in METRICS[call.group(1)]


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
    grafana_vars = {"$__rate_interval": "5m", "$__range": "1h", "$meter": ".*"}
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
    assert url.startswith(RUNBOOK_PREFIX), url
    assert url.removeprefix(RUNBOOK_PREFIX) in runbook_anchors(), f"no runbook section for {url}"


def test_every_alert_has_a_firing_unit_test() -> None:
    fired = {
        case["alertname"]
        for test in load_yaml(RULE_TESTS)["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert fired >= EXPECTED_ALERTS, f"alerts never tested firing: {EXPECTED_ALERTS - fired}"


# --- consistency of the deployment files ---------------------------------------------------------


def test_prometheus_config() -> None:
    config = load_yaml(PROMETHEUS_CONFIG)
    for rule_file in config["rule_files"]:
        assert (PROMETHEUS_CONFIG.parent / rule_file).is_file(), rule_file
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"jackpot-controller"}, "scrape the controller replicas only"
    (sd,) = jobs["jackpot-controller"]["dns_sd_configs"]
    assert sd["port"] == 9102


def test_compose_redis_is_durable() -> None:
    command = services()["redis"]["command"]
    assert command[0] == "redis-server"
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--appendfsync") + 1] == "always"
    assert any(v.startswith("redis-data:") for v in services()["redis"]["volumes"])


def test_compose_controller_and_agents() -> None:
    svc = services()
    controller = svc["controller"]
    assert controller["deploy"]["replicas"] == 2
    assert controller["command"][:2] == ["jackpot-controller", "serve"]
    assert {"--listen", "--redis", "--metrics-port", "--insecure"} <= set(controller["command"])
    build = controller["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).is_file()
    table_ids = set()
    for name, service in svc.items():
        if service.get("command", [None])[0] == "table-agent":
            command = service["command"]
            table_ids.add(command[command.index("--table-id") + 1])
            assert command[command.index("--controller") + 1] == "controller:50051", name
            assert "--sim" in command
    assert table_ids == {"cs-1", "cs-2", "cs-3"}


def test_compose_mounts_exist_and_match_grafana_provider() -> None:
    mounts: dict[str, str] = {}
    for service in services().values():
        for volume in service.get("volumes", []):
            source, target = volume.split(":")[:2]
            if source.startswith("."):
                assert (COMPOSE.parent / source).exists(), source
                mounts[target] = str((COMPOSE.parent / source).resolve().relative_to(ROOT))
    assert mounts["/etc/prometheus/prometheus.yml"] == "deploy/prometheus/prometheus.yml"
    assert mounts["/etc/grafana/provisioning"] == "deploy/grafana/provisioning"
    (provider,) = load_yaml(DASHBOARD_PROVIDER)["providers"]
    assert mounts[provider["options"]["path"]] == "deploy/grafana/dashboards"


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
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == 50051, probe
    grpc_service = objects[("Service", "jackpot-controller-grpc")]["spec"]
    assert grpc_service["clusterIP"] == "None", "agents need every pod IP (round_robin)"
    metrics_service = objects[("Service", "jackpot-controller-metrics")]["spec"]
    assert [p["port"] for p in metrics_service["ports"]] == [9102]


def test_kubernetes_redis_is_durable() -> None:
    objects = kube_objects()
    statefulset = objects[("StatefulSet", "jackpot-redis")]["spec"]
    (container,) = statefulset["template"]["spec"]["containers"]
    command = container["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--appendfsync") + 1] == "always"
    claims = {claim["metadata"]["name"] for claim in statefulset["volumeClaimTemplates"]}
    assert {mount["name"] for mount in container["volumeMounts"]} <= claims
    kustomization = load_yaml(KUBERNETES / "kustomization.yaml")
    for resource in kustomization["resources"]:
        assert (KUBERNETES / resource).is_file(), resource

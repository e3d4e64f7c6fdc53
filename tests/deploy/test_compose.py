"""deploy/compose, checked without Docker (no engine runs where this is built): the image is
built in two stages from constraints.txt and runs as a numeric non-root user; every image is
pinned; every service runs as a non-root user, mounts only paths that exist, keeps its data in
declared volumes and has a healthcheck the services that wait for it can use; the controllers
apply the Rules Submissions of deploy/rules, whose tables the simulated agents play, each
with its own durable outbox; the operators' tool and Alertmanager are wired as Prometheus and
the comments say.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from controller.ctl import main as ctl_main
from controller.runtime import cli as controller_cli
from controller.runtime import settings
from controller.runtime.rules_file import load_submission
from tests.deploy.test_deploy_files import (
    COMPOSE,
    COMPOSE_SENTINEL,
    DOCKERFILE,
    PROMETHEUS_CONFIG,
    ROOT,
    agent_services,
    flag_value,
    load_yaml,
    mount_of,
)

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
IMAGE = f"table-jackpot:{VERSION}"
IMAGE_USER = "10001"
# Files written on another branch at the same time; mounted here by the path agreed on.
ELSEWHERE = {Path("deploy/alertmanager/alertmanager.yml")}


# --- the Dockerfile -------------------------------------------------------------------------


def dockerfile_stages() -> list[dict[str, Any]]:
    """The stages of the Dockerfile: base image (ARGs substituted), name, instructions."""
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    args: dict[str, str] = {}
    stages: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name] = default
        elif instruction == "FROM":
            words = rest.split()
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m[1]], words[0])
            stage = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append({"image": image, "name": stage, "steps": []})
        else:
            stages[-1]["steps"].append((instruction, rest.strip()))
    return stages


def steps(stage: dict[str, Any], instruction: str) -> list[str]:
    return [rest for name, rest in stage["steps"] if name == instruction]


def test_dockerfile_builds_in_two_stages_from_one_pinned_base() -> None:
    build, runtime = dockerfile_stages()
    assert (build["name"], runtime["name"]) == ("build", "runtime")
    assert build["image"] == runtime["image"], "the environment runs on the Python it was made on"
    pinned = re.fullmatch(
        r"python:(\d+)\.(\d+)\.(\d+)-slim-\w+(@sha256:[0-9a-f]{64})?", build["image"]
    )
    assert pinned, f"an exact Python release: {build['image']}"
    minimum = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert tuple(map(int, pinned.groups()[:2])) >= tuple(map(int, minimum.split(".")))


def test_dockerfile_installs_from_constraints_in_the_build_stage() -> None:
    build, runtime = dockerfile_stages()
    (install,) = [run for run in steps(build, "RUN") if "pip install" in run]
    pip = shlex.split(install.partition("pip install")[2])
    assert pip[pip.index("-c") + 1] == "constraints.txt"
    assert "-e" not in pip and "--editable" not in pip, "the installed package, not the source"
    (target,) = [word for word in pip if word.startswith(".[")]
    extras = set(target.removeprefix(".[").removesuffix("]").split(","))
    assert extras <= set(PYPROJECT["project"]["optional-dependencies"])
    assert {"controller", "metrics"} <= extras
    copied = [word for copy in steps(build, "COPY") for word in copy.split()[:-1]]
    assert "constraints.txt" in copied and "pyproject.toml" in copied
    ignored = [
        line.strip()
        for line in (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for source in copied:
        assert (ROOT / source).exists(), source
        assert not any(fnmatch.fnmatch(source, pattern) for pattern in ignored), source
    packages = {
        p.split(".")[0] for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    assert {p.rstrip("*") for p in packages} <= set(copied), "every package of the wheel"
    # The runtime stage copies the environment and installs nothing.
    (copy,) = steps(runtime, "COPY")
    assert copy.startswith("--from=build ")
    runs = " ".join(steps(runtime, "RUN"))
    for tool in ("pip ", "apt-get", "gcc", "build-essential", "apk "):
        assert tool not in runs, f"the runtime stage runs {tool.strip()}"


def test_dockerfile_runs_as_a_numeric_non_root_user() -> None:
    _, runtime = dockerfile_stages()
    *_, user = steps(runtime, "USER")
    uid, _, gid = user.partition(":")
    assert uid == gid == IMAGE_USER
    (run,) = steps(runtime, "RUN")
    assert f"--uid {IMAGE_USER}" in run and "--no-create-home" in run
    # The agents' state directory is the user's, so a new volume mounted there is too.
    state = {flag_value(s["command"], "--state-dir") for s in agent_services().values()}
    (directory,) = state
    assert f"install -d -o {IMAGE_USER} -g {IMAGE_USER} -m 0700 {directory}" in run


def runtime_distributions() -> dict[str, str]:
    """Every distribution the image installs (the package's runtime requirements with the
    image's extras, and theirs), by normalized name, with the version installed here."""
    build, _ = dockerfile_stages()
    (install,) = [run for run in steps(build, "RUN") if "pip install" in run]
    (target,) = re.findall(r"'\.\[([^\]]+)\]'", install)
    wanted = [("table-jackpot", frozenset(target.split(",")))]
    found: dict[str, str] = {}
    while wanted:
        name, extras = wanted.pop()
        dist = metadata.distribution(name)
        for text in dist.requires or []:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is not None and not any(
                marker.evaluate({"extra": extra}) for extra in extras or {""}
            ):
                continue
            key = re.sub(r"[-_.]+", "-", requirement.name).lower()
            if key == "table-jackpot":  # an extra naming others
                wanted.append((key, frozenset(requirement.extras)))
            elif key not in found:
                found[key] = metadata.version(requirement.name)
                wanted.append((requirement.name, frozenset(requirement.extras)))
    return found


def test_every_distribution_of_the_image_is_pinned_in_constraints() -> None:
    """The image's environment is what CI tested: pip -c constraints.txt fixes every version
    only if every distribution it installs has a line there."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    distributions = runtime_distributions()
    assert {"grpcio", "redis", "prometheus-client", "cryptography"} <= set(distributions)
    unpinned = sorted(set(distributions) - set(pins))
    assert not unpinned, f"not in constraints.txt: {unpinned}"
    for name, version in distributions.items():
        assert pins[name] == version, f"{name}: constraints.txt {pins[name]}, tested {version}"


# --- the compose files ----------------------------------------------------------------------


def compose_files() -> list[tuple[Path, dict[str, Any]]]:
    return [(path, load_yaml(path)) for path in (COMPOSE, COMPOSE_SENTINEL)]


def merged_services() -> dict[str, dict[str, Any]]:
    """The services of the Sentinel variant: docker-compose.yml with the override's keys
    replacing the base's (what Compose does for the keys the override sets)."""
    merged = {name: dict(s) for name, s in load_yaml(COMPOSE)["services"].items()}
    for name, service in load_yaml(COMPOSE_SENTINEL)["services"].items():
        merged.setdefault(name, {}).update(service)
    return merged


def test_every_image_is_pinned() -> None:
    for path, compose in compose_files():
        for name, service in compose["services"].items():
            image = service.get("image")
            if image is None:
                continue
            if image.startswith("table-jackpot:"):
                assert image == IMAGE, f"{path.name} {name}: the release's tag"
                continue
            tag = image.rpartition(":")[2]
            exact = re.fullmatch(r"v?\d+\.\d+\.\d+", tag) or "@sha256:" in image
            assert exact, f"{path.name} {name}: {image} is not an exact release"


def test_only_the_controller_builds_the_image_and_the_others_never_pull_it() -> None:
    services = load_yaml(COMPOSE)["services"]
    builders = [name for name, s in services.items() if "build" in s]
    assert builders == ["controller"]
    for name, service in services.items():
        if service.get("image") == IMAGE and name != "controller":
            assert service["pull_policy"] == "never", name


def test_services_run_as_non_root_users() -> None:
    """The image's services run as its user; the others name a non-root user. The one-shot
    `certs` alone is root, to give the new certificate volumes to the image's user."""
    for name, service in merged_services().items():
        user = str(service.get("user", IMAGE_USER if service.get("image") == IMAGE else ""))
        if name == "certs":
            assert user == "0:0" and "restart" not in service
            assert f"chown -R {IMAGE_USER}:{IMAGE_USER}" in service["command"][0]
            continue
        assert user, f"{name}: no user"
        assert user.partition(":")[0] not in ("0", "root"), f"{name} runs as root"


def bind_mounts() -> list[tuple[str, str, Path]]:
    """(file, service, host path relative to the repository) of every bind mount."""
    found = []
    for path, compose in compose_files():
        for name, service in compose["services"].items():
            for volume in service.get("volumes", []):
                source = volume.split(":")[0]
                if source.startswith((".", "/")):
                    host = (path.parent / source).resolve().relative_to(ROOT)
                    found.append((path.name, name, host))
    return found


BIND_MOUNTS = bind_mounts()


@pytest.mark.parametrize(
    ("file", "service", "host"), BIND_MOUNTS, ids=[f"{m[1]}:{m[2]}" for m in BIND_MOUNTS]
)
def test_bind_mounts_exist_in_the_repository(file: str, service: str, host: Path) -> None:
    if host in ELSEWHERE and not (ROOT / host).exists():
        pytest.skip(f"{host} is written on another branch")
    assert (ROOT / host).exists(), f"{file} {service}: {host} does not exist"
    assert not str(host).startswith(".."), "inside the repository"


def test_bind_mounts_cover_rules_prometheus_alertmanager_and_grafana() -> None:
    hosts = {str(host) for _, _, host in BIND_MOUNTS}
    assert {
        "deploy/rules",
        "deploy/prometheus/prometheus.yml",
        "deploy/prometheus/rules",
        "deploy/alertmanager/alertmanager.yml",
        "deploy/grafana/provisioning",
        "deploy/grafana/dashboards",
    } <= hosts


def test_named_volumes_are_declared_and_used() -> None:
    declared: set[str] = set()
    used: set[str] = set()
    for _, compose in compose_files():
        declared |= set(compose.get("volumes") or {})
        for service in compose["services"].values():
            for volume in service.get("volumes", []):
                source = volume.split(":")[0]
                if not source.startswith((".", "/")):
                    used.add(source)
    assert used == declared


def test_every_agent_keeps_its_outbox_in_a_volume_of_its_own() -> None:
    owners: dict[str, list[str]] = {}
    for name, service in merged_services().items():
        for volume in service.get("volumes", []):
            owners.setdefault(volume.split(":")[0], []).append(name)
    agents = agent_services()
    assert len(agents) >= 3
    for name, service in agents.items():
        state = flag_value(service["command"], "--state-dir")
        volume = mount_of(service, state + "/outbox")
        assert not volume.startswith((".", "/")), f"{name}: a named volume"
        assert owners[volume] == [name], f"{name}: {volume} is shared"
        assert service["restart"] == "on-failure", "a restarted agent re-sends its outbox"


def test_long_running_services_have_healthchecks_and_waits_use_them() -> None:
    services = merged_services()
    one_shot = {"certs"}
    for name, service in services.items():
        if name in one_shot or "tools" in service.get("profiles", []):
            continue
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name}: no healthcheck"
        if test[0] == "CMD" and test[1] == "python":
            compile(test[3], f"{name} healthcheck", "exec")
    for name, service in services.items():
        depends = service.get("depends_on", {})
        for target, condition in depends.items() if isinstance(depends, dict) else []:
            assert target in services, f"{name} waits for an unknown {target}"
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in services[target], f"{name} waits for {target}'s health"
            if condition["condition"] == "service_completed_successfully":
                assert target in one_shot


def test_healthchecks_ask_the_ports_the_programs_serve() -> None:
    services = load_yaml(COMPOSE)["services"]
    controller = services["controller"]
    assert f":{flag_value(controller['command'], '--metrics-port')}/healthz" in " ".join(
        controller["healthcheck"]["test"]
    )
    for name, agent in agent_services().items():
        port = flag_value(agent["command"], "--metrics-port")
        assert f"localhost:{port}/metrics" in " ".join(services[name]["healthcheck"]["test"])


def rules_files(command: list[str], service: dict[str, Any]) -> list[Path]:
    """The --rules files of a controller command, as files of the repository."""
    files = []
    for index, word in enumerate(command):
        if word == "--rules":
            container = command[index + 1]
            (source,) = [
                v.split(":")[:2]
                for v in service["volumes"]
                if container.startswith(v.split(":")[1] + "/")
            ]
            files.append(
                (COMPOSE.parent / source[0]).resolve() / container.removeprefix(source[1] + "/")
            )
    return files


@pytest.mark.parametrize("path", [COMPOSE, COMPOSE_SENTINEL], ids=lambda p: p.name)
def test_the_controllers_apply_every_rules_submission(path: Path) -> None:
    base = load_yaml(COMPOSE)["services"]["controller"]
    command = load_yaml(path)["services"]["controller"]["command"]
    files = rules_files(command, base)
    assert {f.name for f in files} == {p.name for p in (ROOT / "deploy/rules").glob("*.toml")}
    submissions = [load_submission(f) for f in files]  # the controller's own validation
    groups = [g.link_group_id for s in submissions for g in s.link_groups]
    tables = {t.table_id: t for s in submissions for t in s.tables}
    assert len(groups) == len(set(groups)), "one link group in one submission"
    assert len(tables) == sum(len(s.tables) for s in submissions)
    for agent in agent_services().values():
        assert flag_value(agent["command"], "--table-id") in tables, "an agent of a listed table"
    parsed = controller_cli._parser()[0].parse_args(command[1:])
    assert not parsed.first_install, "never on the command line: declared per `up`"


def test_first_install_is_the_operators_declaration() -> None:
    controller = load_yaml(COMPOSE)["services"]["controller"]
    value = controller["environment"]["JACKPOT_FIRST_INSTALL"]
    assert value == "${JACKPOT_FIRST_INSTALL:-false}", "off unless the `up` sets it"
    for given, expected in (("false", False), ("true", True)):
        parser, serve = controller_cli._parser()
        settings.apply(serve, None, {"JACKPOT_FIRST_INSTALL": given})
        assert parser.parse_args(controller["command"][1:]).first_install is expected
    assert "JACKPOT_FIRST_INSTALL=true docker compose" in COMPOSE.read_text(encoding="utf-8")


def test_the_jackpotctl_tool_service() -> None:
    tool = load_yaml(COMPOSE)["services"]["jackpotctl"]
    assert tool["profiles"] == ["tools"], "never started by `up`"
    args = ctl_main._parser().parse_args([*tool["entrypoint"][1:], "jackpots", "list"])
    assert args.controller == "controller:50051"
    env = tool["environment"]
    for variable in ("JACKPOT_CA", "JACKPOT_CERT", "JACKPOT_KEY"):
        assert mount_of(tool, env[variable]) == "ops-certs", variable
    assert Path(env["JACKPOT_CERT"]).stem == "demo-supervisor"
    assert "run --rm jackpotctl jackpots list" in COMPOSE.read_text(encoding="utf-8")


def test_alertmanager_is_where_prometheus_sends_alerts() -> None:
    services = load_yaml(COMPOSE)["services"]
    alertmanager = services["alertmanager"]
    config = next(
        v.split(":")[1] for v in alertmanager["volumes"] if v.startswith("../alertmanager/")
    )
    assert f"--config.file={config}" in alertmanager["command"]
    assert "9093:9093" in alertmanager["ports"]
    assert "alertmanager" in services["prometheus"]["depends_on"]
    alerting = load_yaml(PROMETHEUS_CONFIG).get("alerting")
    if alerting is not None:  # written on another branch
        targets = {
            target
            for manager in alerting["alertmanagers"]
            for static in manager.get("static_configs", [])
            for target in static["targets"]
        }
        assert targets == {"alertmanager:9093"}

"""deploy/kubernetes/sentinel, the base with the Sentinel Component as kustomize renders it:
the single Redis is gone; the controllers and the journal export reach the primary through
the three Sentinels the StatefulSet runs and wait for a replica; every server is durable;
and the pods' config script, run under /bin/sh with a stand-in for redis-cli, makes the right
server the primary (pod 0 on the first start, else whichever the Sentinels name).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from controller.ctl import main as ctl_main
from controller.runtime import cli as controller_cli
from controller.store.connection import parse_sentinel_url
from tests.deploy.test_deploy_files import flag_value, selects
from tests.deploy.test_kubernetes import RENDERED, by_name

PASSWORD = "0123456789abcdef" * 4


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    return by_name(RENDERED["deploy/kubernetes/sentinel"])


def base() -> dict[tuple[str, str], dict[str, Any]]:
    return by_name(RENDERED["deploy/kubernetes"])


def statefulset() -> dict[str, Any]:
    return objects()[("StatefulSet", "jackpot-redis-ha")]


def pod_names() -> set[str]:
    spec = statefulset()["spec"]
    return {f"jackpot-redis-ha-{i}.{spec['serviceName']}" for i in range(spec["replicas"])}


def container(name: str) -> dict[str, Any]:
    pod = statefulset()["spec"]["template"]["spec"]
    found: list[dict[str, Any]] = [
        c for c in pod["initContainers"] + pod["containers"] if c["name"] == name
    ]
    (one,) = found
    return one


def init_script() -> str:
    return str(container("config")["command"][-1])


def test_the_single_redis_is_replaced() -> None:
    found = objects()
    assert ("StatefulSet", "jackpot-redis") not in found
    assert ("Service", "jackpot-redis") not in found
    service = found[("Service", statefulset()["spec"]["serviceName"])]["spec"]
    assert service["clusterIP"] == "None" and service["publishNotReadyAddresses"] is True
    assert {p["port"] for p in service["ports"]} == {6379, 26379}
    assert statefulset()["spec"]["replicas"] == 3
    budget = found[("PodDisruptionBudget", "jackpot-redis-ha")]["spec"]
    assert budget["minAvailable"] == 2


def test_the_controller_uses_the_sentinels_and_waits_for_a_replica() -> None:
    (deployment,) = [o for k, o in objects().items() if k == ("Deployment", "jackpot-controller")]
    (controller,) = deployment["spec"]["template"]["spec"]["containers"]
    command = controller["command"]
    args = controller_cli._parser()[0].parse_args(command[1:])
    url = parse_sentinel_url(args.redis)
    assert {host for host, _ in url.sentinels} == pod_names()
    assert {port for _, port in url.sentinels} == {26379}
    monitor = re.findall(r"sentinel monitor (\S+) \$primary 6379 (\d+)", init_script())
    assert monitor == [(url.service, str(len(url.sentinels) // 2 + 1))]
    assert args.wait_replicas >= 1
    assert args.sentinel_password_file == args.redis_password_file
    # Everything else is the base's command, untouched by the patch.
    (base_controller,) = base()[("Deployment", "jackpot-controller")]["spec"]["template"]["spec"][
        "containers"
    ]
    base_args = vars(controller_cli._parser()[0].parse_args(base_controller["command"][1:]))
    changed = {k for k, v in vars(args).items() if base_args[k] != v}
    assert changed == {"redis", "sentinel_password_file", "wait_replicas"}


def test_the_journal_export_uses_the_sentinels() -> None:
    job = objects()[("CronJob", "jackpot-journal-export")]
    (export,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    script = export["command"][-1]
    variables = dict(re.findall(r"\b(\w+)=(\S+);", script))
    for name, value in variables.items():
        script = script.replace(f"${name}", value)
    calls = [
        ctl_main._parser().parse_args(shlex.split(text)[1:])
        for text in re.findall(r"\bjackpotctl\b[^;]*", script)
    ]
    assert [(c.area, c.action) for c in calls] == [("journal", "export"), ("journal", "trim")]
    for call in calls:
        assert {host for host, _ in parse_sentinel_url(call.redis).sentinels} == pod_names()
        assert call.sentinel_password_file == call.redis_password_file


def test_network_policy_admits_clients_and_the_pods_themselves() -> None:
    pods = statefulset()["spec"]["template"]["metadata"]["labels"]
    (policy,) = [
        o["spec"]
        for (kind, _), o in objects().items()
        if kind == "NetworkPolicy" and selects(o["spec"]["podSelector"], pods)
    ]
    (rule,) = policy["ingress"]
    assert {p["port"] for p in rule["ports"]} == {6379, 26379}
    names = {peer["podSelector"]["matchLabels"]["app.kubernetes.io/name"] for peer in rule["from"]}
    assert names == {"jackpot-controller", "jackpot-journal-export", "jackpot-redis-ha"}


def test_every_server_is_durable() -> None:
    redis = container("redis")["command"]
    assert redis[:2] == ["redis-server", "/run/redis/redis.conf"]
    assert flag_value(redis, "--appendonly") == "yes"
    assert flag_value(redis, "--appendfsync") == "always"
    assert flag_value(redis, "--maxmemory-policy") == "noeviction"
    mounts = {m["mountPath"]: m["name"] for m in container("redis")["volumeMounts"]}
    claims = {c["metadata"]["name"] for c in statefulset()["spec"]["volumeClaimTemplates"]}
    assert mounts[flag_value(redis, "--dir")] in claims
    sentinel = container("sentinel")
    assert sentinel["command"] == ["redis-server", "/run/sentinel/sentinel.conf", "--sentinel"]
    (mount,) = [m for m in sentinel["volumeMounts"] if m["mountPath"] == "/run/sentinel"]
    assert not mount.get("readOnly"), "a Sentinel rewrites its config"
    volumes = {v["name"]: v for v in statefulset()["spec"]["template"]["spec"]["volumes"]}
    for name in ("conf", "sentinel-conf"):
        assert volumes[name]["emptyDir"]["medium"] == "Memory", "the password stays off disk"
    assert volumes["auth"]["secret"]["secretName"] == "jackpot-redis"


def run_init(tmp_path: Path, me: str, answer: str | None, password: str = PASSWORD) -> Any:
    """Run the init container's script as pod ``me``, with a redis-cli that prints
    ``answer`` (None: fails as when no Sentinel runs yet); return (result, redis.conf lines,
    sentinel.conf lines)."""
    bin_dir, run = tmp_path / "bin", tmp_path / "run"
    for directory in (bin_dir, run / "redis", run / "sentinel", tmp_path / "auth"):
        directory.mkdir(parents=True, exist_ok=True)
    (tmp_path / "auth" / "password").write_text(password + "\n", encoding="utf-8")
    stub = bin_dir / "redis-cli"
    if answer is None:
        stub.write_text("#!/bin/sh\necho 'Could not connect' >&2\nexit 1\n")
    else:
        stub.write_text(f"#!/bin/sh\nprintf '%s\\n' '{answer}' 6379\n")
    stub.chmod(0o755)
    hostname = bin_dir / "hostname"
    hostname.write_text(f"#!/bin/sh\necho {me}\n")
    hostname.chmod(0o755)
    script = (
        init_script()
        .replace("/etc/redis-auth/", f"{tmp_path}/auth/")
        .replace("/run/redis/", f"{run}/redis/")
        .replace("/run/sentinel/", f"{run}/sentinel/")
    )
    result = subprocess.run(
        ["/bin/sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )
    conf = run / "redis" / "redis.conf"
    sentinel = run / "sentinel" / "sentinel.conf"
    return result, lines_of(conf), lines_of(sentinel)


def lines_of(path: Path) -> list[str] | None:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else None


POD0, POD1, POD2 = sorted(pod_names())


@pytest.mark.parametrize(
    ("me", "answer", "primary"),
    [
        ("jackpot-redis-ha-0", None, POD0),  # the first start: pod 0 is the primary
        ("jackpot-redis-ha-1", None, POD0),
        ("jackpot-redis-ha-0", POD2, POD2),  # after a failover: the old primary rejoins
        ("jackpot-redis-ha-2", POD2, POD2),
        ("jackpot-redis-ha-1", "NOAUTH Authentication required.", POD0),  # an error reply
    ],
)
def test_the_config_script_chooses_the_primary(
    tmp_path: Path, me: str, answer: str | None, primary: str
) -> None:
    result, conf, sentinel = run_init(tmp_path, me, answer)
    assert result.returncode == 0, result.stderr
    full = f"{me}.jackpot-redis-ha"
    expected = [f"requirepass {PASSWORD}", f"masterauth {PASSWORD}", f"replica-announce-ip {full}"]
    if primary != full:
        expected.append(f"replicaof {primary} 6379")
    assert conf == expected
    assert f"sentinel monitor jackpot {primary} 6379 2" in sentinel
    assert f"sentinel announce-ip {full}" in sentinel
    for line in (f"sentinel auth-pass jackpot {PASSWORD}", f"requirepass {PASSWORD}"):
        assert line in sentinel
    for path in (
        tmp_path / "run" / "redis" / "redis.conf",
        tmp_path / "run/sentinel/sentinel.conf",
    ):
        assert path.stat().st_mode & 0o077 == 0, "readable by the pod's user only"


@pytest.mark.parametrize("password", ["", "two words", "semi;colon"])
def test_the_config_script_refuses_a_bad_password(tmp_path: Path, password: str) -> None:
    result, conf, sentinel = run_init(tmp_path, "jackpot-redis-ha-0", None, password)
    assert result.returncode != 0 and "openssl rand -hex 32" in result.stderr
    assert conf is None and sentinel is None

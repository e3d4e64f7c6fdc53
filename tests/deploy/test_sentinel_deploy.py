"""deploy/compose/docker-compose.sentinel.yml: the controller is given the Sentinels the file
starts and waits for a replica; the servers' and Sentinels' shell scripts, run under /bin/sh,
write the configs they should; and the Sentinel config they write is one Debian's
redis-server runs (with the compose host names replaced by loopback addresses).

Nothing here starts a container."""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from controller.runtime.cli import _parser as controller_parser
from controller.store.connection import DEFAULT_SENTINEL_PORT, check_url, parse_sentinel_url
from controller.testing import RedisServer
from controller.testing.children import free_port, stop_process
from tests.deploy.test_deploy_files import (
    COMPOSE,
    COMPOSE_SENTINEL,
    compose_script,
    flag_value,
    load_yaml,
)

SECRET = "/run/secrets/redis-password"
PASSWORD = "0123456789abcdef" * 4


def override() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = load_yaml(COMPOSE_SENTINEL)["services"]
    return services


def sentinel_services() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in override().items() if name.startswith("sentinel-")}


def run_script(
    script: str, tmp_path: Path, password: str = PASSWORD
) -> subprocess.CompletedProcess[str]:
    """Run a service's script with the secret and its directories moved under ``tmp_path``
    and ``exec redis-server ...`` left out."""
    secret = tmp_path / "password"
    secret.write_text(password + "\n", encoding="utf-8")
    for directory in ("data", "run-redis"):
        (tmp_path / directory).mkdir(exist_ok=True)
    script = (
        script.replace(SECRET, str(secret))
        .replace("/data/", f"{tmp_path}/data/")
        .replace("/run/redis/", f"{tmp_path}/run-redis/")
    )
    script = script.partition("exec redis-server")[0] + "exit 0"
    return subprocess.run(
        ["/bin/sh", "-c", script], capture_output=True, text=True, timeout=10, check=False
    )


def server_command(service: dict[str, Any]) -> list[str]:
    """The redis-server command line a server's script ends with."""
    return shlex.split(compose_script(service).partition("exec ")[2])


def test_the_controller_is_given_the_sentinels_of_the_file_and_waits_for_a_replica() -> None:
    command = override()["controller"]["command"]
    controller_parser()[0].parse_args(command[1:])
    url = flag_value(command, "--redis")
    check_url(url)
    parsed = parse_sentinel_url(url)
    assert {host for host, _ in parsed.sentinels} == set(sentinel_services())
    assert {port for _, port in parsed.sentinels} == {DEFAULT_SENTINEL_PORT}
    monitored = {
        tuple(re.findall(r"sentinel monitor (\S+) (\S+) (\d+) (\d+)", compose_script(s)))
        for s in sentinel_services().values()
    }
    assert len(monitored) == 1, "every Sentinel monitors the same"
    ((monitor,),) = monitored
    assert monitor[:3] == (parsed.service, "redis", "6379")
    assert int(monitor[3]) == len(sentinel_services()) // 2 + 1, "a majority of the Sentinels"
    assert int(flag_value(command, "--wait-replicas")) >= 1, "no acknowledged write lost"
    for option in ("--redis-password-file", "--sentinel-password-file"):
        assert flag_value(command, option) == SECRET
    base = load_yaml(COMPOSE)["services"]["controller"]
    assert base["secrets"] == ["redis-password"]
    assert {"redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"} <= set(
        override()["controller"]["depends_on"]
    )


def test_both_servers_are_durable_and_either_can_be_the_primary(tmp_path: Path) -> None:
    replica_of = {}
    for name in ("redis", "redis-replica"):
        service = override()[name]
        assert service["secrets"] == ["redis-password"]
        command = server_command(service)
        assert command[:2] == ["redis-server", "/run/redis/redis.conf"]
        assert flag_value(command, "--appendonly") == "yes"
        assert flag_value(command, "--appendfsync") == "always"
        assert flag_value(command, "--replica-announce-ip") == name
        replicaof = command.index("--replicaof") if "--replicaof" in command else None
        replica_of[name] = None if replicaof is None else command[replicaof + 1 :]
        work = tmp_path / name
        work.mkdir()
        done = run_script(compose_script(service), work)
        assert done.returncode == 0, done.stderr
        config = (work / "run-redis" / "redis.conf").read_text(encoding="utf-8")
        assert config == f"requirepass {PASSWORD}\nmasterauth {PASSWORD}\n"
    assert replica_of == {"redis": None, "redis-replica": ["redis", "6379"]}


def test_each_sentinel_has_its_own_volume_and_keeps_what_it_learnt(tmp_path: Path) -> None:
    volumes = [s["volumes"] for s in sentinel_services().values()]
    assert len({v[0].split(":")[0] for v in volumes}) == len(volumes) == 3
    assert all(v[0].endswith(":/data") for v in volumes)
    script = compose_script(sentinel_services()["sentinel-1"])
    done = run_script(script, tmp_path)
    assert done.returncode == 0, done.stderr
    config = tmp_path / "data" / "sentinel.conf"
    assert config.stat().st_mode & 0o077 == 0, "readable by the Sentinel's user only"
    lines = config.read_text(encoding="utf-8").splitlines()
    for line in (
        f"sentinel auth-pass jackpot {PASSWORD}",
        f"requirepass {PASSWORD}",
        f"sentinel sentinel-pass {PASSWORD}",
        "sentinel resolve-hostnames yes",
        "sentinel announce-hostnames yes",
    ):
        assert line in lines
    config.write_text("port 26379\n# what the Sentinel rewrote\n", encoding="utf-8")
    again = run_script(script, tmp_path)
    assert again.returncode == 0, again.stderr
    assert "what the Sentinel rewrote" in config.read_text(encoding="utf-8"), "kept"
    (tmp_path / "bad").mkdir()
    refused = run_script(script, tmp_path / "bad", "")
    assert refused.returncode != 0
    assert "openssl rand -hex 32" in refused.stderr
    assert not (tmp_path / "bad" / "data" / "sentinel.conf").exists()


def test_debian_redis_server_runs_the_sentinel_config(tmp_path: Path) -> None:
    """The written config, with the compose names replaced by a local primary's address,
    starts a real Sentinel that monitors that primary with the password."""
    done = run_script(compose_script(sentinel_services()["sentinel-1"]), tmp_path)
    assert done.returncode == 0, done.stderr
    config = tmp_path / "data" / "sentinel.conf"
    with RedisServer(
        tmp_path / "primary", extra_args=("--requirepass", PASSWORD, "--masterauth", PASSWORD)
    ) as primary:
        port = free_port()
        text = config.read_text(encoding="utf-8")
        text = text.replace("port 26379", f"port {port}\nbind 127.0.0.1")
        text = text.replace("jackpot redis 6379", f"jackpot 127.0.0.1 {primary.port}")
        config.write_text(text + f"dir {tmp_path / 'data'}\n", encoding="utf-8")
        assert_sentinel_monitors(config, port, primary.port, PASSWORD)


@pytest.mark.parametrize("name", ["redis", "redis-replica", "sentinel-1"])
def test_a_bad_password_stops_a_script(tmp_path: Path, name: str) -> None:
    refused = run_script(compose_script(override()[name]), tmp_path, "semi;colon")
    assert refused.returncode != 0
    assert "openssl rand -hex 32" in refused.stderr


def assert_sentinel_monitors(config: Path, port: int, primary_port: int, password: str) -> None:
    """Start a real Sentinel (Debian's redis-server) from ``config`` on ``port`` and assert it
    reaches the primary on ``primary_port`` (authenticating with ``password``) as ``jackpot``
    with quorum 2; waits are bounded, and the Sentinel is stopped either way."""
    sentinel = subprocess.Popen(
        ["redis-server", str(config), "--sentinel"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(port=port, password=password, decode_responses=True)
        state: dict[str, Any] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # bounded: until it has reached the primary
            try:
                state = client.sentinel_master("jackpot")  # type: ignore[assignment]
                if state.get("role-reported") == "master" and not state["is_sdown"]:
                    break
            except redis.RedisError:
                pass
            time.sleep(0.1)
        client.close()
        assert state.get("role-reported") == "master", state
        assert int(state["port"]) == primary_port and state["quorum"] == 2
    finally:
        stop_process(sentinel)

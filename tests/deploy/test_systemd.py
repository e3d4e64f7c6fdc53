"""deploy/systemd: the on-premises units. ``systemd-analyze verify`` accepts every unit in a
root directory holding the programs they start; every command line parses with the real
program's parser (the controller's with deploy/systemd/controller.toml applied by the real
settings code); every secret comes from a credential; the Redis unit's config script and
command start a real redis-server that is durable and requires the password, and the Sentinel
unit's script writes a config a real Sentinel runs.

Nothing here needs a running systemd. ``systemd-analyze`` is Debian's ``systemd`` package:
without it the verify tests skip, unless JACKPOT_REQUIRE_SYSTEMD=1 (set by .ci/run, which
installs it) makes them fail.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from controller.ctl import main as ctl_main
from controller.runtime import cli as controller_cli
from controller.runtime import settings
from controller.store.connection import check_url, parse_sentinel_url
from controller.testing import RedisServer, free_port, stop_process
from table_agent.console import cli as console_cli
from tests.deploy.test_sentinel_deploy import assert_sentinel_monitors

ROOT = Path(__file__).resolve().parents[2]
SYSTEMD = ROOT / "deploy" / "systemd"
UNITS = sorted(p for p in SYSTEMD.iterdir() if p.suffix in (".service", ".timer"))
SERVICES = [p for p in UNITS if p.suffix == ".service"]
CONTROLLER_TOML = SYSTEMD / "controller.toml"
PROMETHEUS_YML = ROOT / "deploy" / "prometheus" / "prometheus.yml"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
REQUIRED = os.environ.get("JACKPOT_REQUIRE_SYSTEMD") == "1"  # set by .ci/run
PASSWORD = "0123456789abcdef" * 4
INSTANCE = "cs-1"

# What the example environment files of the units' install notes hold.
EXAMPLE_ENV = {
    "JACKPOT_CONTROLLER": "controller.casino.internal:50051",
    "JACKPOT_REDIS_URL": "sentinel://10.0.0.11:26379,10.0.0.12:26379,10.0.0.13:26379/jackpot",
}


def unit_name(path: Path) -> str:
    """The unit's name as systemctl knows it (a template with the instance ``cs-1``)."""
    return path.name.replace("@.", f"@{INSTANCE}.")


def directives(path: Path) -> dict[str, dict[str, list[str]]]:
    """section -> key -> values of a unit file, continuation lines joined by a space (as
    systemd joins them), comments left out. An empty assignment is kept (it resets a list)."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    found: dict[str, dict[str, list[str]]] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        header = re.fullmatch(r"\[(\w+)\]", line)
        if header:
            section = header[1]
            found.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        assert sep and section, f"{path.name}: not a directive: {line}"
        found[section].setdefault(key.strip(), []).append(value.strip())
    return found


def one(unit: dict[str, dict[str, list[str]]], section: str, key: str) -> str:
    (value,) = unit[section][key]
    return value


def specifiers(path: Path, dirs: dict[str, Path]) -> dict[str, str]:
    """The systemd specifiers the units use, for ``path``'s unit, with its directories in
    ``dirs`` (credentials ``d``, state ``S``, runtime ``t``)."""
    return {
        "%i": INSTANCE,
        "%d": str(dirs["d"]),
        "%S": str(dirs["S"]),
        "%t": str(dirs["t"]),
        "%n": unit_name(path),
    }


def command_line(
    path: Path, line: str, dirs: dict[str, Path], env: dict[str, str] | None = None
) -> list[str]:
    """An Exec line as the argument vector systemd gives the program: specifiers first, then
    words (quotes as the shell's: the units use no backslash escapes), then ``${VAR}`` from the
    environment and ``$$`` as ``$``. A specifier or variable the test does not know fails."""
    assert "\\" not in line, f"{path.name}: no backslash escapes in {line!r}"
    for specifier, value in specifiers(path, dirs).items():
        line = line.replace(specifier, value)
    assert not re.search(r"%[^%]", line.replace("%%", "")), f"{path.name}: unknown specifier"
    line = line.replace("%%", "%")
    env = {**EXAMPLE_ENV, **(env or {})}
    words = []
    for word in shlex.split(line):
        word = re.sub(r"(?<!\$)\$\{(\w+)\}", lambda m: env[m[1]], word.replace("$$", "\0"))
        assert "$" not in word, f"{path.name}: a bare $ in {word!r} (systemd would expand it)"
        words.append(word.replace("\0", "$"))
    return words


def credentials(unit: dict[str, dict[str, list[str]]]) -> dict[str, str]:
    """credential name -> source file of every LoadCredential=."""
    return dict(v.split(":", 1) for v in unit["Service"].get("LoadCredential", []))


def fake_dirs(tmp_path: Path) -> dict[str, Path]:
    dirs = {key: tmp_path / name for key, name in (("d", "cred"), ("S", "state"), ("t", "run"))}
    for directory in dirs.values():
        directory.mkdir(parents=True, exist_ok=True)
    return dirs


DIRS = {"d": Path("/run/credentials/UNIT"), "S": Path("/var/lib"), "t": Path("/run")}


def unit_of(name: str) -> tuple[Path, dict[str, dict[str, list[str]]]]:
    path = SYSTEMD / name
    return path, directives(path)


def test_the_units_exist() -> None:
    names = {p.name for p in UNITS}
    assert names == {
        "jackpot-controller.service",
        "table-agent@.service",
        "jackpot-redis.service",
        "jackpot-redis-sentinel.service",
        "jackpot-journal-export.service",
        "jackpot-journal-export.timer",
    }


def test_directive_parser(tmp_path: Path) -> None:
    unit = tmp_path / "x@.service"
    unit.write_text("[Service]\n# c\nExecStart=/bin/a %i \\\n  '$$x' ${V}\nExecStart=\n")
    parsed = directives(unit)
    assert parsed["Service"]["ExecStart"] == ["/bin/a %i    '$$x' ${V}", ""]
    line = parsed["Service"]["ExecStart"][0]
    assert command_line(unit, line, DIRS, {"V": "v w"}) == ["/bin/a", "cs-1", "$x", "v w"]
    with pytest.raises(AssertionError):
        command_line(unit, "/bin/a $HOME", DIRS)
    with pytest.raises(AssertionError):
        command_line(unit, "/bin/a %h", DIRS)


# --- systemd-analyze verify -----------------------------------------------------------------


@pytest.fixture(scope="module")
def verify_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root directory with the system's units, these units in /etc/systemd/system, and the
    programs they start at the paths they start them from (copies of the real ones)."""
    if SYSTEMD_ANALYZE is None:
        if REQUIRED:
            pytest.fail("JACKPOT_REQUIRE_SYSTEMD=1 but systemd-analyze is not on PATH")
        pytest.skip("systemd-analyze not on PATH (Debian: apt-get install systemd)")
    system = Path("/usr/lib/systemd/system")
    assert (system / "sysinit.target").is_file(), "the system's units (systemd package)"
    root = tmp_path_factory.mktemp("root")
    shutil.copytree(system, root / "usr/lib/systemd/system", symlinks=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    for unit in UNITS:
        shutil.copy(unit, root / "etc/systemd/system" / unit.name)
    venv_bin = Path(sys.executable).parent  # the console scripts of this installation
    programs = {
        "/opt/table-jackpot/bin/jackpot-controller": venv_bin / "jackpot-controller",
        "/opt/table-jackpot/bin/jackpotctl": venv_bin / "jackpotctl",
        "/opt/table-agent/bin/table-agent": venv_bin / "table-agent",
        "/usr/bin/redis-server": Path(shutil.which("redis-server") or ""),
        "/usr/bin/sh": Path("/bin/sh").resolve(),
    }
    for target, source in programs.items():
        assert source.is_file(), f"{source} (for {target})"
        (root / target.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, root / target.lstrip("/"))
    (root / "bin").symlink_to("usr/bin")
    return root


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_systemd_analyze_verify(verify_root: Path, path: Path) -> None:
    assert SYSTEMD_ANALYZE is not None
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", f"--root={verify_root}", unit_name(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 0, output
    ours = [line for line in output.splitlines() if path.stem.rstrip("@") in line]
    assert not ours, "\n".join(ours)


@pytest.mark.parametrize("path", SERVICES, ids=lambda p: p.name)
def test_systemd_analyze_security(verify_root: Path, path: Path) -> None:
    """systemd's own exposure score of each service (0 is the most confined, 10 the least)
    stays at 2 or below (--threshold counts tenths)."""
    assert SYSTEMD_ANALYZE is not None
    options = ["--offline=yes", "--threshold=20", "--no-pager", f"--root={verify_root}"]
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "security", *options, unit_name(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr


def test_systemd_analyze_verify_fails_a_missing_program(verify_root: Path, tmp_path: Path) -> None:
    """The check is real: a unit whose program is not installed fails."""
    assert SYSTEMD_ANALYZE is not None
    unit = verify_root / "etc/systemd/system/jackpot-missing.service"
    unit.write_text("[Service]\nExecStart=/opt/table-jackpot/bin/no-such-program\n")
    try:
        result = subprocess.run(
            [SYSTEMD_ANALYZE, "verify", f"--root={verify_root}", unit.name],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        unit.unlink()
    assert result.returncode != 0 and "no-such-program" in result.stderr


# --- the command lines, parsed by the programs' own parsers ---------------------------------


def controller_args() -> Any:
    """The controller unit's command line with controller.toml applied, parsed as
    ``jackpot-controller`` parses it."""
    path, unit = unit_of("jackpot-controller.service")
    argv = command_line(path, one(unit, "Service", "ExecStart"), DIRS)
    assert argv[0] == "/opt/table-jackpot/bin/jackpot-controller"
    parser, serve = controller_cli._parser()
    config = Path(argv[argv.index("--config") + 1])
    assert config == Path("/etc/jackpot") / CONTROLLER_TOML.name
    settings.apply(serve, CONTROLLER_TOML, {})  # an unknown key fails here
    return parser.parse_args(argv[1:])


def test_controller_command_and_settings() -> None:
    args = controller_args()
    assert args.command == "serve" and not args.insecure and not args.first_install
    assert args.listen == "0.0.0.0:50051" and args.metrics_port == 9102
    check_url(args.redis)
    sentinel = parse_sentinel_url(args.redis)
    assert len(sentinel.sentinels) == 3 and args.wait_replicas >= 1, "no acknowledged write lost"
    assert args.rules and all(p.parent == Path("/etc/jackpot/rules") for p in args.rules)
    for rules in args.rules:
        assert (ROOT / "deploy/rules" / rules.name).is_file(), rules
    assert args.workers >= 1
    assert args.deny_list == Path("/etc/jackpot/deny-list.txt"), "read in place: re-read live"


def test_controller_secrets_are_credentials() -> None:
    path, unit = unit_of("jackpot-controller.service")
    args = controller_args()
    creds = credentials(unit)
    given = {
        "--tls-cert": args.tls_cert,
        "--tls-key": args.tls_key,
        "--client-ca": args.client_ca,
        "--redis-password-file": args.redis_password_file,
        "--sentinel-password-file": args.sentinel_password_file,
    }
    credential_dir = Path("/run/credentials") / unit_name(path)
    for option, file in given.items():
        assert file is not None and file.parent in (DIRS["d"], credential_dir), (
            f"{option} {file} is not a credential"
        )
        assert file.name in creds, f"{option}: no LoadCredential={file.name}"
    assert creds["redis-password"] == "/etc/jackpot/redis-password"
    toml = tomllib.loads(CONTROLLER_TOML.read_text(encoding="utf-8"))
    assert not {"tls-key", "redis-password-file"} & set(toml), "secrets are on the unit's line"


def test_agent_command() -> None:
    path, unit = unit_of("table-agent@.service")
    argv = command_line(path, one(unit, "Service", "ExecStart"), DIRS)
    assert argv[:2] == ["/opt/table-agent/bin/table-agent", "console"]
    args = console_cli.parser().parse_args(argv[2:])
    assert args.table_id == INSTANCE and not args.insecure
    assert args.controller == EXAMPLE_ENV["JACKPOT_CONTROLLER"]
    state = one(unit, "Service", "StateDirectory").replace("%i", INSTANCE)
    assert args.state_dir == DIRS["S"] / state, "the outbox is in the unit's state directory"
    creds = credentials(unit)
    for file in (args.ca, args.cert, args.key):
        assert file.parent == DIRS["d"] and file.name in creds, file
    assert creds["table.key"] == "/etc/table-agent/%i/%i.key", "the table's own key"
    assert one(unit, "Service", "Restart") == "always"
    scraped = yaml.safe_load(PROMETHEUS_YML.read_text(encoding="utf-8"))
    (agents,) = [job for job in scraped["scrape_configs"] if job["job_name"] == "jackpot-agent"]
    ports = {target.rsplit(":", 1)[1] for c in agents["static_configs"] for target in c["targets"]}
    assert ports == {str(args.metrics_port)}, "the console serves what Prometheus scrapes"
    assert args.metrics_host == "0.0.0.0", "Prometheus scrapes the table PC from its own host"
    tty = one(unit, "Service", "TTYPath").removeprefix("/dev/")
    assert one(unit, "Unit", "Conflicts") == f"getty@{tty}.service"


def test_journal_export_commands() -> None:
    path, unit = unit_of("jackpot-journal-export.service")
    assert one(unit, "Service", "Type") == "oneshot"
    export, trim = (
        ctl_main._parser().parse_args(command_line(path, line, DIRS)[1:])
        for line in unit["Service"]["ExecStart"]
    )
    assert (export.area, export.action) == ("journal", "export")
    assert (trim.area, trim.action) == ("journal", "trim"), "trim only after the export"
    assert export.dir == DIRS["S"] / one(unit, "Service", "StateDirectory")
    assert export.redis == trim.redis == EXAMPLE_ENV["JACKPOT_REDIS_URL"]
    creds = credentials(unit)
    for file in (export.redis_password_file, trim.redis_password_file, trim.signing_key):
        assert file.parent == DIRS["d"] and file.name in creds, file
    _, timer = unit_of("jackpot-journal-export.timer")
    assert one(timer, "Timer", "OnCalendar") == "*:0/15"


@pytest.mark.parametrize("path", SERVICES, ids=lambda p: p.name)
def test_hardening(path: Path) -> None:
    service = directives(path)["Service"]
    for key, value in {
        "DynamicUser": "yes",
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "CapabilityBoundingSet": "",
    }.items():
        assert service.get(key) == [value], f"{path.name}: {key}={value}"
    if service["Type"] != ["oneshot"]:
        assert service["Restart"] in (["always"], ["on-failure"]), path.name
    text = " ".join(service.get("ExecStart", []) + service.get("ExecStartPre", []))
    for source in credentials(directives(path)).values():
        opened = re.search(rf"[\s=]{re.escape(source)}", text)  # not in a message's quotes
        assert not opened, f"{path.name}: {source} read directly, not as the credential"
    assert "JACKPOT_REDIS_PASSWORD" not in path.read_text(encoding="utf-8")


# --- Redis and Sentinel, run ----------------------------------------------------------------


def run_pre(
    path: Path, dirs: dict[str, Path], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run the unit's ExecStartPre (a /bin/sh script) as systemd would, with its directories
    under ``dirs``."""
    line = one(directives(path), "Service", "ExecStartPre")
    argv = command_line(path, line, dirs)
    assert argv[:2] == ["/bin/sh", "-c"] and len(argv) == 3
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
        env={"PATH": "/usr/bin:/bin", **env},
    )


def service_dirs(
    tmp_path: Path, unit: dict[str, dict[str, list[str]]], password: str
) -> dict[str, Path]:
    dirs = fake_dirs(tmp_path)
    for key, base in (("StateDirectory", "S"), ("RuntimeDirectory", "t")):
        for name in unit["Service"].get(key, []):
            (dirs[base] / name).mkdir(parents=True, exist_ok=True)
    (dirs["d"] / "redis-password").write_text(password + "\n", encoding="utf-8")
    return dirs


@pytest.mark.parametrize("replica", [False, True])
def test_redis_unit_starts_a_durable_redis_with_a_password(tmp_path: Path, replica: bool) -> None:
    path, unit = unit_of("jackpot-redis.service")
    dirs = service_dirs(tmp_path, unit, PASSWORD)
    env = {"JACKPOT_REDIS_REPLICAOF": "127.0.0.1 1"} if replica else {}
    done = run_pre(path, dirs, env)
    assert done.returncode == 0, done.stderr
    config = dirs["t"] / "jackpot-redis" / "redis.conf"
    assert config.stat().st_mode & 0o077 == 0, "readable by the service's user only"
    lines = config.read_text(encoding="utf-8").splitlines()
    expected = [f"requirepass {PASSWORD}", f"masterauth {PASSWORD}"]
    assert lines == expected + (["replicaof 127.0.0.1 1"] if replica else [])
    argv = command_line(path, one(unit, "Service", "ExecStart"), dirs)
    assert argv[:2] == ["/usr/bin/redis-server", str(config)]
    port = free_port()
    argv[argv.index("--port") + 1] = str(port)
    server = subprocess.Popen(
        [shutil.which("redis-server") or "redis-server", *argv[1:], "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(port=port, password=PASSWORD, decode_responses=True)
        deadline = time.monotonic() + 30
        while True:  # bounded: until it answers
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline and server.poll() is None, "no redis-server"
                time.sleep(0.1)
        got = {key: client.config_get(key)[key] for key in ("appendonly", "appendfsync")}
        assert got == {"appendonly": "yes", "appendfsync": "always"}
        assert client.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
        assert client.config_get("dir")["dir"] == str(dirs["S"] / "jackpot-redis")
        assert client.info("replication")["role"] == ("slave" if replica else "master")
        client.close()
        anonymous = redis.Redis(port=port)
        with pytest.raises(redis.AuthenticationError):
            anonymous.set("x", 1)
        anonymous.close()
    finally:
        stop_process(server)


@pytest.mark.parametrize("name", ["jackpot-redis.service", "jackpot-redis-sentinel.service"])
@pytest.mark.parametrize("password", ["", "two words", "semi;colon", 'quo"te'])
def test_a_bad_password_stops_the_start(tmp_path: Path, name: str, password: str) -> None:
    path, unit = unit_of(name)
    dirs = service_dirs(tmp_path, unit, password)
    done = run_pre(path, dirs, {"JACKPOT_REDIS_PRIMARY": "127.0.0.1"})
    assert done.returncode != 0
    assert "openssl rand -hex 32" in done.stderr
    assert not [p for p in (dirs["t"].rglob("*.conf")) if p.is_file()]
    assert not [p for p in (dirs["S"].rglob("*.conf")) if p.is_file()]


def sentinel_config(
    tmp_path: Path, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], Path]:
    path, unit = unit_of("jackpot-redis-sentinel.service")
    dirs = service_dirs(tmp_path, unit, PASSWORD)
    done = run_pre(path, dirs, env)
    return done, dirs["S"] / "jackpot-redis-sentinel" / "sentinel.conf"


def test_sentinel_unit_matches_the_controller() -> None:
    path, unit = unit_of("jackpot-redis-sentinel.service")
    script = one(unit, "Service", "ExecStartPre")
    ((service, quorum),) = re.findall(r"sentinel monitor (\S+) \S+ 6379 (\d+)", script)
    url = parse_sentinel_url(controller_args().redis)
    assert service == url.service
    assert int(quorum) == len(url.sentinels) // 2 + 1, "a majority of the Sentinels"
    argv = command_line(path, one(unit, "Service", "ExecStart"), DIRS)
    assert argv[0] == "/usr/bin/redis-server" and "--sentinel" in argv
    assert argv[1] == str(DIRS["S"] / one(unit, "Service", "StateDirectory") / "sentinel.conf")


def test_sentinel_config_is_written_once_and_runs(tmp_path: Path) -> None:
    missing, config = sentinel_config(tmp_path / "none", {})
    assert missing.returncode != 0 and "JACKPOT_REDIS_PRIMARY" in missing.stderr
    assert not config.exists()
    with RedisServer(
        tmp_path / "primary", extra_args=("--requirepass", PASSWORD, "--masterauth", PASSWORD)
    ) as primary:
        done, config = sentinel_config(tmp_path, {"JACKPOT_REDIS_PRIMARY": "127.0.0.1"})
        assert done.returncode == 0, done.stderr
        assert config.stat().st_mode & 0o077 == 0, "readable by the Sentinel's user only"
        text = config.read_text(encoding="utf-8")
        for line in (f"sentinel auth-pass jackpot {PASSWORD}", f"requirepass {PASSWORD}"):
            assert line in text.splitlines()
        port = free_port()
        text = text.replace("port 26379", f"port {port}\nbind 127.0.0.1")
        text = text.replace("jackpot 127.0.0.1 6379", f"jackpot 127.0.0.1 {primary.port}")
        config.write_text(text + f"dir {config.parent}\n", encoding="utf-8")
        again, _ = sentinel_config(tmp_path, {"JACKPOT_REDIS_PRIMARY": "10.9.9.9"})
        assert again.returncode == 0 and config.read_text(encoding="utf-8").startswith(
            f"port {port}"
        ), "a Sentinel's own config is kept"
        assert_sentinel_monitors(config, port, primary.port, PASSWORD)

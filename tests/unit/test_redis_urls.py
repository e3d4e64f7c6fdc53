"""Redis URLs without a Redis: sentinel:// parsing and its errors, the other schemes' checks,
what the command lines say about a bad URL, and the choice between WAIT and WAITAOF."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.runtime import settings
from controller.runtime.cli import main as controller_main
from controller.store.connection import (
    DEFAULT_SENTINEL_PORT,
    PrimaryConnection,
    PrimaryPool,
    RedisURLError,
    SentinelURL,
    check_url,
    connect,
    parse_sentinel_url,
    redacted,
)
from controller.store.durability import ReplicaWait, has_waitaof

# ------------------------------------------------------------------------------ sentinel://


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "sentinel://10.0.0.1:26379,10.0.0.2:26380/jackpot",
            SentinelURL((("10.0.0.1", 26379), ("10.0.0.2", 26380)), "jackpot"),
        ),
        (
            "sentinel://s1,s2,s3/jackpot?db=3",
            SentinelURL(
                tuple((host, DEFAULT_SENTINEL_PORT) for host in ("s1", "s2", "s3")), "jackpot", 3
            ),
        ),
        (
            "SENTINEL://[::1]:5000,[fe80::1]/my-primary.v2",
            SentinelURL((("::1", 5000), ("fe80::1", DEFAULT_SENTINEL_PORT)), "my-primary.v2"),
        ),
        (
            "sentinel://ops:p%40ss@sentinel-1:26379/jackpot",
            SentinelURL((("sentinel-1", 26379),), "jackpot", 0, "ops", "p@ss"),
        ),
        (
            "sentinel://:secret@h:1/jackpot",
            SentinelURL((("h", 1),), "jackpot", 0, None, "secret"),
        ),
    ],
)
def test_a_sentinel_url_names_the_sentinels_the_service_and_the_database(
    url: str, expected: SentinelURL
) -> None:
    parsed = parse_sentinel_url(url)
    assert parsed == expected
    assert parsed.password == expected.password
    check_url(url)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("sentinel://", "no Sentinel address"),
        ("sentinel:///jackpot", "no Sentinel address"),
        ("sentinel://h:26379", "no service name after the Sentinels"),
        ("sentinel://h:26379/", "no service name after the Sentinels"),
        ("sentinel://h:port/jackpot", "Sentinel address 'h:port': the port must be a number"),
        ("sentinel://h:0/jackpot", "Sentinel address 'h:0': the port must be a number 1 to 65535"),
        ("sentinel://h:65536/jackpot", "Sentinel address 'h:65536': the port must be a number"),
        ("sentinel://h:/jackpot", "Sentinel address 'h:': the port must be a number"),
        ("sentinel://h:1,,h:2/jackpot", "an empty Sentinel address"),
        ("sentinel://h:1,/jackpot", "an empty Sentinel address"),
        ("sentinel://h:1,h:1/jackpot", "a Sentinel is listed twice"),
        ("sentinel://h_1 :1/jackpot", "'h_1 ' is not a host name or address"),
        ("sentinel://::1:26379/jackpot", "write an IPv6 address as [ADDRESS]:PORT"),
        ("sentinel://[::1/jackpot", "Sentinel address '[::1' is not [IPV6]:PORT"),
        ("sentinel://[::1]x/jackpot", "Sentinel address '[::1]x' is not [IPV6]:PORT"),
        ("sentinel://h:1/jackpot/0", "the path must be just the service name, not 'jackpot/0'"),
        ("sentinel://h:1/jack pot", "service name 'jack pot': at most 128 letters"),
        ("sentinel://h:1/" + "j" * 129, "at most 128 letters, digits"),
        ("sentinel://h:1/jackpot?db=one", "db must be a database number (0, 1, ...), not 'one'"),
        ("sentinel://h:1/jackpot?db=-1", "db must be a database number (0, 1, ...), not '-1'"),
        ("sentinel://h:1/jackpot?db=", "db must be a database number (0, 1, ...), not ''"),
        ("sentinel://h:1/jackpot?db=1&db=2", "db is given twice"),
        ("sentinel://h:1/jackpot?ssl=true", "unknown option 'ssl' (a sentinel:// URL takes only"),
        ("sentinel://h:1/jackpot?&", "cannot read the options '&'"),
        ("sentinel://h:1/jackpot#x", "a fragment (#...) has no meaning here"),
        ("sentinel://secret@h:1/jackpot", "credentials must be written USER:PASSWORD@"),
    ],
)
def test_a_bad_sentinel_url_is_refused_saying_what_is_wrong(url: str, problem: str) -> None:
    with pytest.raises(RedisURLError) as refused:
        check_url(url)
    assert problem in str(refused.value)
    assert str(refused.value).startswith("Redis URL 'sentinel://")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://h:6379/0", "the scheme must be redis://, rediss:// (TLS), unix:// or sentinel://"),
        ("h:6379", "the scheme must be redis://"),
        ("redis:/h", "the scheme must be redis://"),
        ("redis://h:port/0", "Port could not be cast to integer value as 'port'"),
        ("redis://h:70000/0", "Port out of range"),
        ("redis:///0", "no host (redis://HOST:PORT/DB)"),
        ("redis://h:6379/zero", "the path must be the database number (/0, /1, ...), not '/zero'"),
        ("unix://", "no socket path (unix:///path/to/redis.sock)"),
    ],
)
def test_a_bad_url_of_another_scheme_is_refused_saying_what_is_wrong(
    url: str, problem: str
) -> None:
    with pytest.raises(RedisURLError, match=r"^Redis URL ") as refused:
        check_url(url)
    assert problem in str(refused.value)


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:6379/0", "redis://h", "rediss://h:6380/2", "unix:///run/r.sock"]
)
def test_urls_of_one_server_are_accepted(url: str) -> None:
    check_url(url)


def test_a_password_is_never_in_a_message() -> None:
    assert redacted("sentinel://:s3cret@h:1/jp") == "sentinel://:***@h:1/jp"
    assert redacted("redis://user:s3cret@h:1/0") == "redis://user:***@h:1/0"
    assert redacted("redis://h:1/0") == "redis://h:1/0"
    for url in ("sentinel://:s3cret@h:1,/jp", "redis://:s3cret@h:x/0"):
        with pytest.raises(RedisURLError) as refused:
            check_url(url)
        assert "s3cret" not in str(refused.value) and ":***@" in str(refused.value)


async def test_a_sentinel_client_is_a_bounded_pool_of_the_named_service() -> None:
    client = connect(
        "sentinel://:from-url@127.0.0.1:1,127.0.0.1:2/jackpot?db=2",
        password="from-file",
        sentinel_password="sentinels",
        max_connections=7,
        pool_timeout_s=1.5,
    )
    try:
        pool = client.connection_pool
        assert isinstance(pool, PrimaryPool)
        assert (pool.service_name, pool.max_connections, pool.timeout) == ("jackpot", 7, 1.5)
        assert pool.connection_class is PrimaryConnection
        options = pool.connection_kwargs
        assert (options["db"], options["password"], options["decode_responses"]) == (
            2,
            "from-file",  # the file or environment wins over the URL
            True,
        )
        assert options["socket_timeout"] == options["socket_connect_timeout"] == 5.0
        sentinels = pool.sentinel_manager.sentinels
        assert [s.connection_pool.connection_kwargs["port"] for s in sentinels] == [1, 2]
        assert sentinels[0].connection_pool.connection_kwargs["password"] == "sentinels"
    finally:
        await client.aclose()
    with pytest.raises(RedisURLError, match="a Sentinel password is for a sentinel:// URL only"):
        connect("redis://h/0", sentinel_password="x", max_connections=1, pool_timeout_s=1)


# ------------------------------------------------------------------------------ command lines


def test_the_controller_refuses_a_bad_redis_url_before_starting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert controller_main(["serve", "--insecure", "--redis", "sentinel://h:1"], environ={}) == 2
    err = capsys.readouterr().err
    assert err.startswith("jackpot-controller: --redis: Redis URL 'sentinel://h:1': no service")
    assert controller_main(["serve", "--insecure", "--redis", "sentinel://h:1,h:1/x"], {}) == 2
    assert "a Sentinel is listed twice" in capsys.readouterr().err
    assert controller_main(["serve", "--insecure", "--redis", "redis://h:1/x"], {}) == 2
    assert "the path must be the database number" in capsys.readouterr().err


def test_a_sentinel_password_needs_a_sentinel_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "sentinel-password"
    secret.write_text("s3cret\n", encoding="utf-8")
    argv = ["serve", "--insecure", "--sentinel-password-file", str(secret)]
    assert controller_main([*argv, "--redis", "redis://127.0.0.1:1/0"], environ={}) == 2
    assert "--sentinel-password-file is for a sentinel:// --redis URL" in (capsys.readouterr().err)
    assert settings.sentinel_password(secret) == "s3cret"
    assert settings.sentinel_password(None, {"JACKPOT_SENTINEL_PASSWORD": "env"}) == "env"
    assert settings.sentinel_password(None, {}) is None
    with pytest.raises(settings.SettingsError, match="cannot read --sentinel-password-file"):
        settings.sentinel_password(tmp_path / "missing")


def test_jackpotctl_audit_refuses_a_bad_redis_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert jackpotctl(["audit", "verify", "--redis", "sentinel://h:1/jackpot?db=x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jackpotctl: Redis URL 'sentinel://h:1/jackpot?db=x': db must be")
    argv = ["audit", "verify", "--redis", "redis://h/0", "--sentinel-password-file", "f"]
    assert jackpotctl(argv) == 2
    assert "--sentinel-password-file is for a sentinel:// --redis URL" in capsys.readouterr().err


# ------------------------------------------------------------------------------ WAIT, WAITAOF


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("7.0.15", False),
        ("6.2.14", False),
        ("7.2.0", True),
        ("7.2.4", True),
        ("7.4.1", True),
        ("8.0.0", True),
        ("10.0.0", True),
        (" 7.2.5\r", True),
        ("", False),
        ("?", False),
        ("seven", False),
    ],
)
def test_waitaof_is_used_from_redis_7_2(version: str, expected: bool) -> None:
    assert has_waitaof(version) is expected


def test_the_wait_follows_the_server() -> None:
    wait = ReplicaWait(replicas=1, timeout_ms=500)
    assert wait.command == "WAIT"
    wait.choose("7.2.4", aof_enabled=True)
    assert (wait.command, wait.local) == ("WAITAOF", 1)
    assert wait.shortfall([1, 1]) is None
    assert wait.shortfall([1, 0]) == "confirmed by 0 of 1 replicas"
    assert wait.shortfall([0, 1]) == "not fsynced to the primary's append-only file"
    wait.choose("7.2.4", aof_enabled=None)  # CONFIG disabled: no local fsync asked for
    assert wait.local == 0 and wait.shortfall([0, 1]) is None
    wait.choose("7.0.15", aof_enabled=True)
    assert wait.command == "WAIT"
    assert wait.shortfall(1) is None
    assert wait.shortfall(0) == "confirmed by 0 of 1 replicas"
    wait.choose("7.2.0", aof_enabled=True)
    wait.failed(Exception("ERR some other refusal"))
    assert wait.command == "WAITAOF"
    wait.failed(Exception("ERR unknown command 'WAITAOF', with args beginning with: '1' "))
    assert wait.command == "WAIT", "an older server after a failover: WAIT from now on"


async def test_the_wait_is_queued_after_the_write() -> None:
    client = Redis(port=1)  # never connected: a pipeline only queues commands until executed
    wait = ReplicaWait(replicas=2, timeout_ms=250)
    queued = []
    for version, aof in (("7.0.15", True), ("7.2.1", True), ("7.2.1", False)):
        wait.choose(version, aof_enabled=aof)
        async with client.pipeline(transaction=False) as pipe:
            wait.queue(pipe)
            queued += [args for args, _ in pipe.command_stack]
    await client.aclose()
    assert queued == [("WAIT", 2, 250), ("WAITAOF", 1, 2, 250), ("WAITAOF", 0, 2, 250)]

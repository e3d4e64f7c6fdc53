"""``--redis-cluster HOST:PORT[,HOST:PORT...]`` for ``serve`` and ``jackpotctl``: the seed
nodes are checked before anything connects, and a bad list is refused saying what is wrong."""

from __future__ import annotations

import pytest
from redis.asyncio.cluster import RedisCluster

from controller.ctl.main import main as jackpotctl
from controller.runtime import cli
from controller.runtime.cli import main as controller_main
from controller.store import cluster, connection


def test_seed_nodes_are_read_in_order() -> None:
    assert cluster.parse_seeds("10.0.0.1:7000,redis-2.internal:7001,[::1]:7002") == (
        ("10.0.0.1", 7000),
        ("redis-2.internal", 7001),
        ("::1", 7002),
    )
    assert cluster.cluster_url("h:1,h:2") == "redis-cluster://h:1,h:2"
    assert cluster.seeds_of("redis-cluster://h:1,h:2") == (("h", 1), ("h", 2))


@pytest.mark.parametrize(
    ("seeds", "problem"),
    [
        ("", "an empty node address"),
        ("h:1,,h:2", "an empty node address"),
        ("h:1,", "an empty node address"),
        ("h", "'h' is not HOST:PORT"),
        ("::1:7000", "write an IPv6 address as [ADDRESS]:PORT"),
        ("h:0", "the port must be a number 1 to 65535"),
        ("h:65536", "the port must be a number 1 to 65535"),
        ("h:x", "the port must be a number 1 to 65535"),
        ("[::1]", "the port must be a number 1 to 65535"),
        ("[::1", "is not [IPV6]:PORT"),
        ("h:1,h:1", "'h:1' is listed twice"),
        ("redis://h:1", "is not HOST:PORT"),
    ],
)
def test_a_bad_list_of_nodes_is_refused_saying_what_is_wrong(seeds: str, problem: str) -> None:
    with pytest.raises(cluster.ClusterSeedsError) as caught:
        cluster.parse_seeds(seeds)
    assert problem in str(caught.value)


def test_serve_takes_the_cluster_instead_of_one_redis(capsys: pytest.CaptureFixture[str]) -> None:
    parser, _ = cli._parser()
    args = parser.parse_args(["serve", "--insecure", "--redis-cluster", "h1:7000,h2:7000"])
    assert cli._config(args, {}).redis_url == "redis-cluster://h1:7000,h2:7000"
    argv = ["serve", "--insecure", "--redis-cluster", "h1:7000", "--redis", "redis://h:1/0"]
    assert controller_main(argv, environ={}) == 2
    assert "give --redis or --redis-cluster, not both" in capsys.readouterr().err
    assert controller_main(["serve", "--insecure", "--redis-cluster", "h1"], environ={}) == 2
    assert "--redis-cluster: 'h1' is not HOST:PORT" in capsys.readouterr().err
    environ = {"JACKPOT_REDIS_CLUSTER": "h1:7000,h1:7000"}  # from the environment too
    assert controller_main(["serve", "--insecure"], environ=environ) == 2
    assert "'h1:7000' is listed twice" in capsys.readouterr().err


def test_jackpotctl_takes_the_cluster_instead_of_one_redis(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit, match="2"):
        jackpotctl(["audit", "verify", "--redis-cluster", "h1:70000"])
    err = capsys.readouterr().err
    assert "argument --redis-cluster: 'h1:70000': the port must be a number 1 to 65535" in err
    argv = ["journal", "export", "--dir", "x", "--redis-cluster", "h:1", "--redis", "redis://h/0"]
    with pytest.raises(SystemExit, match="2"):
        jackpotctl(argv)
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="2"):
        jackpotctl(["journal", "export", "--dir", "x"])  # one of them is needed
    assert "one of the arguments --redis --redis-cluster is required" in capsys.readouterr().err


async def test_a_cluster_client_is_bounded_and_never_needs_a_sentinel() -> None:
    client = connection.open_client(
        "redis-cluster://127.0.0.1:7000,127.0.0.1:7001", max_connections=3, pool_timeout_s=1.0
    )
    try:
        assert isinstance(client, RedisCluster)
        assert client.nodes_manager.startup_nodes.keys() == {"127.0.0.1:7000", "127.0.0.1:7001"}
        assert client.get_connection_kwargs()["decode_responses"] is True
    finally:
        await client.aclose()
    with pytest.raises(connection.RedisURLError, match="a Sentinel password is for a sentinel"):
        connection.open_client(
            "redis-cluster://h:1", sentinel_password="x", max_connections=1, pool_timeout_s=1
        )

"""TLS and connection failures said in one sentence, at ``jackpotctl`` and at the table agent:
real certificates (:class:`~controller.testing.TestPKI`, and a second CA), a real controller
with mutual TLS and a development one in plaintext, real sockets, the real commands.

Each failure is one line on stderr naming what is wrong - "this controller requires TLS",
"the key does not match the certificate", "certificate not from this CA" (the controller's
certificate, or the client's), "no controller listens at HOST:PORT", a TLS client to a
plaintext controller - never gRPC's or OpenSSL's own text, and the exit status is not 0.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.testing import ControllerProcess, RedisServer, TestPKI, free_port
from jackpot.tls import ClientTLS
from tests.helpers import CARIBBEAN_RULES

BIN = Path(sys.executable).parent
RAW = ("UNAVAILABLE", "SSL", "ssl_transport", "handshake", "Traceback", "backends")
"""Words of gRPC's and OpenSSL's own failures, which nobody should have to read."""


class Controllers:
    """A controller with mutual TLS from ``pki``, a development one in plaintext, and the
    certificates of a second CA (``other``)."""

    def __init__(self, tls: ControllerProcess, plain: ControllerProcess, pki: TestPKI) -> None:
        self.tls, self.plain, self.pki = tls, plain, pki
        self.other = TestPKI(pki.directory.parent / "other-ca")

    def files(self, role: str, name: str) -> ClientTLS:
        return self.pki.client(role, name)


@pytest.fixture
def controllers(tmp_path: Path, pki: TestPKI) -> Iterator[Controllers]:
    with RedisServer(tmp_path / "redis") as redis:
        tls = ControllerProcess(
            redis.url, tmp_path / "tls.log", pki=pki, rules=CARIBBEAN_RULES, metrics=False
        )
        plain = ControllerProcess(redis.url, tmp_path / "plain.log", pki=None, metrics=False)
        with tls, plain:
            yield Controllers(tls, plain, pki)


def _args(files: ClientTLS) -> list[str]:
    return ["--ca", str(files.ca), "--cert", str(files.cert), "--key", str(files.key)]


def _cases(c: Controllers, role: str, name: str) -> list[tuple[str, str, list[str], str]]:
    """(case, --controller, TLS options, the sentence expected)."""
    own, other = c.pki.client(role, name), c.other.client(role, name)
    stranger_key = c.pki.client(role, f"{name}-2").key
    nobody = f"127.0.0.1:{free_port()}"
    return [
        ("plaintext to TLS", c.tls.target, ["--insecure"], "this controller requires TLS"),
        (
            "key of another certificate",
            c.tls.target,
            _args(ClientTLS(own.ca, own.cert, stranger_key)),
            "the key does not match the certificate",
        ),
        (
            "client certificate of another CA",
            c.tls.target,
            _args(ClientTLS(own.ca, other.cert, other.key)),
            "certificate not from this CA: the controller at "
            f"{c.tls.target} does not accept {other.cert}",
        ),
        (
            "controller certificate of another CA",
            c.tls.target,
            _args(ClientTLS(other.ca, own.cert, own.key)),
            f"certificate not from this CA: the controller's certificate at {c.tls.target} "
            f"does not chain to {other.ca}",
        ),
        ("nobody listening", nobody, _args(own), f"no controller listens at {nobody}"),
        (
            "TLS to a plaintext controller",
            c.plain.target,
            _args(own),
            f"the controller at {c.plain.target} does not use TLS",
        ),
    ]


def _run(command: list[str], timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)


@pytest.mark.slow
def test_jackpotctl_says_what_is_wrong_in_one_sentence(controllers: Controllers) -> None:
    operator = _args(controllers.files("operator", "op"))
    ok = _run(
        [
            str(BIN / "jackpotctl"),
            "--controller",
            controllers.tls.target,
            *operator,
            "tables",
            "list",
        ]
    )
    assert ok.returncode == 0, ok.stderr
    for case, target, options, sentence in _cases(controllers, "operator", "op"):
        done = _run([str(BIN / "jackpotctl"), "--controller", target, *options, "tables", "list"])
        assert done.returncode == 1, (case, done.stderr)
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"jackpotctl: {sentence}"), (case, lines)
        assert not any(word in lines[0] for word in RAW), (case, lines)


@pytest.mark.slow
def test_the_table_agent_says_what_is_wrong_in_one_sentence(controllers: Controllers) -> None:
    agent = [str(BIN / "table-agent"), "--table-id", "cs-1", "--sim", "--rounds", "1"]
    agent += ["--retry-for", "8", "--offline-after", "1"]  # two diagnoses, 5 s apart
    for case, target, options, sentence in _cases(controllers, "table", "cs-1"):
        done = _run([*agent, "--controller", target, *options])
        assert done.returncode != 0, (case, done.stdout, done.stderr)
        said = done.stderr.splitlines()[-1]  # after the log lines of the retries
        assert said.startswith("table-agent: ") and sentence in said, (case, said)
        assert not any(word in said for word in RAW), (case, said)

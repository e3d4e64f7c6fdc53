"""The table agent's sign: its options, and who it admits."""

from __future__ import annotations

import argparse

import pytest

from jackpot.web.server import Request
from table_agent.cli import _check, _parser
from table_agent.sign import refusal


def args(*extra: str) -> argparse.Namespace:
    return _parser().parse_args(["--table-id", "t1", "--controller", "x:1", "--sim", *extra])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--web-port", "0"), "--web-port must be 1 to 65535, not 0"),
        (("--web-port", "70000"), "--web-port must be 1 to 65535, not 70000"),
        (("--web-cert", "a.crt"), "--web-cert and --web-key are for --web-port"),
        (("--web-port", "8080", "--web-key", "a.key"), "--web-cert and --web-key go together"),
        (
            ("--web-port", "8080", "--web-host", "0.0.0.0"),
            "--web-host 0.0.0.0 without --web-cert would show the sign in plain HTTP to "
            "anyone: give --web-cert and --web-key, or listen on loopback",
        ),
    ],
)
def test_sign_options_are_checked(
    flags: tuple[str, ...], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JACKPOT_CA", raising=False)
    assert _check(args(*flags)) == message


def test_a_certificate_needs_the_ca_of_the_displays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JACKPOT_CA", raising=False)
    flags = ["--web-port", "8443", "--web-host", "0.0.0.0", "--web-cert", "s.crt"]
    flags += ["--web-key", "s.key"]
    assert (
        _check(args(*flags))
        == "--web-cert needs --ca: the CA of the display certificates it admits"
    )
    assert _check(args(*flags, "--ca", "ca.crt")) is None
    assert _check(args("--web-port", "8080")) is None  # loopback, plain HTTP


@pytest.mark.parametrize(
    ("uris", "admitted"),
    [
        (("jackpot://display/sign-1",), True),
        (("jackpot://table/t1",), False),
        (("jackpot://supervisor/ann",), False),
        (("jackpot://display/a", "jackpot://display/b"), False),
        ((), False),
        (("https://jackpot://display/x",), False),
    ],
)
def test_only_a_display_sees_the_sign(uris: tuple[str, ...], admitted: bool) -> None:
    request = Request("GET", "/sign", "", {}, peer_der=b"x", peer_uris=uris)
    refused = refusal(request, tls=True)
    assert (refused is None) == admitted
    if refused is not None:
        assert refused.status == 403 and b"it is for: display" in refused.body
    assert refusal(request, tls=False) is None  # plain HTTP is for loopback only

"""The pieces of trust without a network: identities, the role table, certificates, the deny
list, bounds, rate and stream limits, settings, safe log lines."""

from __future__ import annotations

import argparse
import logging
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtendedKeyUsageOID

from controller.api.access import ACCESS, check_role, check_table
from controller.api.limits import LogSampler, RateLimiter, StreamSlots
from controller.api.peers import Authenticator, DenyList, DenyListError, read_deny_list
from controller.domain import bounds
from controller.domain.identity import INSECURE_CALLER, Identity, IdentityError, Role
from controller.observability import logs
from controller.observability.metrics import Metrics
from controller.runtime import settings
from controller.runtime.cli import UsageError, _config, _parser
from controller.runtime.server import ServerConfig
from controller.security import certs
from controller.security.tls import is_loopback
from controller.testing import TestPKI
from jackpot.errors import (
    InvalidArgument,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
)
from jackpot.v1 import jackpot_pb2 as pb

# ------------------------------------------------------------------------------ identities


def test_an_identity_is_one_uri_of_a_known_role() -> None:
    table = Identity.parse("jackpot://table/cs-1", "ab" * 32)
    assert (table.role, table.name, table.uri) == (Role.TABLE, "cs-1", "jackpot://table/cs-1")
    assert table.actor == f"jackpot://table/cs-1 sha256:{'ab' * 32}"
    for bad in (
        "jackpot://table/cs-1\n",
        "jackpot://table/",
        "jackpot://king/x",
        "jackpot://insecure/development",  # never in a certificate
        "https://table/cs-1",
        "jackpot://table/a b",
    ):
        with pytest.raises(IdentityError):
            Identity.parse(bad)


def test_every_rpc_of_the_contract_is_in_the_role_table() -> None:
    """Deny by default is safe, but a method missing here would be unusable: catch it."""
    served = {
        f"/jackpot.v1.{service.name}/{method.name}"
        for service in pb.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    assert served <= set(ACCESS)
    assert all(access.roles for access in ACCESS.values())


def test_the_role_table_admits_exactly_the_listed_roles() -> None:
    lockout = "/jackpot.v1.TableService/Lockout"
    approve = "/jackpot.v1.AdminService/ApproveJackpot"
    check_role(lockout, Identity(Role.TABLE, "t1"))
    check_role(approve, Identity(Role.SUPERVISOR, "ann"))
    for role in (Role.OPERATOR, Role.AUDITOR, Role.DISPLAY, Role.TABLE):
        with pytest.raises(PermissionDenied, match="may not call ApproveJackpot"):
            check_role(approve, Identity(role, "x"))
    with pytest.raises(PermissionDenied, match="is not served to any caller"):
        check_role("/jackpot.v1.AdminService/DropEverything", Identity(Role.OPERATOR, "x"))
    check_role(approve, INSECURE_CALLER)  # development only, loopback only
    check_table(Identity(Role.TABLE, "t1"), "t1")
    check_table(Identity(Role.DISPLAY, "sign"), "t9")  # a display may watch any table
    with pytest.raises(PermissionDenied, match="for its own table only"):
        check_table(Identity(Role.TABLE, "t1"), "t2")


# ------------------------------------------------------------------------------ certificates


def test_certs_init_and_issue_write_what_they_say(tmp_path: Path) -> None:
    ca, controller = certs.init_authority(tmp_path, sans=["jackpot.casino.internal", "10.0.0.7"])
    assert (ca.cert.name, controller.cert.name) == ("ca.crt", "controller.crt")
    for key in (ca.key, controller.key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    server = x509.load_pem_x509_certificate(controller.cert.read_bytes())
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == {"localhost", "jackpot.casino.internal"}
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {
        "127.0.0.1",
        "10.0.0.7",
    }
    issued = certs.issue(tmp_path, "table", "cs-1")
    client = x509.load_pem_x509_certificate(issued.cert.read_bytes())
    uris = client.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert uris.get_values_for_type(x509.UniformResourceIdentifier) == ["jackpot://table/cs-1"]
    assert issued.fingerprint == certs.fingerprint(issued.cert.read_bytes())
    assert len(issued.fingerprint) == 64


def test_certs_never_overwrite_by_accident(tmp_path: Path) -> None:
    certs.init_authority(tmp_path)
    with pytest.raises(certs.CertificateError, match="holds a CA already"):
        certs.init_authority(tmp_path)
    first = certs.issue(tmp_path, "operator", "alice")
    with pytest.raises(certs.CertificateError, match="exists; remove it first"):
        certs.issue(tmp_path, "operator", "alice")
    again = certs.issue(tmp_path, "operator", "alice", force=True)
    assert again.fingerprint != first.fingerprint
    renewed = certs.issue_controller(tmp_path, sans=["controller"], force=True)
    assert renewed.cert == tmp_path / "controller.crt"
    for role, name, message in (
        ("king", "x", "choose one of"),
        ("insecure", "x", "choose one of"),
        ("table", "a b", "must be 1-64"),
        ("operator", "ca", "would overwrite"),
    ):
        with pytest.raises(certs.CertificateError, match=message):
            certs.issue(tmp_path, role, name)
    with pytest.raises(certs.CertificateError, match="is missing"):
        certs.issue(tmp_path / "nowhere", "table", "t1")
    with pytest.raises(certs.CertificateError, match="neither an IP address nor a host name"):
        certs.init_authority(tmp_path / "other", sans=[""])
    assert not (tmp_path / "other" / "ca.crt").exists()  # a bad name writes nothing


# ------------------------------------------------------------------------------ deny list


def test_the_deny_list_takes_what_certs_fingerprint_prints(tmp_path: Path) -> None:
    fingerprint = "AB:" * 31 + "CD"
    path = tmp_path / "deny"
    path.write_text(f"# stolen 2026-11-30\n{fingerprint}  certs/cs-1.crt\n\n{'ef' * 32} # lost\n")
    assert read_deny_list(path) == {"ab" * 31 + "cd", "ef" * 32}
    path.write_text("not-a-fingerprint\n")
    with pytest.raises(DenyListError, match="line 1"):
        read_deny_list(path)


def test_an_unreadable_deny_list_keeps_the_revocations_it_had(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "deny"
    path.write_text("ab" * 32 + "\n")
    deny = DenyList(path)
    path.write_text("garbage\n")
    deny.reload()
    assert "ab" * 32 in deny  # never un-revoked by a broken file
    assert "keeping the 1 revocations read before" in caplog.text


def test_an_emptied_deny_list_keeps_every_revocation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "deny"
    path.write_text("ab" * 32 + "\n" + "cd" * 32 + "\n")
    deny = DenyList(path)
    for blank in ("", "\n\n  \n"):  # truncated, or caught half-written
        path.write_text(blank)
        deny.reload()
        assert "ab" * 32 in deny and "cd" * 32 in deny
    assert "is empty (truncated or being written?); keeping the 2 revocations" in caplog.text
    assert not [r for r in caplog.records if r.levelno < logging.WARNING]


def test_a_deny_list_that_shrinks_says_what_it_un_revokes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "deny"
    path.write_text("ab" * 32 + "\n" + "cd" * 32 + "\n")
    counted: list[int] = []
    deny = DenyList(path, counted.append)
    path.write_text("cd" * 32 + "  # still lost\n")
    with caplog.at_level(logging.INFO, "controller.peers"):
        deny.reload()
    assert "ab" * 32 not in deny and "cd" * 32 in deny
    (line,) = [r for r in caplog.records if "UN-REVOKED" in r.getMessage()]
    assert line.levelno == logging.WARNING and "abababababababab..." in line.getMessage()
    path.write_text("# nothing revoked: a list emptied on purpose says so\n")
    deny.reload()
    assert "cd" * 32 not in deny and len(deny) == 0
    assert counted == [2, 1, 0]  # jackpot_revoked_certificates


def test_refusal_log_lines_are_sampled() -> None:
    now = [0.0]
    sampler = LogSampler(interval_s=10, limit=2, clock=lambda: now[0])
    assert sampler.sample("a") == 0
    assert [sampler.sample("a") for _ in range(5)] == [None] * 5
    assert sampler.sample("b") == 0  # another key is logged at once
    now[0] = 10.0
    assert sampler.sample("a") == 5  # one line, saying how many were not logged
    assert sampler.sample("c") == 0  # a third key: the oldest one ("a") is forgotten
    assert sampler.sample("a") == 0


def test_the_authenticator_reads_the_identity_from_the_certificate_itself(
    tmp_path: Path,
) -> None:
    certs.init_authority(tmp_path)
    authority = certs._load_authority(tmp_path)
    names = [x509.UniformResourceIdentifier("jackpot://supervisor/eve\0table")]
    cert, key = certs._leaf(authority, "eve", names, ExtendedKeyUsageOID.CLIENT_AUTH, 30)
    issued = certs._save(tmp_path, "eve", cert, key, force=False)
    # What gRPC reports: the URI cut at its NUL.
    context = {
        "x509_pem_cert": [issued.cert.read_bytes()],
        "peer_uri": [b"jackpot://supervisor/eve"],
    }
    with pytest.raises(Unauthenticated, match="holds a control character"):
        Authenticator().identify(context)
    der = x509.load_pem_x509_certificate(issued.cert.read_bytes()).public_bytes(Encoding.DER)
    with pytest.raises(Unauthenticated, match="holds a control character"):
        Authenticator().identify_der(der)
    seen: list[tuple[Identity, float]] = []
    ann = certs.issue(tmp_path, "supervisor", "ann")
    ann_der = x509.load_pem_x509_certificate(ann.cert.read_bytes()).public_bytes(Encoding.DER)
    authenticator = Authenticator(observe=lambda who, at: seen.append((who, at)))
    for _ in range(3):
        assert authenticator.identify_der(ann_der).uri == "jackpot://supervisor/ann"
    assert len(seen) == 1 and seen[0][0].name == "ann"  # once per certificate
    assert seen[0][1] == x509.load_der_x509_certificate(ann_der).not_valid_after_utc.timestamp()


def test_expiry_series_follow_the_certificates_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = TestPKI(tmp_path / "old"), TestPKI(tmp_path / "new")
    server, ca_old, ca_new = (
        x509.load_pem_x509_certificate(path.read_bytes())
        for path in (old.server().cert, old.ca, new.ca)
    )
    metrics = Metrics()

    def series() -> dict[tuple[str, str], float]:
        return {
            (s.labels["certificate"], s.labels["name"]): s.value
            for family in metrics.registry.collect()
            for s in family.samples
            if s.name == "jackpot_certificate_expiry_timestamp_seconds"
        }

    metrics.set_server_certificates(server, [ca_old, ca_new])  # a CA rotation's bundle
    assert len(series()) == 3
    metrics.set_server_certificates(server, [ca_new])  # the old CA removed: its series too
    (ca_name,) = [name for kind, name in series() if kind == "ca"]
    assert ca_name.startswith("jackpot controller CA ") and ca_name[-16:] in (
        ca_new.fingerprint(hashes.SHA256()).hex()
    )
    assert series()[("ca", ca_name)] == ca_new.not_valid_after_utc.timestamp()
    monkeypatch.setattr("controller.observability.metrics.MAX_CLIENT_EXPIRY_SERIES", 2)
    for name in ("a", "b", "c"):
        metrics.set_client_certificate(Identity(Role.TABLE, name), 1.0)
    assert sorted(k for k in series() if k[0] == "client") == [("client", "a"), ("client", "b")]


def test_the_authenticator_needs_one_identity_and_no_revocation(tmp_path: Path) -> None:
    certs.init_authority(tmp_path)
    issued = certs.issue(tmp_path, "supervisor", "ann")
    pem = issued.cert.read_bytes()
    context = {
        "x509_pem_cert": [pem],
        "peer_uri": [b"jackpot://supervisor/ann"],
    }
    assert Authenticator().identify(context) == Identity(Role.SUPERVISOR, "ann", issued.fingerprint)
    deny = tmp_path / "deny"
    deny.write_text(issued.fingerprint + "\n")
    with pytest.raises(Unauthenticated, match="is revoked"):
        Authenticator(deny_list=DenyList(deny)).identify(context)
    with pytest.raises(Unauthenticated, match="a client certificate is required"):
        Authenticator().identify({})
    two = {**context, "peer_uri": [b"jackpot://table/a", b"jackpot://table/b"]}
    with pytest.raises(Unauthenticated, match="the TLS layer reads the certificate's identit"):
        Authenticator().identify(two)  # the certificate's own SANs decide
    assert Authenticator(insecure=True).identify({}) is INSECURE_CALLER


# ------------------------------------------------------------------------------ bounds


def test_bounds_name_the_field_and_quote_only_a_prefix() -> None:
    huge = "x" * 1_000_000
    with pytest.raises(InvalidArgument) as caught:
        bounds.check_text(huge, "reason", 200)
    assert str(caught.value) == "reason is 1,000,000 characters long; at most 200 are accepted"
    for sneaky in ("a\u202eb", "a\u2028b", "a\u2029b"):  # bidi override, line separators
        with pytest.raises(InvalidArgument, match="control characters"):
            bounds.check_text(sneaky, "note", 10)
    assert bounds.check_text("  ok ", "note", 10) == "ok"
    with pytest.raises(InvalidArgument, match="table id 't1\\\\n' must be"):
        bounds.check_id("t1\n", "table id")
    assert len(bounds.excerpt(huge)) < 80
    with pytest.raises(InvalidArgument, match="wagers has 65 items; at most 64"):
        bounds.check_count([0] * 65, "wagers", 64)


# ------------------------------------------------------------------------------ limits


def test_the_rate_limiter_refills_per_key() -> None:
    now = [0.0]
    limiter = RateLimiter(2.0, 4, clock=lambda: now[0])
    for _ in range(4):
        limiter.acquire("t1", "table t1")
    with pytest.raises(ResourceExhausted, match="more than 2 calls a second"):
        limiter.acquire("t1", "table t1")
    limiter.acquire("t2", "table t2")  # another table is not slowed down
    now[0] = 0.5
    limiter.acquire("t1", "table t1")  # one token back after half a second
    with pytest.raises(ResourceExhausted):
        limiter.acquire("t1", "table t1")
    RateLimiter(0, 1).acquire("t1", "off")


def test_stream_slots_bound_each_caller_and_the_total() -> None:
    slots = StreamSlots(total=3, per_caller=2)
    with slots.hold("a"), slots.hold("a"):
        with pytest.raises(ResourceExhausted, match="has 2 streams open"):
            with slots.hold("a"):
                pass
        with slots.hold("b"):
            with pytest.raises(ResourceExhausted, match="has 3 streams open already"):
                with slots.hold("c"):
                    pass
    assert slots.open == 0


# ------------------------------------------------------------------------------ settings


def _serve(argv: list[str], config: Path | None, environ: dict[str, str]) -> argparse.Namespace:
    parser, serve = _parser()
    settings.apply(serve, config, environ)
    return parser.parse_args(["serve", *argv])


def test_options_come_from_the_command_line_then_the_environment_then_the_file(
    tmp_path: Path,
) -> None:
    config = tmp_path / "controller.toml"
    config.write_text(
        'listen = "0.0.0.0:7000"\ntls-cert = "/etc/jackpot/c.crt"\nmax-round-step = 50\n'
        'rules = ["a.toml", "b.toml"]\ninsecure = false\n'
    )
    args = _serve([], config, {"JACKPOT_LISTEN": "10.0.0.1:7001"})
    assert args.listen == "10.0.0.1:7001"
    assert args.tls_cert == Path("/etc/jackpot/c.crt") and args.max_round_step == 50
    assert args.rules == [Path("a.toml"), Path("b.toml")] and args.insecure is False
    args = _serve(["--listen", "127.0.0.1:7002"], config, {"JACKPOT_LISTEN": "10.0.0.1:7001"})
    assert args.listen == "127.0.0.1:7002"
    assert _serve([], None, {"JACKPOT_INSECURE": "yes"}).insecure is True
    config.write_text("lisen = 1\n")
    with pytest.raises(settings.SettingsError, match="unknown option 'lisen'"):
        _serve([], config, {})
    with pytest.raises(settings.SettingsError, match="is not true or false"):
        _serve([], None, {"JACKPOT_INSECURE": "maybe"})


def test_the_calls_of_one_identity_are_bounded_from_the_command_line() -> None:
    argv = ["--insecure", "--max-calls-per-caller", "5"]
    assert _config(_serve(argv, None, {}), {}).max_calls_per_caller == 5
    assert _config(_serve(["--insecure"], None, {}), {}).max_calls_per_caller == 64
    with pytest.raises(UsageError, match="--max-calls-per-caller"):
        _config(_serve([*argv[:2], "0"], None, {}), {})


def test_the_redis_password_never_shows_in_the_configuration() -> None:
    config = ServerConfig(redis_password="hunter2-correct-horse")
    assert "hunter2" not in repr(config) and "hunter2" not in str(config)


def test_insecure_is_for_loopback_only() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "[::1]", "127.5.5.5"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "", "[::]", "10.1.2.3", "controller"))
    with pytest.raises(ValueError, match="development on loopback only"):
        from controller.runtime.server import ControllerServer

        ControllerServer(ServerConfig(listen="0.0.0.0:50051"))


# ------------------------------------------------------------------------------ logs


def test_log_lines_escape_control_characters() -> None:
    formatter = logs.SafeFormatter("%(message)s")
    record = logging.LogRecord("x", logging.INFO, "f", 1, "void reason=%r %s", (1, "a\nFAKE"), None)
    assert formatter.format(record) == "void reason=1 a\\nFAKE"
    assert logs.escape_controls("\x1b[2J\u2028") == "\\x1b[2J\\u2028"


def test_unusable_tls_files_are_never_offered_to_handshakes(tmp_path: Path) -> None:
    """An empty or half-written CA file, or a key of another certificate, would refuse every
    client: refused at start, and ignored (the files in use kept) while serving."""
    from controller.security.tls import ServerCertificates, TLSFiles

    certs.init_authority(tmp_path)
    other = certs.issue(tmp_path, "operator", "other")
    files = TLSFiles(tmp_path / "controller.crt", tmp_path / "controller.key", tmp_path / "ca.crt")
    serving = ServerCertificates(files)
    good_ca = files.client_ca.read_bytes()
    for path, content, message in (
        (files.client_ca, b"", "holds no PEM CA certificate"),
        (files.client_ca, good_ca[: len(good_ca) // 2], "holds no PEM CA certificate"),
        (files.key, other.key.read_bytes(), "is not the key of"),
    ):
        before = path.read_bytes()
        path.write_bytes(content)
        with pytest.raises(OSError, match=message):
            ServerCertificates(files)
        assert serving._fetch() is None  # still the certificates in use
        path.write_bytes(before)
    rotated = certs.issue_controller(tmp_path, sans=["new-name"], force=True)
    assert rotated.cert == files.cert
    assert serving._fetch() is not None  # a usable new pair is offered at the next handshake


def test_controller_addresses_for_clients() -> None:
    from jackpot import tls

    assert tls.target("controller.casino.internal:50051") == "controller.casino.internal:50051"
    assert tls.target("10.0.0.1:50051, 10.0.0.2:50051") == "ipv4:10.0.0.1:50051,10.0.0.2:50051"
    assert tls.target("[::1]:1,[::1]:2") == "ipv6:[::1]:1,[::1]:2"
    with pytest.raises(ValueError, match="several addresses must be IP:PORT"):
        tls.target("a.example:1,b.example:1")

"""``make demo``: Redis, the controller and simulated tables of all four games, end to end.

Makes the casino's certificate authority and a certificate for every table and person
(``jackpotctl certs``), starts a real redis-server (append-only file, fsync always) and the
controller with mutual TLS on free loopback ports with the example Rules Submission of every
game (deploy/rules), shows what they configured with ``jackpotctl`` (printing each command),
lets three linked Caribbean Stud tables and one table of each other game play, plays one
scripted Caribbean Stud round in which seat 6 holds a straight flush and seat 2 a royal flush
and one Three Card Poker round with envy bonuses, has a supervisor validate the jackpots and
the cage pay the royal flush under the controller's default payout compliance (us-default: a
second supervisor witnesses the hand-pay, the cage gives the W-2G's reference; printing its
hand-pay slip), prints a summary, runs ``jackpotctl audit verify``, prints the addresses of the
meter signs and the floor view (``--web-port``) with the certificates a browser needs, and
stops everything it started (``--keep-serving`` keeps them live until Ctrl-C). Killed with
SIGTERM or SIGHUP (or Ctrl-C) at any point, it stops Redis, the controller and the tables it
started and removes its temporary folder (the CA's key among its files) before it exits.

    python scripts/demo.py [--rounds 200] [--keep-serving]
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509 import load_pem_x509_certificate

from controller.runtime.rules_file import load_submission
from controller.testing import ControllerProcess, RedisServer, TestPKI
from controller.testing.children import free_port
from jackpot.hands.words import hand_words
from jackpot.money import format_cents
from jackpot.results import METER_AFTER

BIN = Path(sys.executable).parent
TABLES = ("cs-1", "cs-2", "cs-3", "tcp-1", "pg-1", "thb-1")
REPO = Path(__file__).resolve().parent.parent
RULES = sorted((REPO / "deploy" / "rules").glob("*.toml"))  # one Rules Submission per game
LARGE_AWARDS = ("100", "500", "5,000")  # "N for 1" lines the demo shows as they happen
SCRIPTS = (
    (
        "cs-1",
        "seat 6 holds a straight flush, seat 2 a royal flush",
        {"hands": {"6": "9H TH JH QH KH", "2": "AS KS QS JS TS"}},
    ),
    (
        "tcp-1",
        "seats 1, 3 and 5 bet the progressive; seat 3 holds a straight flush, "
        "seat 5 a mini royal in hearts",
        {
            "hands": {"1": "2C 7D 9H", "3": "9S TS JS", "5": "AH KH QH"},
            "dealer": "4S 5H 6C",
            "wagers": {"1": ["progressive"], "3": ["progressive"], "5": ["progressive"]},
        },
    ),
)


OPERATOR = ("operator", "ops")
SUPERVISOR = ("supervisor", "a-rivera")
CASHIER = ("cashier", "cage-1")
WITNESS = ("supervisor", "b-chen")  # a second person at the cage: another identity than the payer
DISPLAY = ("display", "pit-sign")
BUNDLE_PASSWORD = b"demo"
"""The password of the demo's PKCS#12 bundles (browsers refuse to import one without)."""


CHILDREN: list[subprocess.Popen[str]] = []
"""The table agents running now: stopped with everything else if the demo is stopped."""


class Stopped(SystemExit):
    """SIGTERM or SIGHUP: unwind, so that everything started is stopped and removed."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped(128 + signum)


def banner(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 74 - len(text)), flush=True)


def command(argv: Sequence[str], *, show: bool = True) -> str:
    """Run one of the product's commands; print it (as a user would type it) and its output."""
    if show:
        print("$ " + " ".join(shlex.quote(a) for a in [Path(argv[0]).name, *argv[1:]]))
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=300, check=False)
    if show and result.stdout.strip():
        print(result.stdout.rstrip())
    if result.returncode != 0:
        raise SystemExit(
            f"demo: {Path(argv[0]).name} failed ({result.returncode}):\n"
            f"{result.stdout}{result.stderr}"
        )
    return result.stdout


def make_certificates(certs: Path) -> TestPKI:
    """The CA, the controller's certificate, and one client certificate per identity."""
    banner("Trust: the casino's CA, the controller's certificate, one per table and person")
    jackpotctl = str(BIN / "jackpotctl")
    command([jackpotctl, "certs", "init", "--dir", str(certs)])
    identities = [("table", table_id) for table_id in TABLES]
    identities += [OPERATOR, SUPERVISOR, CASHIER, DISPLAY, WITNESS]
    for number, (role, name) in enumerate(identities):
        argv = [jackpotctl, "certs", "issue", "--dir", str(certs), "--role", role]
        command([*argv, "--name", name, "--out", str(certs / role)], show=number in (0, 6, 7, 8, 9))
    print(
        f"(and {len(TABLES) - 1} more tables: each agent may report only for its own table; the "
        "supervisor's certificate is the identity recorded on every jackpot it approves, the "
        "cashier's on every payment the cage records; the display's may only see meter signs)"
    )
    return TestPKI(certs)


def configure(ctl: list[str]) -> None:
    """Show the Rules Submission the controller was started with, and what it created."""
    banner("Configure: one Rules Submission per game (link groups, meters, tables, wagers)")
    for path in RULES:
        command([str(BIN / "jackpotctl"), "rules", "check", str(path)])
    print(
        "(the controller was started with --rules for each of these files; Caribbean Stud "
        "uses paytable B of § 639a.12(d)(1):\n royal flush 100% of meter, straight flush 10% "
        "of meter, four of a kind 500 for 1, ...)"
    )
    command([*ctl, "meters", "list"])
    command([*ctl, "tables", "list"])


def agent_argv(
    table_id: str, controller: ControllerProcess, work: Path, summary: str, *extra: str
) -> list[str]:
    """A simulated table agent's command line, with its table's certificate; its tally goes
    to ``work/<summary>.json``."""
    return [
        str(BIN / "table-agent"),
        "--table-id",
        table_id,
        "--controller",
        controller.target,
        *controller.client_args("table", table_id),
        "--sim",
        "--quiet",
        "--state-dir",
        str(work / "agents"),
        "--summary-json",
        str(work / f"{summary}.json"),
        *extra,
    ]


def play(controller: ControllerProcess, rounds: int, work: Path) -> list[dict[str, Any]]:
    banner(
        f"Play: {len(TABLES)} simulated tables of four games, {rounds} rounds each, one shuffled "
        "deck a round"
    )
    agents = [
        subprocess.Popen(
            agent_argv(
                table_id, controller, work, table_id, "--rounds", str(rounds), "--void-percent", "2"
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for table_id in TABLES
    ]
    CHILDREN.extend(agents)
    for agent in agents:
        output, _ = agent.communicate(timeout=600)
        if agent.returncode != 0:
            raise SystemExit(f"demo: a table agent failed:\n{output}")
        for line in output.splitlines():  # the tables' tallies and their larger awards
            if " rounds, " in line or any(f" {n} for 1 " in line for n in LARGE_AWARDS):
                print(line)
    for table_id, label, script in SCRIPTS:
        path = work / f"{table_id}-script.json"
        path.write_text(json.dumps({"label": label, **script}), encoding="utf-8")
        banner(f"Scripted round at table {table_id}: {label}")
        print(
            command(
                agent_argv(
                    table_id,
                    controller,
                    work,
                    f"{table_id}-scripted",
                    "--rounds",
                    "0",
                    "--script",
                    str(path),
                ),
                show=False,
            ).rstrip()
        )
    return [
        json.loads(path.read_text())
        for path in sorted(work.glob("*.json"))
        if not path.name.endswith("-script.json")
    ]


def summarise(
    ctl: list[str],
    supervisor: list[str],
    cage: list[str],
    witness: list[str],
    tallies: list[dict[str, Any]],
) -> None:
    banner("Summary")
    rounds = sum(t["rounds"] for t in tallies)
    voids = sum(t["voids"] for t in tallies)
    wagers = sum(t["wagers"] for t in tallies)
    awards = [a for t in tallies for a in t["awards"]]
    print(f"rounds played: {rounds} ({voids} voided for an irregularity, wagers returned)")
    by_kind: dict[str, int] = {}
    for tally in tallies:
        for kind, count in tally.get("wagers_by_kind", {}).items():
            by_kind[kind] = by_kind.get(kind, 0) + count
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(by_kind.items()))
    print(f"wagers: {wagers} ({kinds})")
    print(f"awards: {len(awards)} totalling {format_cents(sum(a['amount_cents'] for a in awards))}")
    for meter in json.loads(command([*ctl, "--json", "meters", "list"], show=False))["meters"]:
        print(
            f"meter {meter['meter_id']} ({meter['game']}): "
            f"{format_cents(int(meter['amount_cents']))}, reserve "
            f"{format_cents(int(meter['reserve_cents']))} (reset "
            f"{format_cents(int(meter['reset_cents']))})"
        )
    hits = json.loads(
        command([*ctl, "jackpots", "list", "--status", "pending", "--format", "json"], show=False)
    )
    print("hits, in journal order:")
    for hit in hits:
        print(
            f"  #{hit['journal_seq']} table {hit['table_id']} seat {hit['seat']} "
            f"{hand_words(hit['hand'])}: {hit['award_text']} = "
            f"{format_cents(int(hit['amount_cents']))} "
            + (
                f"(meter {format_cents(int(hit['meter_before_cents']))} -> "
                f"{format_cents(int(hit['meter_after_cents']))} {METER_AFTER})"
                if hit["meter_id"]
                else "(a fixed award above the validation threshold)"
            )
        )
    banner("A floor supervisor validates each jackpot (§ 639a.11(c)(5)(iii))")
    print("(with the supervisor's own certificate: the operator's may not approve a jackpot)")
    for hit in hits:
        command(
            [
                *supervisor,
                "jackpots",
                "approve",
                hit["jackpot_id"],
                "--amount",  # as read on the slip: the controller refuses another amount
                format_cents(int(hit["amount_cents"])),
                "--note",
                "hand verified on the layout",
            ]
        )
    if hits:
        # the largest meter hit (the scripted royal flush): a W-2G and a witness are required
        from_meters = [hit for hit in hits if hit["meter_id"]] or hits
        pay(cage, witness, max(from_meters, key=lambda hit: int(hit["amount_cents"]))["jackpot_id"])


def pay(cage: list[str], witness: list[str], jackpot_id: str) -> None:
    """The cage pays one approved jackpot under the controller's payout compliance policy (the
    default, us-default: a W-2G at >= $600 and >= 300x the wager, a witness from $1,200)."""
    banner("The cage pays the royal flush; its slip says what the hand-pay needs")
    command([*cage, "jackpots", "show", jackpot_id])
    slip = json.loads(
        command([*cage, "jackpots", "show", jackpot_id, "--format", "json"], show=False)
    )
    if slip.get("witness_required"):
        banner("A second person witnesses the hand-pay, with its own certificate")
        command([*witness, "jackpots", "witness", jackpot_id, "--note", "present at the cage"])
    paid = [*cage, "jackpots", "paid", jackpot_id, "--note", "cage receipt 0001"]
    if slip.get("tax_form_required"):
        banner("The cage records the payment with the W-2G's reference (no patron data)")
        paid += ["--tax-form-ref", "W2G-DEMO-0001"]  # the casino's tax system issues it
    else:
        banner("The cage records the payment")
    command(paid)
    command([*cage, "jackpots", "show", jackpot_id])


def show_metrics(metrics_port: int) -> None:
    banner(f"Prometheus metrics (http://127.0.0.1:{metrics_port}/metrics), a few lines")
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        lines = reply.read().decode().splitlines()
    wanted = (
        "jackpot_meter_cents{",
        "jackpot_reserve_cents{",
        "jackpot_wagers_total{",
        "jackpot_hits_total{",
        "jackpot_pending_jackpots{",
        'grpc_server_handled_total{grpc_code="OK",grpc_method="Settle"',
    )
    for line in lines:
        if line.startswith(wanted):
            print("  " + line)


def browser_bundle(pki: TestPKI, role: str, name: str) -> Path:
    """The certificate and key of ``role``/``name`` as a PKCS#12 file a browser imports
    (password :data:`BUNDLE_PASSWORD`)."""
    files = pki.client(role, name)
    bundle = files.cert.with_suffix(".p12")
    key = serialization.load_pem_private_key(files.key.read_bytes(), None)
    data = pkcs12.serialize_key_and_certificates(
        name.encode(),
        key,  # type: ignore[arg-type]
        load_pem_x509_certificate(files.cert.read_bytes()),
        None,
        serialization.BestAvailableEncryption(BUNDLE_PASSWORD),
    )
    bundle.write_bytes(data)
    bundle.chmod(0o600)
    return bundle


def show_pages(pki: TestPKI, web_port: int, *, live: bool) -> None:
    """The meter signs' and the floor view's addresses, and how a browser gets in."""
    banner("Meter signs and floor view (jackpot-controller serve --web-port)")
    origin = f"https://127.0.0.1:{web_port}"
    groups = [group.link_group_id for path in RULES for group in load_submission(path).link_groups]
    for group in groups:
        print(f"  sign of link group {group:<10} {origin}/sign/{group}")
    print(f"  floor view                    {origin}/floor")
    display, supervisor = browser_bundle(pki, *DISPLAY), browser_bundle(pki, *SUPERVISOR)
    print(
        "  A browser must present a certificate from the demo's CA: import "
        f"{display} (the signs: display role) or {supervisor} (the floor view: supervisor "
        f"role), password {BUNDLE_PASSWORD.decode()!r}; the controller's own certificate is "
        f"from {pki.ca}, which the browser does not know (accept it, or import the CA)."
    )
    files = pki.client(*DISPLAY)
    print(
        f"  curl --cacert {pki.ca} --cert {files.cert} --key {files.key} "
        f"{origin}/sign/{groups[0]}/events"
    )
    if not live:
        print("  (they stop with the demo now: make demo KEEP=1 keeps them live)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the end-to-end demonstration.")
    parser.add_argument("--rounds", type=int, default=200, help="rounds per table")
    parser.add_argument(
        "--keep-serving",
        action="store_true",
        help="leave Redis and the controller running until Ctrl-C",
    )
    args = parser.parse_args(argv)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    work = Path(tempfile.mkdtemp(prefix="jackpot-demo-"))
    print(f"demo folder: {work}", flush=True)
    try:
        return run(args, work)
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)  # a second signal must not stop the cleanup
        for child in CHILDREN:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=10)
        for started in STARTED:
            started.stop()
        shutil.rmtree(work, ignore_errors=True)
        banner("Demo finished: everything it started is stopped, its folder removed")


STARTED: list[RedisServer | ControllerProcess] = []
"""Redis and the controller once started (in that order), stopped in the reverse order."""


def run(args: argparse.Namespace, work: Path) -> int:
    """The demo itself, in ``work``; what it starts is in :data:`STARTED` and
    :data:`CHILDREN` for :func:`main` to stop."""
    pki = make_certificates(work / "certs")
    banner("Start: redis-server (append-only file, fsync always) and the controller (mTLS)")
    redis = RedisServer(work / "redis")
    STARTED.insert(0, redis)
    redis.start()
    print(f"redis-server on {redis.url}, data in {redis.data_dir}")
    web_port = free_port()
    controller = ControllerProcess(
        redis.url,
        work / "controller.log",
        pki=pki,
        rules=RULES,
        # The simulated tables play a round in milliseconds, a real one in a minute or so: the
        # demo raises the per-table call rate limit (2 a second by default) to match.
        extra_args=("--table-calls-per-second", "200", "--web-port", str(web_port)),
        payout_compliance=None,  # the controller's default (us-default)
    )
    STARTED.insert(0, controller)
    controller.start()
    target = controller.target
    print("$ jackpot-controller serve " + " ".join(controller.security_args()) + " ...")
    address = [str(BIN / "jackpotctl"), "--controller", target]
    ctl = [*address, *controller.client_args(*OPERATOR)]
    supervisor = [*address, *controller.client_args(*SUPERVISOR)]
    cage = [*address, *controller.client_args(*CASHIER)]
    witness = [*address, *controller.client_args(*WITNESS)]
    print(f"controller on {target}; its log: {controller.log_path}")
    configure(ctl)
    tallies = play(controller, args.rounds, work)
    summarise(ctl, supervisor, cage, witness, tallies)
    banner("Regulator reports: the meters, the handle per table and wager, the hits")
    for kind in ("meters", "handle", "hits"):
        command([str(BIN / "jackpotctl"), "report", kind, "--redis", redis.url])
    banner("Audit: check the journal's hash chain and recompute every meter from it")
    command([str(BIN / "jackpotctl"), "audit", "verify", "--redis", redis.url])
    show_metrics(controller.metrics_port)
    show_pages(pki, web_port, live=args.keep_serving)
    if args.keep_serving:
        banner("Serving; press Ctrl-C to stop")
        print(
            f"  controller {target}   metrics "
            f"http://127.0.0.1:{controller.metrics_port}/metrics   redis {redis.url}"
        )
        print(f"  try: {' '.join(ctl)} meters list")
        try:
            while controller.process is not None and controller.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

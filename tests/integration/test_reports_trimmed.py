"""The reports cover trimmed history: after ``journal trim`` a report from Redis over a window
that starts before what Redis still holds is refused (it printed "no hits in that window" for
a day with a $10,000+ hit), and ``--file DIR`` reports it from the export, to the cent."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.ctl.main import main as jackpotctl
from controller.domain import reports
from controller.journal import export as journal_export
from controller.runtime.server import ControllerServer
from jackpot.money import format_cents
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import HIGH_CARD, ROYAL_SPADES, Floor, lockout, settle
from tests.integration.test_journal_export import GROUP, KEY, NOW_MS


@pytest.fixture
async def trimmed(
    controller: ControllerServer,
    floor: Floor,
    tables: pb_grpc.TableServiceAsyncStub,
    tmp_path: Path,
) -> tuple[Path, reports.Hit, int]:
    """A royal flush hit, a round after it, the journal exported to DIR and trimmed: (DIR,
    the hit as the report gave it before the trim, the first seq left in Redis)."""
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}, folded=[2]))
    await tables.Lockout(lockout("t1", 2, [1]))
    await tables.Settle(settle("t1", 2, {1: HIGH_CARD}))
    store = controller.store
    [hit] = reports.hit_report(await store.journal.window(GROUP, 0, 0, 1000))
    assert hit.hand == "royal_flush" and hit.amount_cents > 1_000_000
    directory = tmp_path / "export"
    await journal_export.export(store, directory, GROUP)
    trimmed = await journal_export.trim(store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    assert trimmed > hit.seq  # the hit's entry is gone from Redis
    return directory, hit, trimmed + 1


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms // 1000, UTC).date().isoformat()


async def _ctl(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = await asyncio.to_thread(jackpotctl, ["report", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


async def test_a_report_from_redis_over_trimmed_history_is_refused(
    trimmed: tuple[Path, reports.Hit, int], redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, hit, first_seq = trimmed
    day = _day(hit.at_ms)
    for kind in ("hits", "handle", "meters", "changes"):
        for window in ((), ("--from", day, "--to", day)):
            status, out, err = await _ctl(capsys, kind, *window, "--redis", redis_url)
            assert status == 1, (kind, window, out)
            assert "no hits in that window" not in out and out == ""
            assert (
                f"link group floor: Redis holds its journal from entry #{first_seq} (written "
                in err
            ), err
            assert f"entries #1 to #{first_seq - 1} are not in it (trimmed)" in err
            assert "report from the export with --file DIR" in err
    # A window that starts after the trim point is Redis's to answer.
    status, out, err = await _ctl(capsys, "changes", "--from", "2999-01-01", "--redis", redis_url)
    assert (status, out, err) == (0, "no changes in that window\n", "")


async def test_the_export_reports_the_trimmed_hit_exactly(
    trimmed: tuple[Path, reports.Hit, int], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, hit, _ = trimmed
    day = _day(hit.at_ms)
    status, out, _ = await _ctl(
        capsys, "hits", "--from", day, "--to", day, "--file", str(directory), "--format", "json"
    )
    assert status == 0
    assert json.loads(out) == [{"link_group_id": GROUP, **asdict(hit)}]

    status, out, _ = await _ctl(capsys, "hits", "--file", str(directory))
    assert status == 0 and "royal flush" in out
    assert format_cents(hit.amount_cents) in out

    status, out, _ = await _ctl(capsys, "meters", "--file", str(directory), "--format", "json")
    [meter] = json.loads(out)
    assert status == 0 and meter["percent_wins_cents"] == hit.amount_cents
    status, out, _ = await _ctl(capsys, "handle", "--file", str(directory), "--format", "json")
    [line] = json.loads(out)
    assert status == 0 and (line["table_id"], line["count"]) == ("t1", 3)

    status, _, err = await _ctl(capsys, "hits", "--file", str(directory / "nowhere"))
    assert status == 1 and "holds no export" in err

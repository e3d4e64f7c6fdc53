"""Every link group, meter and table id has one safe syntax, checked where it is created
(``AdminService``, the rules submission, ``jackpotctl``): never ``.`` or ``..`` (the export
writes ``DIR/<link group>/``), never a path, a control character or a leading ``-``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.domain.bounds import check_id
from controller.journal import export as journal_export
from controller.runtime import rules_file
from controller.runtime.server import ControllerServer
from controller.testing import TestPKI
from jackpot.errors import InvalidConfiguration
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import CARIBBEAN_RULES, OPERATOR, Floor, progressive_table, snapshot
from tests.integration.test_bounds import refused_unchanged

INVALID = grpc.StatusCode.INVALID_ARGUMENT
UNSAFE = [".", "..", "...", ".hidden", "-x", "a/b", "../x", "a\\b", "a\x00", "a" * 65]


@pytest.mark.parametrize("name", UNSAFE)
def test_the_one_id_check_refuses_unsafe_names(name: str) -> None:
    with pytest.raises(InvalidConfiguration, match="starting with a letter or a digit"):
        check_id(name, "link group id")
    for fine in ("floor", "cs-main", "a.b", "9_x", "a" * 64, "x.."):
        assert check_id(fine, "meter id") == fine


@pytest.mark.parametrize("name", [".", "..", ".x", "-x"])
async def test_admin_service_refuses_an_unsafe_id_at_creation(
    admin: pb_grpc.AdminServiceAsyncStub, floor: Floor, redis_client: Redis, name: str
) -> None:
    """``.`` and ``..`` were accepted as link group ids; the export then wrote DIR/../."""
    await refused_unchanged(
        redis_client,
        admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id=name)),
        INVALID,
        f"link group id {name!r} must be 1-64 characters",
    )
    meter = pb.CreateMeterRequest(
        meter_id=name,
        link_group_id="floor",
        game="caribbean-stud",
        reset_cents=1_000_000,
        rate_of_progression_percent="1",
    )
    await refused_unchanged(
        redis_client, admin.CreateMeter(meter), INVALID, f"meter id {name!r} must be"
    )
    table = pb.RegisterTableRequest(table=progressive_table(name, "floor", "cs-main"))
    await refused_unchanged(
        redis_client, admin.RegisterTable(table), INVALID, f"table id {name!r} must be"
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [('id = "floor"', 'id = ".."'), ('id = "cs-main"', 'id = "."'), ('id = "cs-1"', 'id = ".."')],
)
def test_a_rules_submission_refuses_an_unsafe_id(tmp_path: Path, old: str, new: str) -> None:
    text = CARIBBEAN_RULES.read_text(encoding="utf-8")
    assert old in text
    rules = tmp_path / "rules.toml"
    rules.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(InvalidConfiguration, match="must be 1-64 characters"):
        rules_file.load_submission(rules)
    checked = subprocess.run(
        [sys.executable, "-m", "controller.ctl.main", "rules", "check", str(rules)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode != 0
    assert "starting with a letter or a digit" in checked.stderr


@pytest.mark.parametrize("name", [".", "..", "../outside", "/tmp", "a/b"])
def test_the_export_refuses_a_directory_outside_its_own(tmp_path: Path, name: str) -> None:
    with pytest.raises(InvalidConfiguration, match="link group id"):
        journal_export.group_directory(tmp_path, name)
    assert journal_export.group_directory(tmp_path, "floor") == tmp_path / "floor"


@pytest.mark.parametrize("name", [".", ".."])
async def test_jackpotctl_refuses_an_unsafe_link_group_id(
    controller: ControllerServer,
    pki: TestPKI,
    redis_client: Redis,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    operator = ["--controller", f"127.0.0.1:{controller.port}", *pki.client_args(*OPERATOR)]
    before = await snapshot(redis_client)
    status = await asyncio.to_thread(jackpotctl, [*operator, "link-groups", "create", name])
    assert status == 1
    assert f"link group id {name!r} must be 1-64 characters" in capsys.readouterr().err
    assert await snapshot(redis_client) == before

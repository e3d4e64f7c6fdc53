"""buf guards the wire contract: the .proto is lint-clean, compatible with the last release
(proto/releases), and an incompatible change is caught."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUF = ROOT / ".buf" / "node_modules" / ".bin" / "buf"
RELEASE = ROOT / "proto" / "releases" / "v0.1.0.binpb"


def buf(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    if not BUF.exists():
        pytest.fail("buf is not installed: run make bootstrap")
    return subprocess.run(
        [str(BUF), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_proto_is_lint_clean_and_compatible_with_the_last_release() -> None:
    linted = buf("lint", "proto")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    checked = buf("breaking", "proto", "--against", RELEASE)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_renumbered_field_is_caught(tmp_path: Path) -> None:
    copy = tmp_path / "proto"
    shutil.copytree(ROOT / "proto", copy)
    proto = copy / "jackpot" / "v1" / "jackpot.proto"
    text = proto.read_text()
    changed, count = re.subn(
        r"(message LockoutRequest \{[^}]*?string table_id = )1;", r"\g<1>99;", text
    )
    assert count == 1
    proto.write_text(changed)
    checked = buf("breaking", copy, "--against", RELEASE)
    assert checked.returncode != 0
    assert "LockoutRequest" in checked.stdout, checked.stdout + checked.stderr


def test_a_removed_enum_value_is_caught(tmp_path: Path) -> None:
    copy = tmp_path / "proto"
    shutil.copytree(ROOT / "proto", copy)
    proto = copy / "jackpot" / "v1" / "jackpot.proto"
    changed, count = re.subn(r"\n\s*WAGER_KIND_BONUS = 2;", "", proto.read_text())
    assert count == 1
    proto.write_text(changed)
    checked = buf("breaking", copy, "--against", RELEASE)
    assert checked.returncode != 0
    assert 'enum value "2" on enum "WagerKind" was deleted' in checked.stdout, checked.stdout

"""bench.instructions reads callgrind's count of instructions from a dump's summary line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.instructions import summary_instructions


def test_the_summary_line_gives_the_instructions(tmp_path: Path) -> None:
    dump = tmp_path / "callgrind.out.1"
    dump.write_text("# callgrind format\nevents: Ir\nsummary: 1567013342\ntotals: 1595717281\n")
    assert summary_instructions(dump) == 1_567_013_342


def test_a_dump_without_a_summary_is_refused(tmp_path: Path) -> None:
    dump = tmp_path / "callgrind.out.2"
    dump.write_text("# callgrind format\nevents: Ir\ntotals: 12\n")
    with pytest.raises(ValueError, match="no callgrind summary"):
        summary_instructions(dump)

"""The macs over tables' journal positions: the key file, the mac, verification, and the
agent keeping the mac with its position (docs/journal.md, "Verified positions")."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from controller.runtime.cli import main as controller_main
from controller.security.position_key import read_position_key, write_position_key
from jackpot.epochs import JournalPosition, PositionMacs, claimed_seq, position_mac, verified
from jackpot.errors import InvalidArgument, InvalidConfiguration
from table_agent.outbox import Outbox

KEY = bytes(range(32))


def test_a_key_file_is_written_once_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "position.key"
    assert controller_main(["position-key", "--out", str(path)], environ={}) == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = read_position_key(path)
    assert len(key) == 32
    assert controller_main(["position-key", "--out", str(path)], environ={}) == 1  # never over
    assert read_position_key(path) == key
    other = tmp_path / "other.key"
    write_position_key(other)
    assert read_position_key(other) != key


def test_a_file_that_is_not_a_key_is_refused_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.key"
    bad.write_text("not hex\n")
    with pytest.raises(InvalidConfiguration, match="not a position key"):
        read_position_key(bad)
    args = ["serve", "--insecure", "--position-key"]
    assert controller_main([*args, str(bad)], environ={}) == 2
    assert controller_main([*args, str(tmp_path / "missing.key")], environ={}) == 2
    assert "--position-key" in capsys.readouterr().err


def test_the_mac_binds_table_epoch_and_seq() -> None:
    mac = position_mac(KEY, "t1", "e1", 10)
    assert len(mac) == 64
    others = {
        position_mac(KEY, "t2", "e1", 10),
        position_mac(KEY, "t1", "e2", 10),
        position_mac(KEY, "t1", "e1", 11),
        position_mac(KEY, "t1e", "1", 10),  # length-prefixed: no shifting between fields
        position_mac(b"\x01" * 32, "t1", "e1", 10),
    }
    assert mac not in others and len(others) == 5


def test_only_this_keys_mac_for_this_table_verifies() -> None:
    mac = position_mac(KEY, "t1", "e1", 10)
    assert verified(KEY, "t1", JournalPosition("e1", 10, mac)).verified
    assert not verified(KEY, "t2", JournalPosition("e1", 10, mac)).verified  # another table's
    assert not verified(KEY, "t1", JournalPosition("e1", 11, mac)).verified  # moved on
    assert not verified(KEY, "t1", JournalPosition("e1", 10)).verified  # none
    assert not verified(None, "t1", JournalPosition("e1", 10, mac)).verified  # no key here
    assert claimed_seq(verified(KEY, "t1", JournalPosition("e1", 10, mac))) == "10!"
    assert claimed_seq(JournalPosition("e1", 10, mac)) == "10"  # sent is not verified
    with pytest.raises(InvalidArgument, match="mac"):
        JournalPosition("e1", 10, "zz")


def test_the_last_answered_mac_verifies_by_comparison_and_nothing_else_does() -> None:
    macs = PositionMacs(KEY)
    mac = macs.sign("t1", "e1", 10)
    assert mac == position_mac(KEY, "t1", "e1", 10)
    assert macs.verify("t1", JournalPosition("e1", 10, mac)).verified
    # The remembered mac vouches for its own position only, and for its own table only.
    assert not macs.verify("t1", JournalPosition("e1", 11, mac)).verified
    assert not macs.verify("t1", JournalPosition("e2", 10, mac)).verified
    assert not macs.verify("t2", JournalPosition("e1", 10, mac)).verified
    assert not macs.verify("t1", JournalPosition("e1", 10, "0" * 64)).verified
    # An older genuine position still verifies, by computing its mac.
    macs.sign("t1", "e1", 12)
    assert macs.verify("t1", JournalPosition("e1", 10, mac)).verified
    assert not macs.verify("t1", JournalPosition("e1", 10)).verified


def test_the_remembered_macs_are_bounded() -> None:
    macs = PositionMacs(KEY)
    macs.max_tables = 3
    for number in range(10):
        macs.sign(f"t{number}", "e1", number)
    assert len(macs._answered) <= 3
    first = position_mac(KEY, "t0", "e1", 0)  # forgotten: verified by computing
    assert macs.verify("t0", JournalPosition("e1", 0, first)).verified


def test_an_epoch_id_is_ascii() -> None:
    assert JournalPosition("0123abcd-ef", 1).epoch == "0123abcd-ef"
    for bad in ("e\u0663", "e 1", "e/1", "x" * 65):
        with pytest.raises(InvalidArgument, match="epoch id"):
            JournalPosition(bad, 1)


def test_the_agent_keeps_the_mac_with_its_position(tmp_path: Path) -> None:
    first, second = position_mac(KEY, "t1", "e1", 7), position_mac(KEY, "t1", "e1", 9)
    here = JournalPosition("e1", 9, second)
    assert JournalPosition("e1", 9).later(here).mac == second  # the same, with a mac
    assert here.later(JournalPosition("e1", 9)).mac == second  # a mac is never dropped
    assert here.later(JournalPosition("e1", 7, first)) is here
    outbox = Outbox(tmp_path, "t1")
    outbox.put("1:lockout", "lockout", 1, {"wagers": []})
    outbox.ack("1:lockout", position=JournalPosition("e1", 7, first), sums={})
    outbox.put("1:settle", "settle", 1, {})
    outbox.ack("1:settle", position=here, sums={})
    assert outbox.last_position().mac == second
    outbox.compact()
    assert Outbox(tmp_path, "t1").last_position().mac == second

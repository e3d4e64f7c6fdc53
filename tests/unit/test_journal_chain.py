"""The canonical bytes of a journal entry (:mod:`controller.domain.journal_chain`, docs/journal.md):
spelled out on an example, pinned by a known hash, unambiguous, and independent of the order
the fields come in. ``tests/integration/test_sha256_lua.py`` holds the scripts' bytes equal."""

from __future__ import annotations

import hashlib
import random

import pytest

from controller.domain.journal_chain import DOMAIN_BLOCK, FIELD_TAGS, GENESIS, canonical, entry_hash

CONTRIBUTION = {
    "seq": "11",
    "type": "contribution",
    "meter": "cs-bench",
    "d_meter": "15000000",
    "d_reserve": "0",
    "table": "t1",
    "round": "1",
    "seat": "1",
    "wager": "progressive",
    "amount_cents": "100",
}


def test_the_bytes_of_an_entry_spelled_out() -> None:
    previous = "ab" * 32
    fields = {"seq": "7", "type": "award", "zz": "é", "hash": "not hashed", "a": ""}
    assert canonical(previous, fields) == (
        b"jackpot-journal-v2" + b"\0" * 46
        + b"\x01\x05award"  # type (tag 1), 5 bytes
        + b"\x0a\x017"  # seq (tag 10), 1 byte
        + b"\x00\x01a\x00"  # a name without a tag, spelled out: 'a', empty value
        + b"\x00\x02zz\x02\xc3\xa9"  # 'zz', after 'a' in byte order; the value in UTF-8
        + bytes.fromhex(previous)
    )  # fmt: skip
    assert len(DOMAIN_BLOCK) == 64


def test_a_known_entry_keeps_its_known_hash() -> None:
    """The format is fixed: entries already written must keep verifying. Changing a tag, the
    domain block or the layout fails this."""
    assert entry_hash(GENESIS, CONTRIBUTION) == (
        "dcf56ee154106766f02014f93c988577d6f9fcf0ec3308825d0310f5ebc1a99d"
    )


@pytest.mark.parametrize(
    ("length", "prefix"),
    [
        (0, b"\x00"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (16384, b"\x80\x80\x01"),
    ],
)
def test_lengths_are_unsigned_leb128(length: int, prefix: bytes) -> None:
    value = "x" * length
    data = canonical(GENESIS, {"note": value})
    tag = bytes((FIELD_TAGS["note"],))
    assert data == DOMAIN_BLOCK + tag + prefix + value.encode() + bytes(32)


def test_the_order_of_the_fields_does_not_matter() -> None:
    items = [*CONTRIBUTION.items(), ("extra_b", "2"), ("extra_a", "1")]
    expected = entry_hash(GENESIS, dict(items))
    rng = random.Random(3)
    for _ in range(50):
        rng.shuffle(items)
        assert entry_hash(GENESIS, dict(items)) == expected


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"note": "ab"}, {"note": "a", "b": ""}),  # a value cannot pass for a field boundary
        ({"x": "1"}, {"x1": ""}),  # nor a name's end for its value's start
        ({"seq": "1"}, {"\x0a": "1"}),  # nor a name without a tag for a tag
        ({"note": ""}, {}),  # an empty field is still a field
        ({"type": "a", "seq": "b"}, {"type": "b", "seq": "a"}),
    ],
)
def test_different_entries_have_different_bytes(one: dict[str, str], other: dict[str, str]) -> None:
    assert canonical(GENESIS, one) != canonical(GENESIS, other)


def test_the_previous_hash_is_bound_as_its_bytes() -> None:
    previous = hashlib.sha256(b"x").hexdigest()
    assert canonical(previous, CONTRIBUTION).endswith(bytes.fromhex(previous))
    assert entry_hash(previous, CONTRIBUTION) == entry_hash(previous.upper(), CONTRIBUTION)
    assert entry_hash(previous, CONTRIBUTION) != entry_hash(GENESIS, CONTRIBUTION)


@pytest.mark.parametrize("previous", ["", "0" * 63, "g" * 64, "0" * 65, " " + "0" * 63, "é" * 64])
def test_a_previous_hash_that_spells_no_digest_chains_as_zeros(previous: str) -> None:
    assert canonical(previous, CONTRIBUTION) == canonical(GENESIS, CONTRIBUTION)

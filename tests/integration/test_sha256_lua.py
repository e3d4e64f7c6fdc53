"""The SHA-256 the scripts chain the journal with (``sha256.lua``) and the chain hash of an
entry (``_lib.lua``) equal Python's (:mod:`hashlib`, :mod:`controller.domain.journal_chain`), run
in a real Redis."""

from __future__ import annotations

import hashlib
import json
import random

from redis.asyncio import Redis

from controller.domain.journal_chain import FIELD_TAGS, GENESIS, entry_hash
from controller.store.scripts import prelude_source

BOUNDARIES = [0, 1, 3, 54, 55, 56, 57, 63, 64, 65, 111, 119, 120, 127, 128, 129, 1000, 4096]


async def test_the_lua_sha256_equals_hashlib(redis_client: Redis) -> None:
    digest = redis_client.register_script(
        f"{prelude_source()}\nreturn (sha256_finish(SHA256_START, ARGV[1]))"
    )
    rng = random.Random(20240610)
    messages = [rng.randbytes(n) for n in BOUNDARIES]
    messages += [rng.randbytes(rng.randrange(0, 600)) for _ in range(300)]
    messages += [
        b"",
        b"abc",
        "Ünïcödé — ♠♥♦♣ 🂡 jackpot".encode(),
        b"\x00" * 64,
        b"\xff" * 56,
        b"a" * 55,
        b"\xff" * 1000,
    ]
    whole = redis_client.register_script(f"{prelude_source()}\nreturn sha256_hex(ARGV[1])")
    for message in messages:
        assert await digest(args=[message]) == hashlib.sha256(message).hexdigest(), message
        assert await whole(args=[message]) == hashlib.sha256(message).hexdigest(), message


async def test_a_shared_prefix_hashed_once_gives_the_same_digest(redis_client: Redis) -> None:
    """sha256_absorb then sha256_finish: the digest of the prefix and the message, and its
    32 bytes."""
    resume = redis_client.register_script(
        f"{prelude_source()}\n"
        "local hex, raw = sha256_finish(sha256_absorb(SHA256_START, ARGV[1]), ARGV[2])\n"
        "return {hex, (raw:gsub('.', function(c) return string.format('%02x', c:byte()) end))}"
    )
    rng = random.Random(11)
    for _ in range(60):
        prefix = rng.randbytes(64 * rng.randrange(0, 4))
        message = rng.randbytes(rng.choice([0, 1, 55, 56, 63, 64, 65, rng.randrange(0, 300)]))
        hex_digest, raw = await resume(args=[prefix, message])
        assert hex_digest == hashlib.sha256(prefix + message).hexdigest()
        assert bytes.fromhex(raw) == hashlib.sha256(prefix + message).digest()


def random_entry(rng: random.Random) -> dict[str, str]:
    """Names with and without tags (unknown ones sort differently by locale than by byte:
    underscores, capitals, digits), values with any characters, some longer than 127 bytes."""
    alphabet = "ab_zAZ09-:é"
    names = set(rng.sample(sorted(FIELD_TAGS), rng.randrange(0, 12)))
    names |= {
        "".join(rng.choices(alphabet, k=rng.randrange(1, 9))) for _ in range(rng.randrange(0, 6))
    }
    return {
        name: "".join(
            chr(rng.choice([rng.randrange(32, 127), rng.randrange(160, 0x2FFF)]))
            for _ in range(rng.choice([0, 1, 5, 40, 127, 128, 300]))
        )
        for name in names
    }


async def test_the_lua_chain_hash_equals_python(redis_client: Redis) -> None:
    """Entries chained in one call (as a script that journals several does), each to the
    previous one's hash or to a given one, well formed or not: the same hash both sides."""
    chain = redis_client.register_script(
        f"{prelude_source()}\n"
        "local hashes, previous = {}, nil\n"
        "for i, entry in ipairs(cjson.decode(ARGV[1])) do\n"
        "  if entry[1] then previous = chain_previous(entry[1]) end\n"
        "  hashes[i], previous = chain_hash(previous, entry[2])\n"
        "end\n"
        "return hashes"
    )
    rng = random.Random(7)
    given = [GENESIS, "ab" * 32, "AB" * 32, "", "0" * 63, "g" * 64, "é" * 32]
    for _ in range(10):
        entries = [random_entry(rng) for _ in range(20)]
        starts = [rng.choice(given) if rng.random() < 0.3 else None for _ in entries]
        starts[0] = starts[0] or GENESIS
        flat = [
            [False if start is None else start, [p for item in e.items() for p in item]]
            for start, e in zip(starts, entries, strict=True)
        ]
        answer = list(await chain(args=[json.dumps(flat)]))
        previous = GENESIS
        for start, entry, hex_hash in zip(starts, entries, answer, strict=True):
            previous = entry_hash(start if start is not None else previous, entry)
            assert hex_hash == previous, entry


async def test_entries_that_share_their_first_block_in_one_call(redis_client: Redis) -> None:
    """The contributions of one lockout: the same first block, hashed once, and every hash
    still the entry's own."""
    chain = redis_client.register_script(
        f"{prelude_source()}\n"
        "local hashes, previous = {}, chain_previous(ARGV[1])\n"
        "for i, flat in ipairs(cjson.decode(ARGV[2])) do\n"
        "  hashes[i], previous = chain_hash(previous, flat)\n"
        "end\n"
        "return hashes"
    )
    common = {"type": "contribution", "meter": "cs-main-progressive", "table": "cs-01",
              "round": "123456", "wager": "progressive", "amount_cents": "100",
              "d_meter": "15000000", "d_reserve": "0"}  # fmt: skip
    entries = [{**common, "seat": str(seat), "seq": str(1000 + seat)} for seat in range(1, 8)]
    entries += [{**common, "seat": "1", "seq": "1001"}, {**common, "seat": "1", "seq": "1001"}]
    flat = [[p for item in e.items() for p in item] for e in entries]
    answer = list(await chain(args=[GENESIS, json.dumps(flat)]))
    previous = GENESIS
    for entry, hex_hash in zip(entries, answer, strict=True):
        previous = entry_hash(previous, entry)
        assert hex_hash == previous
    assert len(set(answer)) == len(answer)


async def test_the_scripts_tag_the_same_names_as_python(redis_client: Redis) -> None:
    tags = await redis_client.eval(f"{prelude_source()}\nreturn cjson.encode(chain_tables())", 0)
    assert json.loads(tags) == FIELD_TAGS

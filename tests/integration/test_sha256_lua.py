"""The SHA-256 the scripts chain the journal with (``sha256.lua``) and the chain hash of an
entry (``_lib.lua``) equal Python's (:mod:`hashlib`, :mod:`controller.journal_chain`), run
in a real Redis."""

from __future__ import annotations

import hashlib
import json
import random

from redis.asyncio import Redis

from controller.journal_chain import GENESIS, entry_hash
from controller.store.scripts import prelude_source

BOUNDARIES = [0, 1, 3, 54, 55, 56, 57, 63, 64, 65, 111, 119, 120, 127, 128, 129, 1000, 4096]


async def test_the_lua_sha256_equals_hashlib(redis_client: Redis) -> None:
    digest = redis_client.register_script(f"{prelude_source()}\nreturn sha256_hex(ARGV[1])")
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
    ]
    for message in messages:
        assert await digest(args=[message]) == hashlib.sha256(message).hexdigest(), message


async def test_the_lua_chain_hash_equals_python(redis_client: Redis) -> None:
    """Random entries, names that sort differently by locale than by byte (underscores,
    capitals, digits), values with any bytes of UTF-8: the same hash both sides."""
    chain = redis_client.register_script(
        f"{prelude_source()}\nreturn chain_hash(ARGV[1], cjson.decode(ARGV[2]))"
    )
    rng = random.Random(7)
    alphabet = "ab_zAZ09-:é"
    previous = GENESIS
    for _ in range(200):
        names = {"".join(rng.choices(alphabet, k=rng.randrange(1, 9))) for _ in range(12)}
        fields = {
            name: "".join(
                chr(rng.choice([rng.randrange(32, 127), rng.randrange(160, 0x2FFF)]))
                for _ in range(rng.randrange(0, 40))
            )
            for name in names
        }
        flat = [part for item in fields.items() for part in item]
        answer = await chain(args=[previous, json.dumps(flat)])
        assert answer == entry_hash(previous, fields), fields
        previous = answer

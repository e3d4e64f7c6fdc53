"""Property-based attack on every RPC of the controller (issue 7).

Attacked: every method of :data:`controller.api.access.ACCESS` (TableService, AdminService,
health and reflection), each called with the certificate of a role allowed to call it (for a
TableService method, the certificate of the table its request names when that is one of
:data:`TABLE_IDS`), so that requests reach the servicers rather than only the access layer.
Two kinds of request body:

* arbitrary bytes: random bytes; valid encodings cut short, extended with random bytes or
  with one byte changed; hand-made hostile encodings (a length far beyond the body, an
  overlong varint, nested groups, invalid UTF-8, 100,000 empty repeated items, a body above
  the controller's 256 KiB request limit);
* well-typed messages built by walking the request's message descriptor: every field mostly
  plausible (the names of what exists: tables cs-1..cs-3, meter cs-main, link group floor,
  jackpot ids, cards, valid amounts) and sometimes extreme: empty, long (to 300,000
  characters), unicode, control characters, ids with a trailing newline; integers at 0, 1,
  -1, the type's limits and 2**31, 2**32, 2**52, 2**53, 2**63 (each +- 1); repeated fields from
  empty to a few items beyond their bound; unknown enum numbers; nested messages unset.

The controller is a real process (mutual TLS; the call rate limits off, so that the
examples are not simply refused for their pace) on its own real redis-server, started once
for this module with the example Caribbean Stud Rules Submission, after real rounds at table
cs-1: a royal flush and a straight flush (two pending jackpots), a voided round and a round
left locked out.

Asserted after every example: the status is never INTERNAL, UNKNOWN or DATA_LOSS, nor
DEADLINE_EXCEEDED for a unary call (a hang), and its details hold no traceback; a refused call
(any status but OK, a cancelled stream included) leaves Redis byte-for-byte as it was (every
key's type, content and whether it expires), but for the two journaled writes a refusal makes
(docs/journal.md, "Verified positions"): a table position ahead of Redis that stops the link
group (which an operator then resumes), and a table's first unverifiable such claim of an
epoch, remembered on the epoch record and journaled (exactly that, checked). After every
test: the controller is alive and still serves table cs-1, wrote no "Traceback" and no
"unexpected error" to its log, its resident memory grew by less than 64 MiB since the
module's first test began, and ``audit verify`` finds every meter equal to its journal.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc_health.v1.health_pb2  # noqa: F401  (its request types: health is attacked too)
import grpc_reflection.v1alpha.reflection_pb2  # noqa: F401  (and reflection)
import pytest
import redis
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.processes import memory_bytes
from controller.api.access import ACCESS, Access
from controller.domain import bounds
from controller.domain.identity import Role
from controller.journal import audit
from controller.store import keys
from controller.store.redis_store import RedisStore
from controller.testing import ControllerProcess, RedisServer, TestPKI
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import FOUR_TWOS, PAIR, ROYAL_SPADES, STRAIGHT_FLUSH_HEARTS

RULES = Path(__file__).resolve().parents[2] / "deploy" / "rules" / "caribbean-stud.toml"
TABLE_IDS = ("cs-1", "cs-2", "cs-3", "ghost", "new-table")  # the rules' tables and two others
"""The table ids a table certificate is issued for: a request naming one is sent with it."""

BYTES_EXAMPLES = 60
TYPED_EXAMPLES = 120
UNARY_TIMEOUT_S = 10.0
STREAM_TIMEOUT_S = 2.0
MAX_RSS_GROWTH = 64 * 1024 * 1024
FORBIDDEN = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DATA_LOSS}
ACCESS_REFUSALS = {grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED}
EPOCH_KEY = b"jp:{lg:floor}:epoch"
JOURNAL_KEY = b"jp:{lg:floor}:journal"
SEQ_KEY = b"jp:{lg:floor}:seq"
STOP_KEYS = {EPOCH_KEY, JOURNAL_KEY, SEQ_KEY}
UNVERIFIED_CLAIM = "only this table is refused and the link group serves on"
"""In the refusal of a table's unverifiable position ahead of Redis (``check_epoch``)."""
LOG_FAULTS = ("Traceback", "unexpected error")

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],  # drawing is quick, but CI machines vary
)


# ------------------------------------------------------------------------------ the RPCs


@dataclass(frozen=True)
class Rpc:
    """One method: its path, request class, who may call it and whether the client or the
    server streams."""

    path: str
    request: type[Message]
    access: Access
    client_streams: bool
    server_streams: bool

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def _rpc(path: str, access: Access) -> Rpc:
    service, method = path.strip("/").rsplit("/", 1)
    found = descriptor_pool.Default().FindServiceByName(service).methods_by_name[method]
    request = GetMessageClass(found.input_type)
    return Rpc(path, request, access, found.client_streaming, found.server_streaming)


RPCS = [_rpc(path, access) for path, access in ACCESS.items()]
"""Every method the controller serves: TableService, AdminService, health and reflection."""


def caller_for(rpc: Rpc, table_id: str | None) -> tuple[str, str]:
    """A (role, name) allowed to call ``rpc`` for a request naming ``table_id``."""
    roles = rpc.access.roles
    if rpc.access.for_own_table:
        if table_id in TABLE_IDS:
            return Role.TABLE.value, str(table_id)
        if Role.DISPLAY in roles:
            return Role.DISPLAY.value, "lobby"
        return Role.TABLE.value, "cs-1"  # refused by the access layer: it is not cs-1's table
    for role in (Role.AUDITOR, Role.SUPERVISOR, Role.OPERATOR):
        if role in roles:
            return role.value, f"fuzz-{role.value}"
    raise AssertionError(f"no role to call {rpc.path} with")


def table_id_of(rpc: Rpc, body: bytes) -> str | None:
    """The table the request names, decoded as the controller decodes it."""
    try:
        request = rpc.request.FromString(body)
    except Exception:  # what the controller refuses as INVALID_ARGUMENT
        return None
    return getattr(request, "table_id", None)


# ------------------------------------------------------------------------------ values

_KINDS = FieldDescriptor
INT_RANGES = {
    _KINDS.TYPE_UINT64: (0, 2**64 - 1),
    _KINDS.TYPE_FIXED64: (0, 2**64 - 1),
    _KINDS.TYPE_INT64: (-(2**63), 2**63 - 1),
    _KINDS.TYPE_SINT64: (-(2**63), 2**63 - 1),
    _KINDS.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    _KINDS.TYPE_UINT32: (0, 2**32 - 1),
    _KINDS.TYPE_FIXED32: (0, 2**32 - 1),
    _KINDS.TYPE_INT32: (-(2**31), 2**31 - 1),
    _KINDS.TYPE_SINT32: (-(2**31), 2**31 - 1),
    _KINDS.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
}
EDGE_INTS = (
    *(sign * 2**bits + delta for sign in (1, -1) for bits in (31, 32, 52, 53, 63, 64)
      for delta in (-1, 0, 1)),
    -1, 0, 1, 2, 7, 8, 100, 1_000_000,
)  # fmt: skip

EXTREME_STRINGS = (
    "",
    " ",
    "\n",
    "\x00",
    "\t\r\n",
    "cs-1\n",
    " cs-1",
    "CS-1",
    "floor:1\n",
    "a" * 64,
    "a" * 65,
    "é" * 65,
    "x" * 201,
    "x" * 501,
    "x" * 250_000,  # just under the controller's 256 KiB request limit
    "x" * 300_000,  # over it
    "ü" * 120_000,
    "\u202eevil",
    "\ufeffcs-1",
    "\u0085",
    "😀" * 33,
    "%s%n{0}${x}",
    "../../etc/passwd",
    "*",
    "floor:*",
    "\\",
    "{}",
    "-1",
    "1e308",
    "NaN",
    "\r\n".join(["a"] * 1000),
)

CARDS = tuple(rank + suit for rank in "A23456789TJQK" for suit in "SHDC")
HINTS: dict[str, Sequence[str | int]] = {
    "table_id": TABLE_IDS,
    "link_group_id": ("floor", "ghost", "new-group"),
    "meter_id": ("cs-main", "ghost", "new-meter"),
    "meter_ids": ("cs-main", "ghost"),
    "game": (
        "caribbean-stud",
        "three-card-poker",
        "six-card-fortune-pai-gow",
        "texas-holdem-bonus",
    ),
    "paytable": ("A", "B", "C", "FCHB-1", ""),
    "cards": (*CARDS, "10H", "JK", "1S", "XX", "as"),
    "rate_of_progression_percent": ("15", "5", "0", "100", "0.1234", "0.00001", "1e2", "١٥"),
    "reserve_rate_percent": ("5", "0", "", "100", "99.9999", "-0"),
    "hand": ("royal_flush", "straight_flush", "four_of_a_kind", "flush", "nothing"),
    "award": (
        "100% of meter",
        "10% of meter cs-main",
        "500 for 1",
        "1,000 to 1",
        "$500",
        "0 for 1",
    ),
    "reason": ("misdeal", "exposed card"),
    "description": ("floor two",),
    "note": ("verified", ""),
    "jackpot_id": (
        *(f"floor:{seq}" for seq in range(40)),
        *(f"floor:{seq}" for seq in (2**53, 2**63 - 1, 2**63, 10**19 - 1)),
        "ghost:1",
    ),
    "round_id": (1, 2, 3, 4, 5, 6, 1000, 1004, 1005),
    "last_round_id": (4, 5, 1000, 2**52, 2**52 + 1),
    "seat": (1, 2, 5, 7, 8),
    "seats": (1, 6, 7, 8),  # Table.seats (SettleRequest.seats is messages)
    "amount_cents": (1, 100, 500, 2500, 10_000),
    "reset_cents": (1_000_000, 999_999, 5_000_000),
    "ceiling_cents": (0, 2_000_000),
    "min_cents": (1, 100),
    "max_cents": (100, 2500),
    "payout_limit_cents": (0, 100_000),
    "base_game_win_cents": (0, 500),
    "min_interval_ms": (0, 50, 60_000, 60_001),
    "service": ("", "jackpot.v1.TableService", "grpc.health.v1.Health", "nope"),
    "file_containing_symbol": ("jackpot.v1.TableService", "jackpot.v1.Wager", "nope"),
    "file_by_filename": ("jackpot/v1/jackpot.proto", "../../etc/passwd"),
    "containing_type": ("jackpot.v1.Wager", "google.protobuf.Any"),
    "all_extension_numbers_of_type": ("jackpot.v1.Wager",),
    "list_services": ("", "*"),
}
"""Plausible values per field name: what exists, what is valid and what is just beyond."""
HINTS["dealer_cards"] = HINTS["community_cards"] = HINTS["cards"]
HINTS["rest_of_round_void"] = HINTS["reason"]

HANDS = {"cards": 5, "dealer_cards": 5, "community_cards": 2}
"""How many cards a Caribbean Stud hand holds (two community cards at Three Card Poker)."""

REPEATED_BOUNDS = {
    "jackpot.v1.LockoutRequest.wagers": bounds.MAX_WAGERS_PER_ROUND,
    "jackpot.v1.SettleRequest.seats": bounds.MAX_SEAT_REPORTS,
    "jackpot.v1.SeatCards.cards": bounds.MAX_CARDS_PER_HAND,
    "jackpot.v1.SettleRequest.dealer_cards": bounds.MAX_CARDS_PER_HAND,
    "jackpot.v1.SettleRequest.community_cards": bounds.MAX_CARDS_PER_HAND,
    "jackpot.v1.Table.wagers": bounds.MAX_WAGER_OFFERS,
    "jackpot.v1.TableWager.lines": bounds.MAX_PAYTABLE_LINES,
    "jackpot.v1.TableWager.envy_lines": bounds.MAX_PAYTABLE_LINES,
    "jackpot.v1.TableWager.meter_ids": bounds.MAX_METERS_PER_WAGER,
}
"""The bound of each repeated field (others: a few items); lists run to a few beyond it."""


def mostly(likely: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``likely`` three times in four, else ``other``: a message has a few extreme fields."""
    return st.integers(0, 3).flatmap(lambda n: other if n == 0 else likely)


def plausible(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    """A value of one item of ``field`` such as a client might send."""
    if field.message_type is not None:
        return messages(field.message_type)
    if field.name in HINTS:
        return st.sampled_from(HINTS[field.name])
    if field.enum_type is not None:
        return st.sampled_from([value.number for value in field.enum_type.values][1:])
    if field.type == _KINDS.TYPE_STRING:
        return st.text("abcxyz-_.019 ", min_size=1, max_size=12)
    if field.type == _KINDS.TYPE_BOOL:
        return st.booleans()
    return st.integers(0, 10)


def extreme(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    """An extreme value of one item of ``field`` (None: a message field left unset)."""
    if field.message_type is not None:
        return st.sampled_from([None, GetMessageClass(field.message_type)()])
    if field.type == _KINDS.TYPE_STRING:
        return st.one_of(st.sampled_from(EXTREME_STRINGS), st.text(max_size=40))
    if field.enum_type is not None:
        unknown = len(field.enum_type.values)
        return st.sampled_from([0, unknown, 99, -1, 2**31 - 1, -(2**31)])
    if field.type == _KINDS.TYPE_BOOL:
        return st.booleans()
    if field.type == _KINDS.TYPE_BYTES:
        return st.binary(max_size=64)
    low, high = INT_RANGES[field.type]
    edges = sorted({value for value in EDGE_INTS if low <= value <= high})
    return st.one_of(st.sampled_from(edges), st.integers(low, high))


def values(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    """Values of ``field``; a repeated field's lists run from empty to a few items beyond its
    bound."""
    item = mostly(plausible(field), extreme(field))
    if not field.is_repeated:
        return item
    bound = REPEATED_BOUNDS.get(field.full_name, 4)
    # Near the bound, one plausible item repeated (an extreme one could make megabytes).
    count = st.integers(bound - 1, bound + 3)
    near_bound = st.builds(lambda one, n: [one] * n, plausible(field), count)
    some = st.lists(item.filter(_is_set), max_size=5)
    if field.name in HANDS:  # distinct cards, as many as a hand holds: they may settle
        size = HANDS[field.name]
        hand = st.lists(st.sampled_from(CARDS), min_size=size, max_size=size, unique=True)
        some = st.one_of(some, hand)
    return mostly(some, near_bound)


def _is_set(value: object) -> bool:
    return value is not None


def _message(cls: type[Message], fields: dict[str, Any]) -> Message:
    return cls(**{name: value for name, value in fields.items() if value is not None})


@functools.cache
def messages(descriptor: Descriptor) -> st.SearchStrategy[Message]:
    """Messages of ``descriptor``: every field set, mostly to plausible values, some to
    extreme ones."""
    cls = GetMessageClass(descriptor)
    fields = {field.name: values(field) for field in descriptor.fields}
    return st.fixed_dictionaries(fields).map(functools.partial(_message, cls))


# ------------------------------------------------------------------------------ bodies


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


HOSTILE_BODIES = (
    b"\x0a\xff\xff\xff\xff\x0f",  # field 1, length 4 GiB
    b"\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  # a length that overflows 64 bits
    b"\x10" + b"\xff" * 10 + b"\x01",  # an 11-byte varint
    b"\x0b" * 200 + b"\x0c" * 200,  # groups nested 200 deep
    b"\x0a\x02\xc3\x28",  # field 1: invalid UTF-8
    b"\x0a\x03cs-1",  # field 1 shorter than its length
    b"\x1a\x00" * 100_000,  # 100,000 empty items of field 3
    b"\xf8\xff\xff\xff\x0f\x01",  # the largest field number
    b"\x00",  # field number 0
    b"\x0f",  # wire type 7
    b"\x32" + _varint(300_000) + b"x" * 300_000,  # over the 256 KiB request limit
)


def _flip(body: bytes, at: int, xor: int) -> bytes:
    if not body:
        return bytes([xor])
    at %= len(body)
    return body[:at] + bytes([body[at] ^ xor]) + body[at + 1 :]


def _cut(body: bytes, at: int) -> bytes:
    return body[: at % (len(body) or 1)]


def encodings(rpc: Rpc) -> st.SearchStrategy[bytes]:
    """Well-typed requests of ``rpc`` with extreme values, encoded."""
    return messages(rpc.request.DESCRIPTOR).map(lambda message: message.SerializeToString())


def arbitrary_bodies(rpc: Rpc) -> st.SearchStrategy[bytes]:
    """Bytes that are mostly not a request of ``rpc``, some of them nearly one."""
    valid = encodings(rpc)
    return st.one_of(
        st.binary(max_size=1024),
        st.sampled_from(HOSTILE_BODIES),
        st.builds(bytes.__add__, valid, st.binary(min_size=1, max_size=64)),
        st.builds(_cut, valid, st.integers(0, 2**16)),
        st.builds(_flip, valid, st.integers(0, 2**16), st.integers(1, 255)),
    )


# ------------------------------------------------------------------------------ the target


_READERS: dict[bytes, Callable[[Any, Any], Any]] = {
    b"string": lambda pipe, key: pipe.get(key),
    b"hash": lambda pipe, key: pipe.hgetall(key),
    b"set": lambda pipe, key: pipe.smembers(key),
    b"zset": lambda pipe, key: pipe.zrange(key, 0, -1, withscores=True),
    b"list": lambda pipe, key: pipe.lrange(key, 0, -1),
    b"stream": lambda pipe, key: pipe.xrange(key),
}


def redis_state(client: redis.Redis) -> dict[Any, tuple[bytes, Any, bool]]:
    """Every key's type, content (bytes, not decoded) and whether it expires: equal states
    hold byte-for-byte the same data. (Not ``DUMP``: Redis may rehash a hash or set in the
    background, which reorders its serialization but changes nothing.)"""
    # Not the floor view's liveness hash: when each table's agent last called (refused calls
    # included, written every 2 s), no jackpot state.
    names = sorted(name for name in client.keys("*") if name != keys.TABLE_SEEN.encode())
    with client.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.type(name)
            pipe.pttl(name)
        kinds_and_ttls = pipe.execute()
    kinds = kinds_and_ttls[0::2]
    with client.pipeline(transaction=False) as pipe:
        for name, kind in zip(names, kinds, strict=True):
            _READERS.get(kind, _gone)(pipe, name)
        contents = pipe.execute()
    expiring = [ttl >= 0 for ttl in kinds_and_ttls[1::2]]
    return {
        name: (kind, content, expires)
        for name, kind, content, expires in zip(names, kinds, contents, expiring, strict=True)
    }


def _gone(pipe: Any, key: Any) -> Any:
    return pipe.exists(key)  # deleted since KEYS (its type is "none")


def changed_keys(before: dict[Any, Any], after: dict[Any, Any]) -> list[Any]:
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def call(channel: grpc.Channel, rpc: Rpc, body: bytes) -> tuple[grpc.StatusCode, str]:
    """Send ``body`` as the request of ``rpc``: its status code and details. A stream is read
    for at most one message, then cancelled."""
    if not rpc.server_streams:
        try:
            channel.unary_unary(rpc.path, None, None)(body, timeout=UNARY_TIMEOUT_S)
        except grpc.RpcError as error:
            failed: Any = error
            return failed.code(), failed.details() or ""
        return grpc.StatusCode.OK, ""
    if rpc.client_streams:
        stream: Any = channel.stream_stream(rpc.path, None, None)(
            iter([body]), timeout=STREAM_TIMEOUT_S
        )
    else:
        stream = channel.unary_stream(rpc.path, None, None)(body, timeout=STREAM_TIMEOUT_S)
    try:
        next(stream)
    except (StopIteration, grpc.RpcError):
        pass
    stream.cancel()
    return stream.code(), stream.details() or ""


class Fuzzed:
    """The controller under attack, its Redis, and channels as every identity used."""

    def __init__(self, controller: ControllerProcess, pki: TestPKI) -> None:
        self.controller = controller
        self.pki = pki
        self.redis = redis.Redis.from_url(controller.redis_url)
        self._channels: dict[tuple[str, str], grpc.Channel] = {}
        self.state: dict[Any, Any] = {}
        self.baseline_rss = 0
        self.log_offset = 0
        self.codes: Counter[grpc.StatusCode] = Counter()

    def channel(self, role: str, name: str) -> grpc.Channel:
        channel = self._channels.get((role, name))
        if channel is None:
            channel = tls.channel(self.controller.target, self.pki.client(role, name))
            self._channels[(role, name)] = channel
        return channel

    def play_rounds(self) -> None:
        """Real rounds at cs-1, so that journal, rounds and jackpots exist: a royal flush and
        a straight flush (two pending jackpots), a voided round and one left locked out."""
        table = pb_grpc.TableServiceStub(self.channel("table", "cs-1"))
        progressive = pb.WAGER_KIND_PROGRESSIVE

        def wager(seat: int, kind: Any = progressive, cents: int = 100) -> pb.Wager:
            return pb.Wager(seat=seat, kind=kind, amount_cents=cents)

        def seat(number: int, cards: str) -> pb.SeatCards:
            return pb.SeatCards(seat=number, cards=cards.split())

        rounds = [
            ([wager(1), wager(2), wager(2, pb.WAGER_KIND_BONUS, 500)], [ROYAL_SPADES, PAIR]),
            ([wager(3), wager(4)], [STRAIGHT_FLUSH_HEARTS, FOUR_TWOS]),
        ]
        for round_id, (wagers, hands) in enumerate(rounds, start=1):
            table.Lockout(pb.LockoutRequest(table_id="cs-1", round_id=round_id, wagers=wagers))
            seats = sorted({w.seat for w in wagers})
            table.Settle(
                pb.SettleRequest(
                    table_id="cs-1",
                    round_id=round_id,
                    seats=[seat(n, cards) for n, cards in zip(seats, hands, strict=True)],
                )
            )
        for round_id in (3, 4):
            table.Lockout(pb.LockoutRequest(table_id="cs-1", round_id=round_id, wagers=[wager(5)]))
        table.VoidRound(pb.VoidRoundRequest(table_id="cs-1", round_id=3, reason="misdeal"))

    def begin(self) -> None:
        """Note the state, memory and log length before the attacks."""
        self.state = redis_state(self.redis)
        self.baseline_rss = self.baseline_rss or memory_bytes(self.controller.pid)
        self.log_offset = len(self.controller.log_path.read_bytes())
        self.codes.clear()

    def attack(self, rpc: Rpc, body: bytes) -> None:
        """Send one request and check its status and what it left in Redis."""
        table_id = table_id_of(rpc, body)
        role, name = caller_for(rpc, table_id)
        code, details = call(self.channel(role, name), rpc, body)
        self.codes[code] += 1
        what = f"{rpc.name} as {role}/{name} with {len(body):,} bytes {body[:300]!r}"
        assert code not in FORBIDDEN, f"{what}: {code.name} {details!r}"
        hung = code is grpc.StatusCode.DEADLINE_EXCEEDED and not rpc.server_streams
        assert not hung, f"{what}: no answer in {UNARY_TIMEOUT_S} s"
        assert "Traceback" not in details, f"{what}: {details!r}"
        before = self.state
        # The next example is judged from what this one left, also when this one fails: a
        # write is named once, at the call that made it.
        self.state = after = redis_state(self.redis)
        if code is grpc.StatusCode.OK:
            return
        changed = changed_keys(before, after)
        stopped = "link group is stopped" in details or "is not served" in details
        if code is grpc.StatusCode.UNAVAILABLE and stopped:
            # A table claiming a journal position Redis lacks stops its link group (a write a
            # refusal makes, journaled: docs/journal.md "Verified positions"); resume it.
            assert set(changed) <= STOP_KEYS, f"{what}: stopping it changed {changed}"
            self.resume(details)
            self.state = redis_state(self.redis)
        elif code is grpc.StatusCode.UNAVAILABLE and UNVERIFIED_CLAIM in details:
            check_claim(what, f"table {table_id}", before, after)
        else:
            assert not changed, f"{what}: refused ({code.name} {details!r}) but changed {changed}"

    def resume(self, why: str) -> None:
        """An operator resumes the stopped link group (a new epoch, journaled)."""
        admin = pb_grpc.AdminServiceStub(self.channel("operator", "fuzz-operator"))
        group = admin.GetLinkGroup(
            pb.GetLinkGroupRequest(link_group_id="floor"), timeout=UNARY_TIMEOUT_S
        )
        admin.ResumeLinkGroup(
            pb.ResumeLinkGroupRequest(
                link_group_id="floor", reason=f"fuzz: {why[:150]}", epoch=group.journal.epoch
            ),
            timeout=UNARY_TIMEOUT_S,
        )

    def check_healthy(self, rpc: Rpc) -> None:
        """Alive, still serving, a clean log, bounded memory, and the audit is clean."""
        process = self.controller.process
        assert process is not None and process.poll() is None, self.controller.log_tail()
        table = pb_grpc.TableServiceStub(self.channel("table", "cs-1"))
        table.GetTable(pb.GetTableRequest(table_id="cs-1"), timeout=UNARY_TIMEOUT_S)
        log = self.controller.log_path.read_bytes()[self.log_offset :].decode(errors="replace")
        for fault in LOG_FAULTS:
            assert fault not in log, log[max(0, log.find(fault) - 2000) :][:6000]
        growth = memory_bytes(self.controller.pid) - self.baseline_rss
        assert growth < MAX_RSS_GROWTH, f"resident memory grew by {growth:,} bytes"
        report = asyncio.run(_verify(self.controller.redis_url))
        assert report.ok, report.differences
        reached = set(self.codes) - ACCESS_REFUSALS
        assert reached, f"every {rpc.name} call was refused by the access layer: {self.codes}"

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
        self.redis.close()


def check_claim(what: str, who: str, before: dict[Any, Any], after: dict[Any, Any]) -> None:
    """A refused unverifiable claim (``who``'s position ahead of Redis) wrote nothing, or
    exactly the epoch's first claim: the epoch record's ``unverified_claim`` and one journal
    entry ``unverified_claim`` by ``who`` (docs/journal.md, "Verified positions")."""
    changed = changed_keys(before, after)
    if not changed:
        return  # this epoch's claim was made before
    assert set(changed) == STOP_KEYS, f"{what}: the claim changed {changed}"
    old, new = before[EPOCH_KEY][1], after[EPOCH_KEY][1]
    claim = new[b"id"] + b" " + who.encode()
    assert not old.get(b"unverified_claim", b"").startswith(new[b"id"] + b" "), (
        f"{what}: claimed again in epoch {new[b'id']!r}: {old} -> {new}"
    )
    assert new == {**old, b"unverified_claim": claim}, f"{what}: the epoch became {new}"
    entries = after[JOURNAL_KEY][1]
    assert entries[:-1] == before[JOURNAL_KEY][1], f"{what}: the journal changed, not grew"
    entry = entries[-1][1]
    assert entry[b"type"] == b"unverified_claim" and entry[b"by"] == who.encode(), entry
    assert int(after[SEQ_KEY][1]) == int(before[SEQ_KEY][1]) + 1, f"{what}: seq"


async def _verify(redis_url: str) -> audit.AuditReport:
    store = RedisStore.from_url(redis_url)
    try:
        return await audit.verify(store)
    finally:
        await store.close()


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory, pki: TestPKI) -> Iterator[Fuzzed]:
    """The controller process on its own redis-server, after real rounds were played."""
    work = tmp_path_factory.mktemp("fuzz")
    with (
        RedisServer(work / "redis") as redis_server,
        ControllerProcess(
            redis_server.url,
            work / "controller.log",
            pki=pki,
            metrics=False,
            rules=RULES,
            extra_args=("--table-calls-per-second", "0", "--client-calls-per-second", "0"),
        ) as controller,
    ):
        target = Fuzzed(controller, pki)
        try:
            target.play_rounds()
            yield target
        finally:
            target.close()


def run_attack(
    fuzzed: Fuzzed, rpc: Rpc, bodies: st.SearchStrategy[bytes], max_examples: int
) -> None:
    """Attack ``rpc`` with ``max_examples`` bodies, then check the controller's health."""

    @settings(FUZZ, max_examples=max_examples)
    @given(body=bodies)
    def attack(body: bytes) -> None:
        fuzzed.attack(rpc, body)

    fuzzed.begin()
    attack()
    fuzzed.check_healthy(rpc)


def _by_name(rpc: Rpc) -> str:
    return rpc.path.rsplit(".", 1)[-1].replace("/", ".")  # TableService.Lockout


pytestmark = [pytest.mark.slow, pytest.mark.parametrize("rpc", RPCS, ids=_by_name)]


def test_arbitrary_bytes(fuzzed: Fuzzed, rpc: Rpc) -> None:
    run_attack(fuzzed, rpc, arbitrary_bodies(rpc), BYTES_EXAMPLES)


def test_extreme_messages(fuzzed: Fuzzed, rpc: Rpc) -> None:
    run_attack(fuzzed, rpc, encodings(rpc), TYPED_EXAMPLES)

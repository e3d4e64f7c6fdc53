"""The benchmark's rounds as wire bytes are the messages the typed path builds."""

from __future__ import annotations

import random

from bench.workload import (
    DEAL_POOL,
    LOCKOUT_METHOD,
    SEATS,
    SETTLE_METHOD,
    EncodedRounds,
    round_requests,
)
from jackpot.v1 import jackpot_pb2 as pb


def test_the_methods_are_the_services() -> None:
    service = pb.DESCRIPTOR.services_by_name["TableService"]
    assert LOCKOUT_METHOD == f"/{service.full_name}/Lockout"
    assert SETTLE_METHOD == f"/{service.full_name}/Settle"


def test_encoded_rounds_parse_as_the_typed_requests() -> None:
    encoded = EncodedRounds(random.Random(7), deals=3)
    typed = random.Random(7)
    for round_id in (1, 2, 3):
        lockout, settle = round_requests("t12", round_id, typed)
        assert pb.LockoutRequest.FromString(encoded.lockout("t12", round_id)) == lockout
        assert pb.SettleRequest.FromString(encoded.settle("t12", round_id)) == settle


def test_the_deals_are_whole_distinct_and_cycle() -> None:
    encoded = EncodedRounds(random.Random(1), deals=5)
    settles = [pb.SettleRequest.FromString(encoded.settle("t1", n)) for n in range(1, 11)]
    for settle in settles:
        cards = [card for seat in settle.seats for card in seat.cards]
        cards += settle.dealer_cards
        assert [seat.seat for seat in settle.seats] == list(SEATS)
        assert len(cards) == 5 * (len(SEATS) + 1) == len(set(cards))
    deals = [(list(s.seats), list(s.dealer_cards)) for s in settles]
    assert deals[:5] == deals[5:]  # the pool of 5, again
    assert len({repr(deal) for deal in deals[:5]}) == 5
    assert [s.round_id for s in settles] == list(range(1, 11))
    assert DEAL_POOL >= 1000

"""The idempotency digests of a round's phases (:mod:`controller.domain.digests`)."""

from __future__ import annotations

from controller.domain.digests import lockout_fingerprint, settle_fingerprint
from controller.domain.rounds import Wager
from tests.unit.rounds_kit import P, deal, seat


def test_fingerprints_ignore_order_and_card_spelling() -> None:
    a = [Wager(1, P, 100), Wager(2, P, 100)]
    assert lockout_fingerprint(a) == lockout_fingerprint(list(reversed(a)))
    assert lockout_fingerprint(a) != lockout_fingerprint(a[:1])
    assert lockout_fingerprint(a) != lockout_fingerprint([Wager(1, P, 100, envy=True), a[1]])
    tens = settle_fingerprint(deal(seat(1, "10H JH QH KH AH")))
    assert tens == settle_fingerprint(deal(seat(1, "TH JH QH KH AH")))
    assert tens != settle_fingerprint(deal(seat(1, "TH JH QH KH AH"), dealer="2C"))
    assert tens != settle_fingerprint(deal(seat(1, "TH JH QH KH AH", base_win=5)))
    assert tens != settle_fingerprint(deal(seat(1, "TH JH QH KH AH"), void="x"))

"""Simulated players place only offered wagers, at amounts within the table's limits."""

from __future__ import annotations

import random

import pytest

from jackpot.kinds import WagerKind
from table_agent.games import game_procedure
from table_agent.placement import (
    default_wagers,
    offered_kinds,
    place_random_wagers,
    unplaceable_offers,
    with_minimum_amounts,
)
from table_agent.wagers import PlacedWager, TableLayout, WagerOffer, progressive_only

K = WagerKind
CARIBBEAN_STUD = TableLayout(
    "cs-1",
    "caribbean-stud",
    7,
    (
        WagerOffer(K.PROGRESSIVE, 100, 100),
        WagerOffer(K.BONUS, 100, 10_000),
        WagerOffer(K.FIVE_CARD_BONUS, 500, 2_500),
    ),
)
SIX_CARD_FORTUNE = TableLayout(
    "pg-1",
    "six-card-fortune-pai-gow",
    6,
    (
        WagerOffer(K.PROGRESSIVE, 100, 100),
        WagerOffer(K.FORTUNE_BONUS, 500, 50_000, envy=True),
        WagerOffer(K.INSURANCE, 500, 2_000),
    ),
)


def test_amounts_respect_min_max_and_fixed() -> None:
    assert WagerOffer(K.PROGRESSIVE, 100, 100).amounts() == (100,)
    assert WagerOffer(K.BONUS, 500, 10_000).amounts() == (500, 1_000, 2_500, 5_000, 10_000)
    assert WagerOffer(K.BONUS, 500, 800).amounts() == (500, 800)
    with pytest.raises(ValueError, match="not a positive range"):
        WagerOffer(K.BONUS, 500, 100)
    with pytest.raises(ValueError, match="not a positive range"):
        WagerOffer(K.BONUS, 0, 100)


@pytest.mark.parametrize("layout", [CARIBBEAN_STUD, SIX_CARD_FORTUNE])
def test_every_random_wager_is_offered_and_within_limits(layout: TableLayout) -> None:
    game = game_procedure(layout.game)
    rng = random.Random(7)
    placed = [w for _ in range(500) for w in place_random_wagers(game, layout, 3, 50, rng)]
    for wager in placed:
        offer = layout.offer(wager.kind)
        assert offer is not None and offer.min_cents <= wager.amount_cents <= offer.max_cents
        assert wager.seat == 3
    assert {w.kind for w in placed} == {offer.kind for offer in layout.offers}
    progressive = {w.amount_cents for w in placed if w.kind is K.PROGRESSIVE}
    assert progressive == {100}  # fixed


def test_five_card_bonus_on_the_players_the_dealers_or_both_hands() -> None:
    game = game_procedure("caribbean-stud")
    rng = random.Random(11)
    seen = set()
    for _ in range(200):
        wagers = place_random_wagers(game, CARIBBEAN_STUD, 1, 100, rng)
        seen.add(tuple(w.on_dealer_hand for w in wagers if w.kind is K.FIVE_CARD_BONUS))
        assert not any(w.envy for w in wagers)
        assert not any(w.on_dealer_hand for w in wagers if w.kind is not K.FIVE_CARD_BONUS)
    assert seen == {(False,), (True,), (False, True)}


def test_envy_only_with_the_fortune_bonus_and_only_where_offered() -> None:
    game = game_procedure("six-card-fortune-pai-gow")
    rng = random.Random(5)
    placed = [
        w for _ in range(200) for w in place_random_wagers(game, SIX_CARD_FORTUNE, 2, 100, rng)
    ]
    assert {w.kind for w in placed if w.envy} == {K.FORTUNE_BONUS}
    assert any(not w.envy for w in placed if w.kind is K.FORTUNE_BONUS)
    no_envy = TableLayout("pg-2", game.facts.name, 6, (WagerOffer(K.FORTUNE_BONUS, 500, 500),))
    placed = [w for _ in range(50) for w in place_random_wagers(game, no_envy, 2, 100, rng)]
    assert placed and not any(w.envy for w in placed)


def test_no_wager_at_zero_percent_and_nothing_the_table_does_not_offer() -> None:
    game = game_procedure("caribbean-stud")
    rng = random.Random(1)
    assert place_random_wagers(game, CARIBBEAN_STUD, 1, 0, rng) == []
    progressive = progressive_only("cs-9", "caribbean-stud", 7, 100)
    kinds = {w.kind for _ in range(50) for w in place_random_wagers(game, progressive, 1, 100, rng)}
    assert kinds == {K.PROGRESSIVE}


def test_offers_the_game_has_no_place_for_are_named() -> None:
    game = game_procedure("texas-holdem-bonus")
    layout = TableLayout(
        "thb-1",
        game.facts.name,
        6,
        (WagerOffer(K.BONUS, 500, 10_000), WagerOffer(K.PROGRESSIVE, 100, 100)),
    )
    assert [offer.kind for offer in offered_kinds(game, layout)] == [K.BONUS]
    assert unplaceable_offers(game, layout) == [K.PROGRESSIVE]


def test_scripted_defaults_and_minimum_amounts() -> None:
    game = game_procedure("caribbean-stud")
    assert default_wagers(game, CARIBBEAN_STUD, 4) == [PlacedWager(4, K.PROGRESSIVE, 100)]
    thb = game_procedure("texas-holdem-bonus")
    layout = TableLayout("thb-1", thb.facts.name, 6, (WagerOffer(K.BONUS, 500, 10_000),))
    assert default_wagers(thb, layout, 2) == [PlacedWager(2, K.BONUS, 500)]
    resolved = with_minimum_amounts(
        CARIBBEAN_STUD,
        [
            PlacedWager(1, K.FIVE_CARD_BONUS, 0, on_dealer_hand=True),
            PlacedWager(1, K.BONUS, 700),
            PlacedWager(1, K.INSURANCE, 0),
        ],
    )
    assert resolved == [
        PlacedWager(1, K.FIVE_CARD_BONUS, 500, on_dealer_hand=True),
        PlacedWager(1, K.BONUS, 700),
        PlacedWager(1, K.INSURANCE, 0),  # not offered: left for the controller to refuse
    ]

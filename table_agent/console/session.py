"""The dealer console's state machine: the round's phase, what it expects next, what each
command does. Pure: it sends nothing and draws nothing.

A round goes IDLE -> (``open``) WAGERS -> (``lockout``) LOCKED -> (``settle`` or ``void``)
IDLE. A command the dealer types is read by :meth:`DealerSession.handle`: a local change (a
wager entered, cards entered, the chip count) is checked and kept, or refused with an
:class:`~table_agent.console.entry.EntryError` that changes nothing; a command that needs the
controller (open, lockout, settle, void) comes back as a :class:`Send` for the desk to carry
out, and the answer is given back (:meth:`DealerSession.opened`, :meth:`locked_out`,
:meth:`settled`, :meth:`voided`, :meth:`refused`, :meth:`unreachable`), which moves the
round on. What the dealer should read lands in :attr:`DealerSession.messages`.

Commands (``help`` lists them):

========================  ==================================================================
``open``                  open the next round (its id follows the controller's last one)
``wager SEAT KIND [$]``   enter a seat's wager (see :mod:`~table_agent.console.entry`)
``remove SEAT [KIND]``    take a seat's wagers (of KIND) back down
``again``                 the wagers of the last locked-out round, entered again
``lockout``               "no more bets": the wagers go to the controller
``count N``               the dealer's chip count of the progressive wagers collected
``cards SEAT C C ...``    a seat's cards; ``fold SEAT``: the seat folded
``dealer C C ...``        the dealer's cards; ``community C C``: the community cards
``settle [SEAT $ ...]``    the cards go to the controller, which settles every wager; at Texas
                          Hold 'Em Bonus, with what each seat's Ante, Flop, Turn and River
                          Wagers won (``settle 2 150 4 40.50``, dollars) for the payout limit
                          per hand (§ 647a.12(c)); a seat not given won nothing
``void REASON``           void the locked-out round (an irregularity): its wagers are returned
``irregularity KIND``     a seeded irregularity (misdeal, wrong_card_count, cards_exposed
                          [after], dealer_card_exposed, shoe_jam): the controller applies the
                          game's rule - the round void, or at Texas Hold 'Em Bonus the rest of
                          the round void (§ 647a.13), settled then with only the bonus wagers
``fix SEAT|dealer C C``    after a settlement, before the next open: the cards as they should
                          have been (:mod:`~table_agent.console.correction`)
``correct REASON``        ask the controller for that correction (a supervisor approves it)
``quit``                  leave the console (not while a round is locked out)
========================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from jackpot.cards import check_no_duplicates
from jackpot.errors import InvalidAmount, InvalidCards
from jackpot.hands.words import hand_words
from jackpot.irregularities import RULES, TITLES
from jackpot.kinds import Extra, IrregularityKind, wager_title
from jackpot.money import MAX_METER_CENTS, format_cents, parse_dollars_cents
from jackpot.results import (
    AcceptedWager,
    ChipCountResult,
    IrregularityResult,
    LockoutResult,
    SeatOutcome,
    SeatResult,
    SettleResult,
    VoidResult,
)
from table_agent.client import CorrectionAnswer
from table_agent.console.correction import CorrectionDraft, answer_lines
from table_agent.console.entry import (
    EntryError,
    limits,
    read_cards,
    read_kind,
    read_seat,
    read_wager,
)
from table_agent.deck import DeckCard
from table_agent.games import GameProcedure
from table_agent.reports import SettleReport
from table_agent.simulator import describe_award
from table_agent.wagers import PlacedWager, TableLayout

MAX_MESSAGES = 500
"""The messages kept for the screen (the oldest are dropped; the round record keeps rounds)."""
MAX_BASE_GAME_WIN_CENTS = MAX_METER_CENTS
"""The most a seat's base game may be reported to have won (the controller's bound too)."""


def settled_line(round_id: int, settlement: SettleResult) -> str:
    """The round's summary: what the dealer pays now, and apart what awaits a supervisor's
    validation (a jackpot is not paid until it is approved)."""
    waiting = sum(a.amount_cents for a in settlement.awards if a.pending_validation)
    now = settlement.paid_cents - waiting
    parts = [f"{format_cents(now)} to pay"] if now or not waiting else []
    if waiting:
        parts.append(f"{format_cents(waiting)} awaiting validation")
    return f"round {round_id} settled: {len(settlement.awards)} award(s), {', '.join(parts)}"


class Phase(StrEnum):
    """Where the console's round is."""

    IDLE = "idle"  # no round open
    WAGERS = "wagers"  # the round is open: wagers are entered
    LOCKED = "locked"  # no more bets: chip count and cards are entered
    HALTED = "halted"  # a report went unanswered: the outbox sends it at the next start


@dataclass(frozen=True, slots=True)
class Send:
    """What the dealer asked of the controller: ``phase`` is ``open`` (a new round id),
    ``lockout`` (``wagers``), ``chip_count`` (``chips``), ``settle`` (``report``), ``void``
    (``reason``), ``irregularity`` (``kind``, ``after_initial_cards``) or ``quit``."""

    phase: str
    round_id: int = 0
    wagers: tuple[PlacedWager, ...] = ()
    report: SettleReport | None = None
    reason: str = ""
    chips: int = 0
    kind: IrregularityKind | None = None
    after_initial_cards: bool = False


@dataclass
class RoundSheet:
    """One round as the dealer entered it and the controller answered it.

    ``wagers``: entered before the lockout; ``lockout``: the controller's answer (the accepted
    wagers are final). ``chip_count``: the dealer's count of the progressive wagers' chips
    as the controller recorded it (None: not given), ``chip_count_matched`` its verdict (a
    count that differs holds the round for a supervisor, § 639a.8(b)). ``hands`` by seat,
    ``folded`` seats, the ``dealer``'s and the ``community`` cards; then the ``settlement`` or
    the ``void`` with its ``void_reason``. ``rest_of_round_void``: the controller's reason
    when a seeded irregularity voided the rest of a Texas Hold 'Em Bonus round (§ 647a.13):
    the settlement carries it. ``held``: the chip count differed and the controller holds
    the round until the floor supervisor confirms or voids it. ``base_game_win_cents``: what
    each seat's base game won as the last settlement sent reported it (Texas Hold 'Em Bonus,
    § 647a.12(c)), integer cents by seat.
    """

    round_id: int
    wagers: list[PlacedWager] = field(default_factory=list)
    lockout: LockoutResult | None = None
    chip_count: int | None = None
    chip_count_matched: bool | None = None
    hands: dict[int, tuple[DeckCard, ...]] = field(default_factory=dict)
    folded: set[int] = field(default_factory=set)
    dealer: tuple[DeckCard, ...] = ()
    community: tuple[DeckCard, ...] = ()
    settlement: SettleResult | None = None
    void_reason: str = ""
    void: VoidResult | None = None
    rest_of_round_void: str = ""
    held: bool = False
    base_game_win_cents: dict[int, int] = field(default_factory=dict)

    @property
    def accepted(self) -> tuple[AcceptedWager, ...]:
        """The wagers the controller accepted at lockout (none before it)."""
        return self.lockout.accepted if self.lockout else ()

    @property
    def progressive_wagers(self) -> int:
        """How many accepted wagers feed a meter: the chips the dealer counts."""
        return sum(1 for wager in self.accepted if wager.contributions)

    @property
    def chip_count_matches(self) -> bool | None:
        """Whether the controller found the chip count equal to the accepted Progressive
        Payout Wagers (None: no count)."""
        return self.chip_count_matched


def _key(wager: PlacedWager | AcceptedWager) -> tuple[int, str, bool]:
    return (wager.seat, wager.kind.value, wager.on_dealer_hand)


def _list(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


Command = Callable[[list[str]], "Send | None"]


class DealerSession:
    """One table's console session: its layout (the registration), its game, the round in
    play (:attr:`sheet`), the meters last seen (cents, by meter id) and the messages."""

    def __init__(self, layout: TableLayout, game: GameProcedure) -> None:
        self.layout = layout
        self.game = game
        self.phase = Phase.IDLE
        self.sheet: RoundSheet | None = None
        self.last_wagers: tuple[PlacedWager, ...] = ()
        self.meters: dict[str, int] = {}
        self.messages: list[str] = []
        self.sending = ""
        """The report on its way to the controller ("" when none): no command meanwhile."""
        self._commands: dict[str, tuple[tuple[Phase, ...], Command]] = {
            "help": (tuple(Phase), self._help),
            "open": ((Phase.IDLE,), self._open),
            "wager": ((Phase.WAGERS,), self._wager),
            "remove": ((Phase.WAGERS,), self._remove),
            "again": ((Phase.WAGERS,), self._again),
            "lockout": ((Phase.WAGERS,), self._lockout),
            "count": ((Phase.LOCKED,), self._count),
            "cards": ((Phase.LOCKED,), self._cards),
            "fold": ((Phase.LOCKED,), self._fold),
            "dealer": ((Phase.LOCKED,), self._dealer),
            "community": ((Phase.LOCKED,), self._community),
            "settle": ((Phase.LOCKED,), self._settle),
            "void": ((Phase.LOCKED,), self._void),
            "irregularity": ((Phase.LOCKED,), self._irregularity),
            "quit": ((Phase.IDLE, Phase.WAGERS, Phase.HALTED), self._quit),
            "fix": ((Phase.IDLE,), self._fix),
            "correct": ((Phase.IDLE,), self._correct),
        }
        self.draft: CorrectionDraft | None = None
        """The correction of the round just settled being keyed (None: no window)."""

    # ---- what the screen shows ------------------------------------------------------------

    def say(self, line: str) -> None:
        """Add a message for the dealer."""
        self.messages.append(line)
        del self.messages[:-MAX_MESSAGES]

    @property
    def round_id(self) -> int:
        """The round in play (0: none)."""
        return self.sheet.round_id if self.sheet else 0

    def expected(self) -> str:
        """What the console expects the dealer to type next."""
        if self.sending:
            return f"sending the {self.sending} to the controller..."
        sheet = self.sheet
        if self.phase is Phase.HALTED:
            return "quit, and start the console again: the outbox re-sends what was not answered"
        if self.phase is Phase.IDLE or sheet is None:
            return "type open for the next round"
        if self.phase is Phase.WAGERS:
            if not sheet.wagers:
                return f"round {sheet.round_id}: enter wagers (wager SEAT KIND [AMOUNT]), or again"
            return f"round {sheet.round_id}: more wagers, or lockout (no more bets)"
        if sheet.held:
            return (
                f"round {sheet.round_id} is held: call the floor supervisor to confirm or void "
                "it, then settle"
            )
        missing = self.missing_cards()
        count = " (count N: the chip count)" if sheet.chip_count is None else ""
        if missing:
            return f"round {sheet.round_id}: cards of {_list(missing)}{count}; or void REASON"
        won = " [SEAT WON ...]" if self._takes_base_game_wins() else ""
        return f"round {sheet.round_id}: settle{won}{count}; or void REASON"

    # ---- commands -----------------------------------------------------------------------

    def handle(self, line: str) -> Send | None:
        """Carry out one typed command: a :class:`Send` for the desk, or None when it was
        local; :class:`EntryError` (nothing changed) when it is refused."""
        words = line.split()
        if not words:
            return None
        if self.sending:
            raise EntryError(f"wait: the {self.sending} is on its way to the controller")
        name = words[0].lower()
        entry = self._commands.get(name)
        if entry is None:
            raise EntryError(f"no command {words[0]!r}; type help for the commands")
        phases, command = entry
        if self.phase not in phases:
            raise EntryError(f"{name} is not possible now: {self.expected()}")
        return command(words[1:])

    def _help(self, _: list[str]) -> None:
        self.say(
            "commands: open | wager SEAT KIND [AMOUNT] [dealer] [envy] | remove SEAT [KIND] | "
            "again | lockout | count N | cards SEAT CARDS | fold SEAT | dealer CARDS | "
            "community CARDS | settle [SEAT WON ...] | void REASON | irregularity KIND [after] | "
            "quit; after a settlement: fix SEAT|dealer CARDS | correct REASON"
        )
        if self.game.base_game_wagers:
            self.say(
                f"settle SEAT WON ...: what each seat's {self.game.base_game_wagers} won, in "
                "dollars, for the payout limit per hand (e.g. settle 2 150 4 40.50)"
            )
        kinds = ", ".join(
            f"{offer.kind.value} {limits(offer)}"
            for kind in self.game.kinds
            if (offer := self.layout.offer(kind)) is not None
        )
        self.say(f"this table takes: {kinds or 'no side wagers'}")
        ruled = ", ".join(kind.value for kind in RULES.get(self.layout.game, {}))
        self.say(f"irregularities the controller rules on here: {ruled or 'none (use void)'}")
        return None

    def _open(self, _: list[str]) -> Send:
        return Send("open")

    def _wager(self, words: list[str]) -> None:
        sheet = self._sheet()
        wager = read_wager(words, self.game, self.layout)
        if any(_key(placed) == _key(wager) for placed in sheet.wagers):
            raise EntryError(
                f"seat {wager.seat} already has a {wager.title}: remove it first to change it"
            )
        sheet.wagers.append(wager)
        self.say(f"seat {wager.seat}: {wager.title} {format_cents(wager.amount_cents)}")

    def _remove(self, words: list[str]) -> None:
        sheet = self._sheet()
        if not 1 <= len(words) <= 2:
            raise EntryError("remove SEAT [KIND]")
        seat = read_seat(words[0], self.layout)
        kind = read_kind(words[1], self.game, self.layout).kind if len(words) == 2 else None
        taken = [w for w in sheet.wagers if w.seat == seat and kind in (None, w.kind)]
        if not taken:
            raise EntryError(f"seat {seat} has no such wager entered")
        sheet.wagers = [w for w in sheet.wagers if w not in taken]
        self.say(f"seat {seat}: {_list([w.title for w in taken])} taken down")

    def _again(self, _: list[str]) -> None:
        sheet = self._sheet()
        if not self.last_wagers:
            raise EntryError("no earlier round's wagers to enter again")
        if sheet.wagers:
            raise EntryError("wagers are already entered: again fills an empty round only")
        sheet.wagers = list(self.last_wagers)
        self.say(f"the last round's {len(sheet.wagers)} wager(s) entered again")

    def _lockout(self, _: list[str]) -> Send:
        sheet = self._sheet()
        return Send("lockout", sheet.round_id, wagers=tuple(sheet.wagers))

    def _count(self, words: list[str]) -> Send:
        sheet = self._sheet()
        if len(words) != 1 or not words[0].isdigit() or len(words[0]) > 4:
            raise EntryError("count N: the number of progressive wager chips collected")
        return Send("chip_count", sheet.round_id, chips=int(words[0]))

    def chip_counted(self, result: ChipCountResult) -> None:
        """The controller recorded the chip count: a count that differs from the accepted
        Progressive Payout Wagers holds the round until a supervisor confirms or voids it."""
        sheet = self._sheet()
        sheet.chip_count, sheet.chip_count_matched = result.chips, result.matched
        sheet.held = not result.matched
        if result.matched:
            self.say(f"chip count {result.chips}: matches the accepted progressive wagers")
        else:
            self.say(
                f"IRREGULARITY: chip count {result.chips}, but {result.accepted} progressive "
                f"wager(s) were accepted (§ 639a.8(b)); the round is held: call the floor "
                f"supervisor to confirm or void round {sheet.round_id}"
            )

    def _check_new_cards(self, whose: str, cards: tuple[DeckCard, ...]) -> None:
        """Refuse cards already entered elsewhere this round (one deck, § 639a.3)."""
        sheet = self._sheet()
        hands = [(f"seat {seat}", hand) for seat, hand in sheet.hands.items()]
        hands += [("the dealer", sheet.dealer), ("the community", sheet.community)]
        hands = [(name, hand) for name, hand in hands if name != whose] + [(whose, cards)]
        try:
            check_no_duplicates(hands)  # type: ignore[arg-type]  # the joker is a card too
        except InvalidCards as error:
            raise EntryError(str(error)) from None

    def _cards(self, words: list[str]) -> None:
        sheet = self._sheet()
        if not words:
            raise EntryError("cards SEAT CARD CARD ...")
        seat = read_seat(words[0], self.layout)
        whose = f"seat {seat}"
        cards = read_cards(words[1:], self.game, self.game.facts.hand_size, whose)
        self._check_new_cards(whose, cards)
        sheet.hands[seat] = cards
        sheet.folded.discard(seat)
        self.say(f"seat {seat}: {' '.join(map(str, cards))}")

    def _fold(self, words: list[str]) -> None:
        sheet = self._sheet()
        if not self.game.facts.folds:
            raise EntryError(f"no player folds at {self.game.facts.title}")
        if len(words) != 1:
            raise EntryError("fold SEAT")
        seat = read_seat(words[0], self.layout)
        sheet.folded.add(seat)
        sheet.hands.pop(seat, None)
        self.say(f"seat {seat} folded")

    def _dealer(self, words: list[str]) -> None:
        sheet = self._sheet()
        cards = read_cards(words, self.game, self.game.facts.dealer_hand_size, "the dealer")
        self._check_new_cards("the dealer", cards)
        sheet.dealer = cards
        self.say(f"dealer: {' '.join(map(str, cards))}")

    def _community(self, words: list[str]) -> None:
        sheet = self._sheet()
        if not self.game.facts.community_cards:
            raise EntryError(f"{self.game.facts.title} deals no community cards")
        if not self._needs_community():
            raise EntryError(
                "community cards are dealt only when a five-card wager was accepted "
                "(§ 649a.9(b)); this round has none"
            )
        count = self.game.facts.community_cards
        cards = read_cards(words, self.game, count, "the community")
        self._check_new_cards("the community", cards)
        sheet.community = cards
        self.say(f"community: {' '.join(map(str, cards))}")

    def _needs_community(self) -> bool:
        return any(
            self.game.facts.wager(w.kind).extra is Extra.COMMUNITY for w in self._sheet().accepted
        )

    def _needs_dealer(self) -> bool:
        sheet = self._sheet()
        for wager in sheet.accepted:
            facts = self.game.facts.wager(wager.kind)
            forfeited = wager.seat in sheet.folded and facts.forfeit_on_fold
            if (wager.on_dealer_hand or facts.extra is Extra.DEALER) and not forfeited:
                return True
        return False

    def missing_cards(self) -> list[str]:
        """Whose cards the settlement still needs ("seat 3", "the dealer", ...)."""
        sheet = self._sheet()
        missing = []
        for seat in sorted({wager.seat for wager in sheet.accepted}):
            if seat not in sheet.hands and seat not in sheet.folded:
                missing.append(f"seat {seat}")
        if self._needs_dealer() and not sheet.dealer:
            missing.append("the dealer")
        if self._needs_community() and not sheet.community:
            missing.append("the community")
        return missing

    def _takes_base_game_wins(self) -> bool:
        sheet = self._sheet()
        return bool(self.game.base_game_wagers) and not sheet.rest_of_round_void

    def _base_game_wins(self, words: list[str]) -> dict[int, int]:
        """``SEAT WON`` pairs after ``settle``: what each seat's base game won, in cents (a
        seat not given won 0). Only where the game's settlement carries them, at most one
        pair per seat holding an accepted wager, each amount 0 to
        :data:`MAX_BASE_GAME_WIN_CENTS`."""
        if not words:
            return {}
        sheet = self._sheet()
        wagers = self.game.base_game_wagers
        if not wagers:
            raise EntryError(
                f"settle takes no base-game winnings at {self.game.facts.title}: type settle alone"
            )
        if sheet.rest_of_round_void:
            raise EntryError(
                f"the rest of round {sheet.round_id} is void (§ 647a.13(d)): its {wagers} win "
                "nothing; type settle alone"
            )
        usage = (
            f"settle SEAT WON ...: each seat once with what its {wagers} won, in dollars "
            "(e.g. settle 2 150 4 40.50)"
        )
        if len(words) % 2 or len(words) > 2 * self.layout.seats:
            raise EntryError(usage)
        holding = {wager.seat for wager in sheet.accepted} - sheet.folded
        won: dict[int, int] = {}
        for seat_text, amount_text in zip(words[::2], words[1::2], strict=True):
            seat = read_seat(seat_text, self.layout)
            if seat in won:
                raise EntryError(f"seat {seat} is given twice; {usage}")
            if seat not in holding:
                raise EntryError(
                    f"seat {seat} holds no wager in round {sheet.round_id}: its winnings are "
                    "not reported"
                )
            try:
                cents = parse_dollars_cents(amount_text)
            except InvalidAmount as error:
                raise EntryError(f"seat {seat}'s winnings: {error}") from None
            if cents > MAX_BASE_GAME_WIN_CENTS:
                raise EntryError(
                    f"seat {seat}'s winnings: {format_cents(cents)} is more than "
                    f"{format_cents(MAX_BASE_GAME_WIN_CENTS)}"
                )
            won[seat] = cents
        return dict(sorted(won.items()))

    def _settle(self, words: list[str]) -> Send:
        sheet = self._sheet()
        missing = self.missing_cards()
        if missing:
            raise EntryError(
                f"settle needs the cards of {_list(missing)} "
                "(cards SEAT ..., fold SEAT, dealer ..., community ...)"
            )
        for wager in sheet.accepted:
            facts = self.game.facts.wager(wager.kind)
            if wager.seat in sheet.folded and not facts.forfeit_on_fold:
                raise EntryError(
                    f"seat {wager.seat}: a {facts.title} is settled even when the player folds; "
                    f"enter the seat's cards (cards {wager.seat} ...) instead of fold"
                )
        won = self._base_game_wins(words)
        sheet.base_game_win_cents = won
        report = SettleReport(
            hands=dict(sorted(sheet.hands.items())),
            folded=tuple(sorted(sheet.folded)),
            dealer=sheet.dealer,
            community=sheet.community,
            rest_of_round_void=sheet.rest_of_round_void,
            base_game_win_cents=won,
        )
        if won:
            self.say(
                f"round {sheet.round_id}: {self.game.base_game_wagers} won "
                + _list([f"seat {seat} {format_cents(cents)}" for seat, cents in won.items()])
            )
        return Send("settle", sheet.round_id, report=report)

    def _void(self, words: list[str]) -> Send:
        sheet = self._sheet()
        reason = " ".join(words).strip()
        if not reason:
            raise EntryError("void REASON: say why the round is void (e.g. misdeal)")
        return Send("void", sheet.round_id, reason=reason)

    def _irregularity(self, words: list[str]) -> Send:
        sheet = self._sheet()
        ruled = RULES.get(self.layout.game, {})
        usage = "irregularity KIND [after]: " + (
            ", ".join(kind.value for kind in ruled) or "none at this game (use void REASON)"
        )
        if not 1 <= len(words) <= 2 or (len(words) == 2 and words[1].lower() != "after"):
            raise EntryError(usage)
        try:
            kind = IrregularityKind(words[0].lower())
        except ValueError:
            raise EntryError(f"no irregularity {words[0]!r}; {usage}") from None
        if kind not in ruled:
            raise EntryError(
                f"the rules of {self.game.facts.title} give no effect for {TITLES[kind]}: "
                "void REASON instead"
            )
        if sheet.rest_of_round_void:
            raise EntryError("the rest of this round is already void: enter the cards, settle")
        return Send("irregularity", sheet.round_id, kind=kind, after_initial_cards=len(words) == 2)

    def _quit(self, _: list[str]) -> Send:
        return Send("quit")

    def _draft(self) -> CorrectionDraft:
        if self.draft is None:
            raise EntryError(
                "a correction from the console is of the round just settled, before the next "
                "open; later, the floor supervisor requests it (jackpotctl rounds correct)"
            )
        return self.draft

    def _fix(self, words: list[str]) -> None:
        self.say(self._draft().fix(words, self.layout, self.game))

    def _correct(self, words: list[str]) -> Send:
        draft = self._draft()
        reason = " ".join(words).strip()
        return Send("correct", draft.round_id, report=draft.report(reason), reason=reason)

    def correction_requested(self, answer: CorrectionAnswer) -> None:
        """The controller recorded the correction: nothing is paid until it is approved."""
        for line in answer_lines(answer):
            self.say(line)
        self.draft = None

    def _sheet(self) -> RoundSheet:
        if self.sheet is None:
            raise EntryError("no round is open: type open")
        return self.sheet

    # ---- the controller's answers -------------------------------------------------------

    def opened(self, round_id: int) -> None:
        """The round ``round_id`` is open for wagers."""
        self.sheet = RoundSheet(round_id)
        self.draft = None  # the dealer's window of the last round closes
        self.phase = Phase.WAGERS
        self.say(f"round {round_id} open: place your wagers")

    def locked_out(self, lockout: LockoutResult) -> None:
        """The controller accepted the round's wagers: they are final."""
        sheet = self._sheet()
        sheet.lockout = lockout
        self.last_wagers = tuple(sheet.wagers)
        self.meters.update(lockout.meter_cents)
        self.phase = Phase.LOCKED
        self.say(
            f"round {sheet.round_id}: NO MORE BETS - {len(lockout.accepted)} wager(s) accepted, "
            f"{sheet.progressive_wagers} progressive"
        )
        for wager in lockout.accepted:
            title = wager_title(wager.kind, on_dealer_hand=wager.on_dealer_hand, envy=wager.envy)
            self.say(f"  seat {wager.seat}: {title} {format_cents(wager.amount_cents)} accepted")

    def settled(self, settlement: SettleResult) -> RoundSheet:
        """The controller settled the round: every result, in settlement order. The round is
        over; the finished sheet is returned (for the round record)."""
        sheet = self._sheet()
        sheet.settlement = settlement
        self.meters.update(settlement.meter_cents)
        for result in settlement.results:
            self.say(self._result_line(result))
        self.say(settled_line(sheet.round_id, settlement))
        self.draft = CorrectionDraft(
            sheet.round_id, dict(sheet.hands), set(sheet.folded), sheet.dealer, sheet.community
        )
        return self._finish()

    def _result_line(self, result: SeatResult) -> str:
        if result.outcome is SeatOutcome.PAID:
            return describe_award(self.layout.table_id, self.round_id, result)
        title = (
            wager_title(result.kind, on_dealer_hand=result.on_dealer_hand) if result.kind else ""
        )
        if result.outcome is SeatOutcome.FORFEITED:
            return f"seat {result.seat} {title}: forfeited (folded)"
        if result.outcome is SeatOutcome.NO_WAGER:
            return f"seat {result.seat}: {hand_words(result.hand)}, no side wager"
        return f"seat {result.seat} {title}: {hand_words(result.hand)}, no award"

    def voided(self, void: VoidResult) -> RoundSheet:
        """The controller voided the round: its wagers are returned. The round is over; the
        finished sheet is returned (for the round record)."""
        sheet = self._sheet()
        sheet.void = void
        self.meters.update(void.meter_cents)
        self.say(
            f"round {sheet.round_id} VOID ({sheet.void_reason}): {len(void.reversed)} wager(s) "
            "returned to the players"
        )
        return self._finish()

    def irregularity_applied(self, result: IrregularityResult) -> RoundSheet | None:
        """The controller applied a seeded irregularity: the round void (it is over; the
        finished sheet is returned for the round record), or the rest of a Texas Hold 'Em
        Bonus round void (it stays locked: the cards, then settle with only the bonus wagers
        settling)."""
        sheet = self._sheet()
        if result.voided:
            self.voiding(result.reason)
            void = VoidResult(
                result.table_id, result.round_id, result.reversed, result.meters, result.replayed
            )
            return self.voided(void)
        sheet.rest_of_round_void = result.reason
        self.say(f"round {sheet.round_id}: rest of the round void: {result.reason}")
        self.say("enter the cards and settle: only the bonus wagers are settled")
        return None

    def voided_by_supervisor(self) -> None:
        """The floor supervisor voided the held round at the controller: its wagers were
        returned there, and the round is over here."""
        sheet = self._sheet()
        self.say(
            f"round {sheet.round_id} was voided by the floor supervisor: its wagers are "
            "returned to the players; type open for the next round"
        )
        self._finish()

    def _finish(self) -> RoundSheet:
        sheet = self._sheet()
        self.phase = Phase.IDLE
        return sheet

    def voiding(self, reason: str) -> None:
        """The void of the round is on its way, for ``reason``."""
        self._sheet().void_reason = reason

    def refused(self, send: Send, line: str, next_round_id: int = 0) -> None:
        """The controller refused ``send`` (final; nothing changed there); ``line`` says so in
        plain words (:mod:`~table_agent.console.refusals`). A refused lockout used up its
        round id: the wagers stay entered for the next one, ``next_round_id``. A refused
        settlement, void, chip count or irregularity leaves the round locked: correct and send
        again (a held round: once the floor supervisor confirmed it)."""
        self.say(line)
        if send.phase == "lockout" and self.sheet is not None:
            wagers = self.sheet.wagers
            self.sheet = RoundSheet(next_round_id, wagers=wagers)
            self.say(f"the wagers stay entered for round {next_round_id}: correct them, lockout")
        elif send.phase == "void" and self.sheet is not None:
            self.sheet.void_reason = ""

    def offline(self, line: str) -> None:
        """The lockout was refused while the table is PROGRESSIVE OFFLINE: nothing was sent,
        the round stays open."""
        self.say(line)

    def halt(self, line: str) -> None:
        """A report went unanswered for the whole retry window (it stays in the outbox), or
        the console failed: it stops taking rounds until it is started again (which re-sends
        what the outbox holds)."""
        self.phase = Phase.HALTED
        self.say(line)

"""The dealer console's terminal (prompt_toolkit, the ``console`` extra).

One full screen, redrawn from the session twice a second and at every change::

    table cs-1 - Caribbean Stud Poker - 7 seats                       ONLINE | PROGRESSIVE OFFLINE
    round 12: LOCKED (no more bets)                  | METERS
    seat 2  Progressive Payout Wager $1.00 accepted  | cs-main      $10,123.45
            AS KS QS JS TS                            |
    dealer  2C 3D 5H 8S JC                            |
    --------------------------------------------------------------------------------------------
    messages: what was entered, what the controller answered, every result and award
    round 12: cards of seat 4; or void REASON           <- what the console expects next
    > _

Everything shown is read from the :class:`~table_agent.console.session.DealerSession` and the
:class:`~table_agent.console.desk.Desk`; typing a line and Enter gives it to
:meth:`Desk.submit`. Ctrl-C and Ctrl-D are ``quit`` (refused while a round is locked out).
"""

from __future__ import annotations

import asyncio

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.data_structures import Point
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import HSplit, Layout, VSplit, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.styles import Style
from prompt_toolkit.widgets import TextArea

from jackpot.kinds import wager_title
from jackpot.money import format_cents
from table_agent.console.desk import Desk
from table_agent.console.session import Phase
from table_agent.games import GameProcedure

METERS_WIDTH = 36
REFRESH_S = 0.5

STYLE = Style.from_dict(
    {
        "header": "reverse",
        "offline": "bg:ansired ansiwhite bold",
        "online": "ansigreen bold",
        "phase": "bold",
        "expected": "ansicyan bold",
        "refused": "ansired",
        "award": "ansiyellow bold",
        "stale": "ansired",
    }
)


def _header(desk: Desk, game: GameProcedure) -> StyleAndTextTuples:
    layout = desk.session.layout
    text = f" table {layout.table_id} - {game.facts.title} - {layout.seats} seats "
    link = (
        ("class:offline", " PROGRESSIVE OFFLINE ") if desk.offline else ("class:online", " ONLINE ")
    )
    return [("class:header", text), ("", "  "), link]


def _round(desk: Desk) -> StyleAndTextTuples:
    session = desk.session
    sheet = session.sheet
    if sheet is None or session.phase is Phase.IDLE:
        done = f" (round {sheet.round_id} finished)" if sheet else ""
        return [("class:phase", f"no round open{done}\n")]
    title = {
        Phase.WAGERS: "OPEN (place your wagers)",
        Phase.LOCKED: "LOCKED (no more bets)",
        Phase.HALTED: "HALTED (restart the console)",
    }.get(session.phase, session.phase.value)
    lines: StyleAndTextTuples = [("class:phase", f"round {sheet.round_id}: {title}\n")]
    if sheet.lockout is None:
        wagers = [(w.seat, w.title, w.amount_cents, "entered") for w in sheet.wagers]
    else:
        wagers = [
            (
                w.seat,
                wager_title(w.kind, on_dealer_hand=w.on_dealer_hand, envy=w.envy),
                w.amount_cents,
                "accepted",
            )
            for w in sheet.accepted
        ]
    seats = sorted({seat for seat, *_ in wagers} | set(sheet.hands) | sheet.folded)
    for seat in seats:
        for wager_seat, title, cents, state in wagers:
            if wager_seat == seat:
                lines.append(("", f"seat {seat}  {title} {format_cents(cents)} {state}\n"))
        if seat in sheet.folded:
            lines.append(("", f"seat {seat}  folded\n"))
        elif seat in sheet.hands:
            lines.append(("", f"seat {seat}  cards {' '.join(map(str, sheet.hands[seat]))}\n"))
    if sheet.dealer:
        lines.append(("", f"dealer  {' '.join(map(str, sheet.dealer))}\n"))
    if sheet.community:
        lines.append(("", f"community  {' '.join(map(str, sheet.community))}\n"))
    if sheet.lockout is not None:
        if sheet.chip_count is None:
            lines.append(("", f"chip count: not given ({sheet.progressive_wagers} accepted)\n"))
        else:
            style = "" if sheet.chip_count_matches else "class:refused"
            verdict = "matches" if sheet.chip_count_matches else "DOES NOT MATCH"
            lines.append(
                (
                    style,
                    f"chip count: {sheet.chip_count}, {verdict} the "
                    f"{sheet.progressive_wagers} accepted\n",
                )
            )
    return lines


def _meters(desk: Desk) -> StyleAndTextTuples:
    lines: StyleAndTextTuples = [("class:phase", " METERS\n")]
    for meter_id, cents in sorted(desk.session.meters.items()):
        amount = format_cents(cents)
        lines.append(("", f" {meter_id:<{METERS_WIDTH - len(amount) - 3}} {amount}\n"))
    if not desk.meters_live:
        lines.append(("class:stale", " (not live: reconnecting)\n"))
    return lines


def _message_style(line: str) -> str:
    if line.startswith(("refused", "REFUSED", "NOT ANSWERED", "IRREGULARITY")):
        return "class:refused"
    if " wins " in line:
        return "class:award"
    return ""


def _messages(desk: Desk) -> StyleAndTextTuples:
    return [(_message_style(line), line + "\n") for line in desk.session.messages]


def build(desk: Desk, game: GameProcedure) -> Application[None]:
    """The console's application, drawing ``desk`` (run it with ``run_async``)."""
    session = desk.session

    def accept(buffer: Buffer) -> bool:
        line = buffer.text
        app.create_background_task(_submit(line))
        return False  # the input line is emptied

    async def _submit(line: str) -> None:
        if not await desk.submit(line):
            app.exit()
        app.invalidate()

    entry = TextArea(
        height=1, prompt="> ", multiline=False, accept_handler=accept, focus_on_click=True
    )
    bindings = KeyBindings()

    @bindings.add("c-c")
    @bindings.add("c-d")
    def _quit(event: KeyPressEvent) -> None:
        event.app.create_background_task(_submit("quit"))

    messages = FormattedTextControl(
        lambda: _messages(desk),
        get_cursor_position=lambda: Point(0, max(0, len(session.messages) - 1)),
    )
    root = HSplit(
        [
            Window(FormattedTextControl(lambda: _header(desk, game)), height=1),
            VSplit(
                [
                    Window(FormattedTextControl(lambda: _round(desk)), wrap_lines=True),
                    Window(width=1, char="|"),
                    Window(FormattedTextControl(lambda: _meters(desk)), width=METERS_WIDTH),
                ],
                height=12,
            ),
            Window(height=1, char="-"),
            Window(messages, wrap_lines=True),
            Window(
                FormattedTextControl(lambda: [("class:expected", session.expected())]),
                height=1,
            ),
            entry,
        ]
    )
    app: Application[None] = Application(
        layout=Layout(root, focused_element=entry),
        key_bindings=bindings,
        style=STYLE,
        full_screen=True,
        refresh_interval=REFRESH_S,
    )
    desk.refresh = app.invalidate
    return app


async def run(desk: Desk, game: GameProcedure) -> None:
    """Show the console until the dealer quits; meanwhile keep the link (PROGRESSIVE
    OFFLINE) and the meters live."""
    app = build(desk, game)
    tasks = [
        asyncio.create_task(desk.agent.keep_link()),
        asyncio.create_task(desk.watch_meters()),
    ]
    try:
        await app.run_async()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

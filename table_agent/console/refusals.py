"""What the dealer reads when a command is refused: the one place that words every refusal.

:func:`refusal_words` turns what stopped a command the controller was asked to carry out -
the controller's refusal (:class:`~table_agent.client.ControllerRefused`, by its status), no
answer for the whole retry window (:class:`~table_agent.client.ControllerUnreachable`), the
table PROGRESSIVE OFFLINE (:class:`~table_agent.link.ProgressiveOffline`), a round out of step
with the agent (:class:`~table_agent.table.RoundStateError`), or anything else - into one
line in plain words saying what happened and what to do next. The desk
(:mod:`table_agent.console.desk`) catches every exception of a command and shows this line:
none reaches the screen's event loop.
"""

from __future__ import annotations

import grpc

from table_agent.client import ControllerRefused, ControllerUnreachable
from table_agent.console.session import Send
from table_agent.link import ProgressiveOffline
from table_agent.table import RoundStateError

WHAT = {
    "open": "opening of a round",
    "lockout": "lockout",
    "chip_count": "chip count",
    "settle": "settlement",
    "void": "void",
    "irregularity": "irregularity",
    "correct": "correction",
}
"""Each report as the dealer names it."""

AGAIN = {
    "chip_count": "count the chips again and type count N",
    "settle": "correct the cards and type settle again",
    "void": "type void REASON again",
    "irregularity": "check which irregularity it was and type irregularity KIND again, or void "
    "REASON",
    "correct": "fix the cards and type correct REASON again, or call the floor supervisor",
}
"""What the dealer does after a refusal of the content of each report."""

CONTENT = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.ALREADY_EXISTS,
    }
)
"""Refusals of a report's content: the dealer corrects it and sends it again."""

RESTART = (
    "quit and start the console again; nothing is lost: the outbox re-sends what was not answered"
)


def is_held(refusal: ControllerRefused) -> bool:
    """Whether the controller refused because it holds the round for the floor supervisor
    (a chip count that differed, § 639a.8(b))."""
    return refusal.code is grpc.StatusCode.FAILED_PRECONDITION and " is held" in refusal.message


def was_voided(refusal: ControllerRefused) -> bool:
    """Whether the controller refused because the round is void there (the floor
    supervisor voided the held round)."""
    return refusal.code is grpc.StatusCode.FAILED_PRECONDITION and " was voided" in (
        refusal.message
    )


def refusal_words(send: Send, error: BaseException) -> str:
    """The line the dealer reads when ``send`` failed with ``error``: what happened, and what
    to do next."""
    what = f"the {WHAT.get(send.phase, send.phase)} of round {send.round_id}"
    if isinstance(error, ProgressiveOffline):
        return f"{error}; take the side wagers down, or lock out once the table is ONLINE again"
    if isinstance(error, ControllerUnreachable):
        return (
            f"NOT ANSWERED: the controller did not answer {what} "
            f"({error}); the report stays in the outbox: {RESTART}"
        )
    if isinstance(error, RoundStateError):
        return f"the console lost track of round {send.round_id} ({error}): {RESTART}"
    if not isinstance(error, ControllerRefused):
        return f"the console failed on {what} ({error or 'an unexpected error'}): {RESTART}"
    reason = error.message.rstrip(".") or error.code.name
    if is_held(error):
        return (
            f"REFUSED: round {send.round_id} is held because the chip count differed from the "
            f"accepted progressive wagers (§ 639a.8(b)): call the floor supervisor to confirm "
            f"or void round {send.round_id}, then type settle again"
        )
    code = error.code
    if send.phase == "lockout" and code in CONTENT:
        return f"REFUSED by the controller: {reason}"  # the session says what comes next
    if code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
        return (
            f"REFUSED: the controller does not accept this table's certificate for {what} "
            f"({reason}): call the table games technician"
        )
    if code is grpc.StatusCode.NOT_FOUND:
        return (
            f"REFUSED by the controller: {reason}; the table or round is not registered "
            "there: call the table games technician"
        )
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE):
        return f"REFUSED by the controller: {reason}; {AGAIN.get(send.phase, 'correct it')}"
    if code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ALREADY_EXISTS):
        return (
            f"REFUSED by the controller: {reason}; {AGAIN.get(send.phase, 'correct it')}, "
            "or call the floor supervisor"
        )
    return (
        f"REFUSED by the controller ({code.name}): {reason}; call the floor supervisor or "
        "the table games technician"
    )

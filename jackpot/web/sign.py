"""The meter sign: its page and the events that feed it, one shape for every server.

The controller (``/sign/<link_group_id>``) and the table agent (``/sign`` for its own link
group) serve the same page, :data:`PAGE_FILE`, which opens an event stream at ``events``
beside its own path. Every event is a :func:`snapshot`, sent at every change and at least
every :data:`HEARTBEAT_S` seconds, so that the page can tell a quiet meter from a dead link.

The page shows **PROGRESSIVE OFFLINE** when no event arrived within
:data:`OFFLINE_AFTER_MS`, or when an event says the values are stale (``stale``: the
server could not read them for longer than :data:`STALE_AFTER_MS`, e.g. Redis unreachable
or the agent's stream to the controller broken). Amounts travel as integer cents; the page
formats them to dollars with string arithmetic (no division of cents in floating point).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from jackpot.hands.words import hand_words
from jackpot.times import format_time
from jackpot.web.server import event

PAGE_FILE = "sign.html"
"""The sign's page in this package: HTML, CSS and script in one file (no CDN, no fonts from
elsewhere: the casino network is closed)."""
HEARTBEAT_S = 1.0
"""The longest gap between two events of a stream."""
STALE_AFTER_MS = 3000
"""Values not read again for this long are stale (the page shows OFFLINE)."""
OFFLINE_AFTER_MS = 3000
"""The page shows OFFLINE when no event arrived for this long (the page reads it from its
``data-offline-after-ms``)."""
MAX_WINNERS = 5
"""The last winners a sign shows."""
CELEBRATE_MS = 12_000
"""How long the page celebrates a new hit (the page reads it from its
``data-celebrate-ms``)."""
CELEBRATE_WITHIN_MS = 120_000
"""A new winner is celebrated only if it hit this recently by the server's clock (a sign
back after a long outage does not celebrate old hits; one just switched on celebrates none
of the winners its first event lists)."""


@dataclass(frozen=True, slots=True)
class Winner:
    """One recent hit for the sign: who won how much when (``hit_at_ms`` since the Unix
    epoch; ``amount_cents`` integer cents)."""

    table_id: str
    seat: int
    hand: str
    amount_cents: int
    hit_at_ms: int
    jackpot_id: str = ""
    status: str = ""  # "pending": awaiting a supervisor's verification (the sign says so)


def page() -> bytes:
    """The sign's page (read once per call from the installed package)."""
    html = resources.files("jackpot.web").joinpath(PAGE_FILE).read_text(encoding="utf-8")
    for name, value in (
        ("OFFLINE_AFTER_MS", OFFLINE_AFTER_MS),
        ("CELEBRATE_MS", CELEBRATE_MS),
        ("CELEBRATE_WITHIN_MS", CELEBRATE_WITHIN_MS),
    ):
        html = html.replace("{{" + name + "}}", str(value))
    return html.encode("utf-8")


def snapshot(
    title: str,
    meters: Iterable[tuple[str, int]],
    winners: Iterable[Winner],
    *,
    age_ms: int,
    now_ms: int,
    display: Mapping[str, Any] | None = None,
) -> bytes:
    """One ``meters`` event: ``title`` (the link group), each meter as ``(meter_id, cents)``,
    the last :data:`MAX_WINNERS` winners (newest first), ``age_ms`` since the values were
    last read (``stale`` past :data:`STALE_AFTER_MS`), the server's clock ``now_ms``, and the
    names players read instead of ids (``display``: ``title``, ``games``, ``meters`` by id
    with their ``title`` and ``top_award``, ``fixed_awards``, ``progressive``; absent, the
    page shows the ids). A winner ``pending`` is shown "awaiting verification"; a winner
    that appears after the page's first event, hit within :data:`CELEBRATE_WITHIN_MS`, is
    celebrated for :data:`CELEBRATE_MS` (naming its table and seat). Each winner carries its
    machine ``hand`` and ``hit_at_ms`` and what the page shows of them: ``hand_words`` (the
    words the CLI, console and slip use) and ``hit_at`` (the project's one time convention,
    UTC and labelled: ``2025-03-01 18:30:05 UTC``)."""
    data: dict[str, Any] = {
        "title": title,
        "meters": [{"meter_id": meter_id, "cents": cents} for meter_id, cents in meters],
        "winners": [
            {
                "table_id": w.table_id,
                "seat": w.seat,
                "hand": w.hand,
                "hand_words": hand_words(w.hand),
                "amount_cents": w.amount_cents,
                "hit_at_ms": w.hit_at_ms,
                "hit_at": format_time(w.hit_at_ms),
                "jackpot_id": w.jackpot_id,
                "status": w.status,
            }
            for w in list(winners)[:MAX_WINNERS]
        ],
        "age_ms": age_ms,
        "stale": age_ms > STALE_AFTER_MS,
        "now_ms": now_ms,
    }
    if display is not None:
        data["display"] = display
    return event("meters", data)


def retry(ms: int = 1000) -> bytes:
    """The first line of a stream: how soon the browser reconnects after losing it."""
    return f"retry: {ms}\n\n".encode()

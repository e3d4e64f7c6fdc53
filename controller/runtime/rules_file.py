"""Reading a Rules Submission file and applying it to the store.

``jackpotctl rules check FILE`` validates a file; ``jackpot-controller serve --rules FILE``
applies it at start (link groups, meters and tables are created idempotently: a definition
that already exists unchanged is kept, a changed one is refused).
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Collection
from pathlib import Path

from controller.domain.config import MUST_HIT_BY
from controller.domain.submission import RulesSubmission, parse_submission
from controller.store.redis_store import RedisStore
from jackpot.errors import InvalidConfiguration, JackpotError
from jackpot.money import format_cents, format_percent

log = logging.getLogger("controller.rules")


def load_submission(path: Path) -> RulesSubmission:
    """Read and validate a submission file; every error names the file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InvalidConfiguration(f"{path}: cannot read: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise InvalidConfiguration(f"{path}: not valid TOML: {error}") from None
    try:
        return parse_submission(data)
    except JackpotError as error:
        raise InvalidConfiguration(f"{path}: {error}") from None


def describe(submission: RulesSubmission) -> list[str]:
    """The submission in lines for people."""
    lines = [f"operator: {submission.operator or '-'}"]
    day = submission.gaming_day
    lines.append(
        f"gaming day: from {day.start_hour:02d}:00 in {day.zone}"
        if day
        else "gaming day: not declared ([gaming_day] zone and start_hour)"
    )
    for meter in submission.meters:
        lines.append(
            f"meter {meter.meter_id} ({meter.link_group_id}, {meter.game}): reset "
            f"{format_cents(meter.reset_cents)}, rate {format_percent(meter.rate_ppm)}%, "
            f"reserve {format_percent(meter.reserve_rate_ppm)}%"
            + (
                f", must hit by {format_cents(meter.must_hit_by_cents)}"
                if meter.kind == MUST_HIT_BY
                else ""
            )
        )
    for game, offers in submission.games.items():
        for offer in offers.values():
            amount = (
                format_cents(offer.min_cents)
                if offer.fixed
                else f"{format_cents(offer.min_cents)} to {format_cents(offer.max_cents)}"
            )
            meters = f", meters {', '.join(offer.meter_ids)}" if offer.meter_ids else ""
            envy = (
                f", {len(offer.paytable.envy_lines)} envy lines"
                if offer.paytable.envy_lines
                else ""
            )
            lines.append(
                f"{game} {offer.wager}: paytable {offer.paytable.name} "
                f"({offer.paytable.citation}), {amount}{meters}{envy}"
            )
    for game, limit in submission.payout_limits.items():
        lines.append(f"{game} payout limit per hand: {format_cents(limit)}")
    for game, threshold in submission.validation_thresholds.items():
        lines.append(f"{game}: fixed awards above {format_cents(threshold)} await validation")
    for table in submission.tables:
        lines.append(
            f"table {table.table_id}: {table.game}, {table.seats} seats, "
            f"link group {table.link_group_id}"
        )
    return lines


RULES_ACTOR = "jackpot-controller serve --rules"
"""Who the journal says made what a Rules Submission applied at start created."""


async def apply(store: RedisStore, submission: RulesSubmission, skip: Collection[str] = ()) -> None:
    """Create the submission's link groups, meters and tables (idempotent), except in the
    link groups of ``skip`` (lost or stopped: never created again, see
    :mod:`controller.store.state_guard`)."""
    for group in submission.link_groups:
        if group.link_group_id not in skip:
            await store.catalog.create_link_group(group, actor=RULES_ACTOR)
    for meter in submission.meters:
        if meter.link_group_id not in skip:
            await store.catalog.create_meter(meter, actor=RULES_ACTOR)
    for table in submission.table_configs():
        if table.link_group_id not in skip:
            await store.tables.register_table(table, actor=RULES_ACTOR)
            log.info("table %s registered from the Rules Submission", table.table_id)

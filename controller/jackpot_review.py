"""A supervisor's validation of a jackpot: the one path for gRPC and the floor view.

``ApproveJackpot``/``RejectJackpot`` (``jackpotctl jackpots approve|reject``) and the floor
view's approve and reject buttons both come here, so the rules are the same whichever a
supervisor uses: the reviewer is the caller's certificate (identity and SHA-256, journaled),
never a name typed into the request; a note is plain text of at most
:data:`~controller.domain.bounds.NOTE_MAX_CHARS` characters; a rejection states its reason;
the store's atomic step refuses a jackpot that is not pending, and a reviewer who may not
review it.
"""

from __future__ import annotations

import logging

from controller.domain import bounds
from controller.domain.bounds import check_jackpot_id, check_text
from controller.domain.identity import Identity
from controller.domain.records import Jackpot
from controller.metrics import Metrics
from controller.store.redis_store import RedisStore
from jackpot.errors import InvalidArgument

log = logging.getLogger("controller.admin")


async def review_jackpot(
    store: RedisStore,
    metrics: Metrics,
    reviewer: Identity,
    jackpot_id: str,
    note: str,
    *,
    approve: bool,
) -> Jackpot:
    """Approve or reject ``jackpot_id`` as ``reviewer`` (§ 639a.11(c)(5)(iii)); the record
    as it is now. :class:`InvalidArgument` for a malformed id or note, or a rejection
    without its reason; the store's refusals otherwise. Nothing changes on a refusal."""
    jackpot_id = check_jackpot_id(jackpot_id)
    note = check_text(note, "note", bounds.NOTE_MAX_CHARS)
    if not approve and not note:
        raise InvalidArgument("a rejection needs its reason: give the note")
    record = await store.review_jackpot(
        jackpot_id,
        approve=approve,
        reviewer=reviewer.uri,
        reviewer_cert=reviewer.fingerprint,
        note=note,
    )
    log.info("jackpot %s %s by %s", record.jackpot_id, record.status, reviewer)
    if record.meter_id:
        metrics.set_meter_states([await store.get_meter(record.meter_id)])
    return record

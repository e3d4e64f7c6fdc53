"""jackpotctl --json spells every enum value by its one lowercase name, as records, exports
and the floor view do (the .proto lists them), at any depth."""

from __future__ import annotations

from controller.ctl.remote import message_data
from jackpot.v1 import jackpot_pb2 as pb


def test_enum_values_are_lowercase_names_at_any_depth() -> None:
    table = pb.Table(
        table_id="t1",
        wagers=[
            pb.TableWager(kind=pb.WAGER_KIND_FIVE_CARD_BONUS),
            pb.TableWager(kind=pb.WAGER_KIND_PROGRESSIVE),
        ],
    )
    data = message_data(table)
    assert [w["kind"] for w in data["wagers"]] == ["five_card_bonus", "progressive"]
    meter = pb.Meter(
        kind=pb.METER_KIND_MUST_HIT_BY,
        staged_change=pb.StagedMeterChange(at=pb.METER_CHANGE_AT_NEXT_RESET),
    )
    data = message_data(meter)
    assert (data["kind"], data["staged_change"]["at"]) == ("must_hit_by", "next_reset")
    result = pb.SettleResponse(
        results=[pb.SeatResult(outcome=pb.SEAT_OUTCOME_NO_AWARD, award_kind=pb.AWARD_KIND_TO_ONE)]
    )
    (seat,) = message_data(result)["results"]
    assert (seat["outcome"], seat["award_kind"]) == ("no_award", "to_one")


def test_the_lowercase_name_is_what_records_write() -> None:
    """The domain's names (jackpot.kinds, records) are the same strings."""
    from jackpot.kinds import AwardKind, IrregularityKind, WagerKind

    for enum, values in (
        (pb.WagerKind, WagerKind),
        (pb.AwardKind, AwardKind),
        (pb.IrregularityKind, IrregularityKind),
    ):
        for member in values:
            prefix = {pb.WagerKind: "WAGER_KIND_", pb.AwardKind: "AWARD_KIND_"}.get(
                enum, "IRREGULARITY_KIND_"
            )
            assert enum.Value(prefix + member.value.upper())

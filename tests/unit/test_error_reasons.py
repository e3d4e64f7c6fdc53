"""The table of refusals (controller.api.status): every error class has its row, every
reason is one stable SCREAMING_SNAKE name used once, and the details follow the row."""

from __future__ import annotations

import inspect
import re

import grpc
import pytest
from google.rpc import error_details_pb2

from controller.api import status
from jackpot import errors

CLASSES = [
    value
    for value in vars(errors).values()
    if inspect.isclass(value) and issubclass(value, errors.JackpotError)
]


def test_every_error_class_has_a_row_of_its_own() -> None:
    whole = {row.error for row in status.REFUSALS if not row.kind}
    assert set(CLASSES) - whole == set()


def test_reasons_are_unique_and_screaming_snake() -> None:
    reasons = [row.reason for row in status.REFUSALS]
    assert len(reasons) == len(set(reasons))
    for reason in reasons:
        assert re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*", reason), reason


def test_rows_come_most_specific_first() -> None:
    """No row is shadowed by an earlier one of a superclass."""
    for index, row in enumerate(status.REFUSALS):
        for earlier in status.REFUSALS[:index]:
            shadows = issubclass(row.error, earlier.error) and earlier.kind in ("", row.kind)
            assert not shadows, (earlier.reason, row.reason)


def test_access_kinds_of_the_code_have_their_reason() -> None:
    """The access refusal kinds raised in the controller (the metric labels) each have a
    reason of their own."""
    kinds = {row.kind for row in status.REFUSALS if row.kind}
    assert {"no_certificate", "revoked", "no_identity", "role", "other_table"} <= kinds
    denied = errors.PermissionDenied("role", "no")
    assert status.refusal_for(denied).reason == "ROLE_NOT_ALLOWED"
    assert status.refusal_for(errors.PermissionDenied("new_kind", "no")).reason == (
        "PERMISSION_DENIED"
    )


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.InvalidCards("x"), grpc.StatusCode.INVALID_ARGUMENT),
        (errors.RoundStateError("x"), grpc.StatusCode.FAILED_PRECONDITION),
        (errors.CorruptRecord("meter", "m", "k", "bad"), grpc.StatusCode.DATA_LOSS),
        (errors.NotConfirmed("x", None), grpc.StatusCode.UNAVAILABLE),
        (errors.PositionUnverified("x"), grpc.StatusCode.UNAVAILABLE),
        (errors.Unauthenticated("revoked", "x"), grpc.StatusCode.UNAUTHENTICATED),
        (errors.RequestLate("x"), grpc.StatusCode.RESOURCE_EXHAUSTED),
        (errors.JackpotError("x"), grpc.StatusCode.INTERNAL),
    ],
)
def test_the_codes_are_those_of_before(error: errors.JackpotError, code: grpc.StatusCode) -> None:
    assert status.status_for(error) is code


def _details(rich: object) -> list[str]:
    return [any_.type_url.rsplit(".", 1)[-1] for any_ in rich.details]  # type: ignore[attr-defined]


def test_retry_info_only_where_a_retry_helps() -> None:
    limited = status.rich_status(errors.RateLimited("slow down", retry_after_s=0.25))
    assert _details(limited) == ["ErrorInfo", "RetryInfo"]
    retry = error_details_pb2.RetryInfo()
    limited.details[1].Unpack(retry)
    assert retry.retry_delay.ToNanoseconds() == 250_000_000  # the limiter's own delay
    assert _details(status.rich_status(errors.StoreUnavailable("x"))) == ["ErrorInfo", "RetryInfo"]
    assert _details(status.rich_status(errors.NotFound("x"))) == ["ErrorInfo"]
    assert _details(status.rich_status(errors.JackpotError("x"))) == ["ErrorInfo"]


def test_a_field_gives_a_bad_request() -> None:
    rich = status.rich_status(
        errors.InvalidAmount("amount_cents must be ...", field="amount_cents")
    )
    assert rich.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert rich.message == "amount_cents must be ..."
    assert _details(rich) == ["ErrorInfo", "BadRequest"]
    bad = error_details_pb2.BadRequest()
    rich.details[1].Unpack(bad)
    assert bad.field_violations[0].field == "amount_cents"
    assert bad.field_violations[0].reason == "INVALID_AMOUNT"


def test_request_field_names_only_field_paths() -> None:
    from controller.domain.bounds import request_field

    assert request_field("table_id") == "table_id"
    assert request_field("wagers[2]") == "wagers[2]"
    assert request_field("table.seats") == "table.seats"
    assert request_field("the cards of seat 3") == ""
    assert request_field("link group id") == ""

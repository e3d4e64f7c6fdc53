"""``serve --payout-compliance``: us-default by default (``none`` asked for), a preset and its
changes from the command line, the environment or the config file; a value out of range stops
the start."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.domain.payout_compliance import PayoutCompliance
from controller.runtime import settings
from controller.runtime.cli import UsageError, _config, _parser


def _policy(
    argv: list[str], environ: dict[str, str], config: Path | None = None
) -> PayoutCompliance:
    parser, serve = _parser()
    settings.apply(serve, config, environ)
    args = parser.parse_args(["serve", "--insecure", *argv])
    return _config(args, environ).payout_compliance


def test_us_default_unless_told_otherwise(tmp_path: Path) -> None:
    default = _policy([], {})
    assert (default.name, default.tax_form_from_cents, default.witness_from_cents) == (
        "us-default",
        60_000,
        120_000,
    )
    assert (default.tax_form_wager_multiple, default.tax_form_overridable) == (300, True)
    assert not _policy(["--payout-compliance", "none"], {}).active
    assert not _policy([], {"JACKPOT_PAYOUT_COMPLIANCE": "none"}).active
    oklahoma = _policy(["--payout-compliance", "oklahoma"], {})
    assert (oklahoma.name, oklahoma.tax_form_overridable) == ("oklahoma", False)
    assert _policy([], {"JACKPOT_PAYOUT_COMPLIANCE": "us-default"}).name == "us-default"
    config = tmp_path / "controller.toml"
    config.write_text('payout-compliance = "us-default"\nwitness-from = "5000"\n')
    raised = _policy([], {}, config)
    assert (raised.name, raised.witness_from_cents) == ("us-default+custom", 500_000)
    changed = _policy(
        [
            "--payout-compliance",
            "us-default",
            "--tax-form-from",
            "1000",
            "--tax-form-wager-multiple",
            "500",
        ],
        {},
    )
    assert (changed.tax_form_from_cents, changed.tax_form_wager_multiple) == (100_000, 500)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--witness-from", "5000.01"], "witness threshold must be 0.01 to \\$5,000.00"),
        (["--witness-from", "12.345"], "--witness-from"),
        (["--tax-form-wager-multiple", "0"], "multiple must be 1 to"),
    ],
)
def test_a_bad_value_stops_the_start(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _policy(["--payout-compliance", "us-default", *argv], {})

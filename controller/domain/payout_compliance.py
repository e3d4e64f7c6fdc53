"""Payout compliance: what the hand-pay of a jackpot needs before it is recorded as paid.

Two rules, each configurable per jurisdiction (docs/payout-compliance.md), all in integer
cents:

* **A tax form** (in the US a W-2G): required when the jackpot's amount is at least
  ``tax_form_from_cents`` AND at least ``tax_form_wager_multiple`` times its wager
  (``amount_cents >= multiple * wager_cents``; the amount compared is the jackpot's amount as
  the slip states it, wager included). The payment must then carry the reference the
  casino's own tax system issued for the form (:func:`check_tax_form_ref`: an opaque,
  bounded reference, never the patron's personal data), or, where the jurisdiction lets the
  prompt be overridden (``tax_form_overridable``), a stated reason for not filing one.
* **A witness** (a second person's verification): required when the amount is at least
  ``witness_from_cents``. Another identity than the payer, proven by its own certificate
  and of a role in :data:`WITNESS_ROLES`, must record that it witnessed the payment
  (``jackpotctl jackpots witness``) before the payment is recorded.

A rule that is off (``None``) requires nothing. The presets (:data:`PRESETS`) hold only the
facts the project's issue 23 gives: a table-game win of at least $600 and at least 300 times
the wager needs a W-2G; Oklahoma (325:85-21-6) makes that prompt non-overridable; payouts
from $1,200 need a second person's verification, a threshold some jurisdictions allow up
to $5,000 with an approved computerised slip (hence :data:`MAX_WITNESS_FROM_CENTS`).

Every replica of a controller must be given the same policy (as the same Rules Submission):
the policy is read by the controller that records the payment, and the payment's journal
entry states what it required, so the audit checks each payment against what it was held to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from controller.domain.identity import Role
from jackpot.errors import InvalidArgument, InvalidConfiguration
from jackpot.money import MAX_METER_CENTS, format_cents

NONE = "none"
US_DEFAULT = "us-default"
OKLAHOMA = "oklahoma"
DEFAULT = US_DEFAULT
"""The preset of a controller given no ``--payout-compliance``: issue 23's defaults (a W-2G at
>= $600 and >= 300x the wager, a witness from $1,200). ``none`` must be asked for."""

US_TAX_FORM_FROM_CENTS = 60_000
"""$600.00: the W-2G amount threshold for a table-game win (issue 23's sources)."""
US_TAX_FORM_WAGER_MULTIPLE = 300
"""A W-2G is required only for a win of at least 300 times the wager (issue 23's sources)."""
US_WITNESS_FROM_CENTS = 120_000
"""$1,200.00: payouts from here need a second person's verification (issue 23)."""
MAX_WITNESS_FROM_CENTS = 500_000
"""$5,000.00: the highest witness threshold a jurisdiction allows (with an approved
computerised slip, issue 23); a policy above it is refused."""
MAX_WAGER_MULTIPLE = 1_000_000
"""The largest wager multiple a policy may name."""

TAX_FORM_REF_MAX_CHARS = 40
"""A tax-form reference: an opaque id of at most this many characters."""
TAX_FORM_REF_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._/-]{0,39}"
"""Letters, digits and ``. _ / -``, starting with a letter or digit: enough for any tax
system's document number, too narrow for a name, an address or a free-text note."""
_TAX_FORM_REF = re.compile(TAX_FORM_REF_PATTERN)
OVERRIDE_MAX_CHARS = 200
"""An override's reason, as other reasons (:data:`controller.domain.bounds.REASON_MAX_CHARS`)."""

WITNESS_ROLES = frozenset({Role.SUPERVISOR, Role.CASHIER})
"""Who may witness a hand-pay: a supervisor or another cashier of the cage (never the
payer: the store refuses a payer who is its own witness). A table, an operator, an auditor
or a display is not present at the cage and may not witness."""


@dataclass(frozen=True, slots=True)
class PayoutCompliance:
    """A jurisdiction's hand-pay rules. ``tax_form_from_cents`` (cents) and
    ``tax_form_wager_multiple`` (a whole multiple of the wager) decide the tax form, ``None``:
    no tax-form rule; ``tax_form_overridable``: a payment may state why no form is filed
    instead of a reference; ``witness_from_cents`` (cents): a witness from this amount,
    ``None``: none required."""

    name: str = NONE
    tax_form_from_cents: int | None = None
    tax_form_wager_multiple: int = 1
    tax_form_overridable: bool = False
    witness_from_cents: int | None = None

    def __post_init__(self) -> None:
        if self.tax_form_from_cents is not None and not (
            1 <= self.tax_form_from_cents <= MAX_METER_CENTS
        ):
            raise InvalidConfiguration(
                f"payout compliance {self.name}: the tax-form threshold must be 0.01 to "
                f"{format_cents(MAX_METER_CENTS)}, got {self.tax_form_from_cents} cents"
            )
        if not 1 <= self.tax_form_wager_multiple <= MAX_WAGER_MULTIPLE:
            raise InvalidConfiguration(
                f"payout compliance {self.name}: the tax-form wager multiple must be 1 to "
                f"{MAX_WAGER_MULTIPLE}, got {self.tax_form_wager_multiple}"
            )
        if self.witness_from_cents is not None and not (
            1 <= self.witness_from_cents <= MAX_WITNESS_FROM_CENTS
        ):
            raise InvalidConfiguration(
                f"payout compliance {self.name}: the witness threshold must be 0.01 to "
                f"{format_cents(MAX_WITNESS_FROM_CENTS)} (the most a jurisdiction allows, with "
                f"an approved computerised slip), got {format_cents(self.witness_from_cents)}"
            )

    @property
    def active(self) -> bool:
        """True when some rule can require something."""
        return self.tax_form_from_cents is not None or self.witness_from_cents is not None

    def describe(self) -> str:
        """The policy in one line for people."""
        tax = (
            "no tax-form rule"
            if self.tax_form_from_cents is None
            else f"W-2G from {format_cents(self.tax_form_from_cents)} and "
            f"{self.tax_form_wager_multiple}x the wager"
            + (" (overridable)" if self.tax_form_overridable else " (not overridable)")
        )
        witness = (
            "no witness rule"
            if self.witness_from_cents is None
            else f"witness from {format_cents(self.witness_from_cents)}"
        )
        return f"{self.name}: {tax}; {witness}"


@dataclass(frozen=True, slots=True)
class Requirements:
    """What one jackpot's hand-pay needs, with the reasons for people (the slip's lines)."""

    tax_form_required: bool
    tax_form_reason: str
    witness_required: bool
    witness_reason: str
    tax_form_overridable: bool = False


NO_REQUIREMENTS = Requirements(False, "", False, "")


def requirements(policy: PayoutCompliance, amount_cents: int, wager_cents: int) -> Requirements:
    """What a jackpot of ``amount_cents`` won on a wager of ``wager_cents`` needs under
    ``policy``: the tax form at ``amount >= from`` and ``amount >= multiple x wager`` (both
    bounds inclusive), the witness at ``amount >= witness_from``. Integer cents only."""
    if not policy.active:
        return NO_REQUIREMENTS
    amount, wager = format_cents(amount_cents), format_cents(wager_cents)
    tax, tax_reason = False, "no tax-form rule"
    if policy.tax_form_from_cents is not None:
        multiple = policy.tax_form_wager_multiple
        enough = amount_cents >= policy.tax_form_from_cents
        times = amount_cents >= multiple * wager_cents
        tax = enough and times
        threshold = format_cents(policy.tax_form_from_cents)
        if tax:
            tax_reason = f"{amount} >= {threshold} and >= {multiple}x the {wager} wager"
        elif not enough:
            tax_reason = f"{amount} < {threshold}"
        else:
            tax_reason = f"{amount} < {multiple}x the {wager} wager"
    witness, witness_reason = False, "no witness rule"
    if policy.witness_from_cents is not None:
        witness = amount_cents >= policy.witness_from_cents
        sign = ">=" if witness else "<"
        witness_reason = f"{amount} {sign} {format_cents(policy.witness_from_cents)}"
    return Requirements(tax, tax_reason, witness, witness_reason, policy.tax_form_overridable)


PRESETS: Mapping[str, PayoutCompliance] = {
    NONE: PayoutCompliance(),
    US_DEFAULT: PayoutCompliance(
        US_DEFAULT,
        US_TAX_FORM_FROM_CENTS,
        US_TAX_FORM_WAGER_MULTIPLE,
        tax_form_overridable=True,
        witness_from_cents=US_WITNESS_FROM_CENTS,
    ),
    OKLAHOMA: PayoutCompliance(
        OKLAHOMA,
        US_TAX_FORM_FROM_CENTS,
        US_TAX_FORM_WAGER_MULTIPLE,
        tax_form_overridable=False,
        witness_from_cents=US_WITNESS_FROM_CENTS,
    ),
}
"""The named policies: ``none`` (nothing required), ``us-default`` (a controller's default,
:data:`DEFAULT`: W-2G at >= $600 and >= 300x the wager, its prompt overridable with a stated
reason; a witness from $1,200) and ``oklahoma`` (the same, the W-2G prompt not overridable,
325:85-21-6)."""


def policy(
    preset: str,
    *,
    tax_form_from_cents: int | None = None,
    tax_form_wager_multiple: int | None = None,
    witness_from_cents: int | None = None,
) -> PayoutCompliance:
    """The preset named ``preset`` with the given values changed (a threshold of 0 turns its
    rule off; a changed preset is named ``<preset>+custom``). :class:`InvalidConfiguration`
    names an unknown preset or a value out of range."""
    base = PRESETS.get(preset)
    if base is None:
        raise InvalidConfiguration(
            f"unknown payout compliance preset {preset[:40]!r}; the presets are "
            + ", ".join(PRESETS)
        )
    if (
        tax_form_from_cents is None
        and tax_form_wager_multiple is None
        and witness_from_cents is None
    ):
        return base
    for name, value in (
        ("tax-form threshold", tax_form_from_cents),
        ("witness threshold", witness_from_cents),
    ):
        if value is not None and value < 0:
            raise InvalidConfiguration(f"payout compliance: the {name} is never negative")
    tax_from = base.tax_form_from_cents if tax_form_from_cents is None else tax_form_from_cents
    witness_from = base.witness_from_cents if witness_from_cents is None else witness_from_cents
    return PayoutCompliance(
        f"{preset}+custom",
        tax_from or None,
        base.tax_form_wager_multiple
        if tax_form_wager_multiple is None
        else tax_form_wager_multiple,
        base.tax_form_overridable,
        witness_from or None,
    )


def check_tax_form_ref(value: str) -> str:
    """A tax-form reference as given (empty: none), else :class:`InvalidArgument` saying
    what it must be: 1-40 of letters, digits and ``. _ / -``, starting with a letter or
    digit. It is an opaque id the casino's tax system issued; the controller stores no
    patron data, and the charset keeps names, addresses and free text out."""
    if value == "":
        return value
    if not _TAX_FORM_REF.fullmatch(value):
        raise InvalidArgument(
            f"tax-form reference {value[:TAX_FORM_REF_MAX_CHARS]!r} must be 1-"
            f"{TAX_FORM_REF_MAX_CHARS} of letters, digits, '.', '_', '/', '-' (the reference "
            "the casino's tax system issued; never the patron's personal data)"
        )
    return value


@dataclass(frozen=True, slots=True)
class PaymentCompliance:
    """One payment held to ``policy``: what it requires of the jackpot of ``amount_cents``
    on a wager of ``wager_cents`` (``needs``) and what the payer gave (``tax_form_ref``, or
    ``tax_form_override``: the reason no form is filed, where the policy allows it)."""

    policy: PayoutCompliance
    amount_cents: int
    wager_cents: int
    needs: Requirements
    tax_form_ref: str = ""
    tax_form_override: str = ""

    def arguments(self) -> list[str]:
        """The arguments 6 to 18 of ``pay_jackpot.lua`` (its header names them)."""
        p, needs = self.policy, self.needs
        return [
            p.name,
            "" if p.tax_form_from_cents is None else str(p.tax_form_from_cents),
            str(p.tax_form_wager_multiple),
            "1" if p.tax_form_overridable else "0",
            "" if p.witness_from_cents is None else str(p.witness_from_cents),
            "1" if needs.tax_form_required else "0",
            "1" if needs.witness_required else "0",
            self.tax_form_ref,
            self.tax_form_override,
            str(self.amount_cents),
            str(self.wager_cents),
            needs.tax_form_reason,
            needs.witness_reason,
        ]


def entry_policy(entry: Mapping[str, str]) -> PayoutCompliance:
    """The policy a ``jackpot_paid`` entry says it was held to (InvalidConfiguration if it
    is not one)."""
    tax_from, witness_from = (
        entry.get("tax_form_from_cents", ""),
        entry.get("witness_from_cents", ""),
    )
    return PayoutCompliance(
        entry.get("compliance", ""),
        int(tax_from) if tax_from else None,
        int(entry.get("tax_form_multiple") or 0),
        entry.get("tax_form_overridable") == "1",
        int(witness_from) if witness_from else None,
    )


class PaymentCheck:
    """The journal's hand-pays against the payout policy each states (the audit, like
    :class:`controller.domain.mystery.CommitmentCheck`): feed every entry in order to
    :meth:`add`; :attr:`problems` names each payment that was not what its policy
    required. A ``jackpot_paid`` entry that carries a policy (``compliance``) must state the
    requirements that policy gives its amount and wager, carry a well-formed tax-form
    reference (or an override its policy allows) when a form is required, and name a witness
    (not the payer) whose ``jackpot_witnessed`` entry for the jackpot came before it (one at
    or before ``history_start``, a trimmed journal's checkpoint, is not in the journal any
    more and is taken as the payment names it, if it comes after the hit its jackpot id
    names); and no tax-form reference files two jackpots."""

    def __init__(self, link_group_id: str, history_start: int = 0) -> None:
        self.link_group_id = link_group_id
        self.history_start = history_start
        self.problems: list[str] = []
        self._witnessed: dict[str, tuple[int, str]] = {}
        self._references: dict[str, str] = {}  # tax-form reference -> the jackpot it filed

    def add(self, entry: Mapping[str, str]) -> None:
        """Check one journal entry (its fields as strings)."""
        kind = entry.get("type")
        if kind == "jackpot_witnessed":
            self._witnessed.setdefault(
                entry.get("jackpot", ""), (int(entry.get("seq") or 0), entry.get("witness", ""))
            )
        elif kind == "jackpot_paid" and entry.get("compliance"):
            self._paid(entry)

    def _problem(self, entry: Mapping[str, str], text: str) -> None:
        self.problems.append(
            f"{self.link_group_id}: journal #{entry.get('seq')} (jackpot_paid of "
            f"{entry.get('jackpot')}) {text}"
        )

    def _paid(self, entry: Mapping[str, str]) -> None:
        try:
            policy = entry_policy(entry)
            needs = requirements(
                policy, int(entry.get("amount_cents") or 0), int(entry.get("wager_cents") or 0)
            )
        except (InvalidConfiguration, ValueError) as error:
            self._problem(entry, f"states a payout policy that is not one: {error}")
            return
        stated = (entry.get("tax_form_required") == "1", entry.get("witness_required") == "1")
        if stated != (needs.tax_form_required, needs.witness_required):
            self._problem(
                entry,
                f"states tax form/witness required {stated}, but its policy {policy.name} "
                f"requires {(needs.tax_form_required, needs.witness_required)}",
            )
        ref, override = entry.get("tax_form_ref", ""), entry.get("tax_form_override", "")
        if ref:
            try:
                check_tax_form_ref(ref)
            except InvalidArgument:
                self._problem(entry, f"carries a tax-form reference {ref[:40]!r} of another form")
            jackpot = entry.get("jackpot", "")
            filed = self._references.setdefault(ref, jackpot)
            if filed != jackpot:  # one form per reportable win
                self._problem(entry, f"reuses tax-form reference {ref[:40]!r} of {filed}")
        if needs.tax_form_required and not ref:
            if not override:
                self._problem(entry, "was paid without the tax form its policy requires")
            elif not policy.tax_form_overridable:
                self._problem(entry, f"overrode the tax form, which {policy.name} does not allow")
        self._witness(entry, needs)

    def _witness(self, entry: Mapping[str, str], needs: Requirements) -> None:
        witness, payer = entry.get("witness", ""), entry.get("payer", "")
        if witness and witness == payer:
            self._problem(entry, f"names its payer {payer} as its own witness")
        if needs.witness_required and not witness:
            self._problem(entry, "was paid without the witness its policy requires")
        if witness:
            seq = int(entry.get("witness_seq") or 0)
            jackpot = entry.get("jackpot", "")
            found = self._witnessed.get(jackpot)
            hit = jackpot.rpartition(":")[2]
            hit_seq = int(hit) if hit.isdigit() else 0
            # a trimmed witness step is taken as named only when the hit was trimmed too: a
            # witness comes after its hit
            if found is None and not hit_seq < seq <= self.history_start:
                self._problem(entry, f"names witness {witness}, but no jackpot_witnessed entry")
            elif found is not None and found != (seq, witness):
                self._problem(
                    entry,
                    f"names witness {witness} (#{seq}), but entry #{found[0]} is {found[1]}'s",
                )

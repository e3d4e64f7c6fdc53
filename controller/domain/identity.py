"""Who calls: the identity a client certificate names, and the roles there are.

A client certificate carries exactly one URI subject alternative name of the form
``jackpot://<role>/<name>``:

* ``jackpot://table/<table_id>`` — a table agent, for its own table only;
* ``jackpot://supervisor/<name>`` — validates jackpots (approve, reject), may record a payment;
* ``jackpot://cashier/<name>`` — the cage: reads jackpots and records their hand-payment;
* ``jackpot://operator/<name>`` — link groups, meters, tables, rules;
* ``jackpot://auditor/<name>`` — reads everything, changes nothing;
* ``jackpot://display/<name>`` — a meter sign: watches meters, nothing else.

``name`` is 1-64 of ``[A-Za-z0-9._-]`` (a table's name is its table id). The CA that signs
these certificates is the casino's own (``jackpotctl certs``); the controller trusts no
other. Which role may call which RPC is one table, :mod:`controller.api.access`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

URI_SCHEME = "jackpot"
_URI = re.compile(r"jackpot://([a-z]{1,16})/([A-Za-z0-9._-]{1,64})")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


class Role(StrEnum):
    """What a caller is for."""

    TABLE = "table"
    SUPERVISOR = "supervisor"
    CASHIER = "cashier"
    OPERATOR = "operator"
    AUDITOR = "auditor"
    DISPLAY = "display"
    INSECURE = "insecure"  # every caller of a controller started with --insecure; never issued


class IdentityError(ValueError):
    """A certificate name that is not a jackpot identity (the message says why)."""


@dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated caller: its role and its name (a table's name is its table id).

    ``fingerprint`` is the SHA-256 of the certificate (hex), recorded beside the identity in
    the journal so that an action points at the exact certificate that made it; empty for
    the development identity of an insecure controller.
    """

    role: Role
    name: str
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise IdentityError(
                f"identity name {self.name[:64]!r} must be 1-64 of letters, digits, '.', '_', '-'"
            )

    @property
    def uri(self) -> str:
        """``jackpot://<role>/<name>``, as the certificate names it."""
        return f"{URI_SCHEME}://{self.role}/{self.name}"

    def __str__(self) -> str:
        return self.uri

    @property
    def actor(self) -> str:
        """Who did it, as the journal records it: the identity and, when there is one, the
        certificate's fingerprint (``jackpot://operator/alice sha256:ab12...``)."""
        return f"{self.uri} sha256:{self.fingerprint}" if self.fingerprint else self.uri

    @classmethod
    def parse(cls, uri: str, fingerprint: str = "") -> Identity:
        """Read ``jackpot://<role>/<name>``; :class:`IdentityError` for anything else."""
        match = _URI.fullmatch(uri)
        if match is None:
            raise IdentityError(f"{uri[:80]!r} is not a jackpot identity (jackpot://<role>/<name>)")
        if match[1] not in CERTIFICATE_ROLES:
            roles = ", ".join(CERTIFICATE_ROLES)
            raise IdentityError(f"unknown role {match[1]!r} (roles: {roles})")
        return cls(Role(match[1]), match[2], fingerprint)


CERTIFICATE_ROLES = tuple(role.value for role in Role if role is not Role.INSECURE)
"""The roles a certificate may name."""

INSECURE_CALLER = Identity(Role.INSECURE, "development")
"""Every caller of a controller started with ``--insecure`` (loopback only): it may call
every RPC, and the journal records it as ``jackpot://insecure/development``."""

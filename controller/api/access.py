"""Who may call what: the one table of RPCs and the roles each admits.

A method missing from :data:`ACCESS` is refused to everyone (deny by default). A method
``for_own_table`` admits a table's certificate only for requests whose ``table_id`` is that
table's id; other roles listed for it may name any table.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from controller.domain.identity import Identity, Role
from controller.domain.payout_compliance import WITNESS_ROLES
from jackpot.errors import PermissionDenied

TABLE = frozenset({Role.TABLE})
OPERATOR = frozenset({Role.OPERATOR})
SUPERVISOR = frozenset({Role.SUPERVISOR})
READERS = frozenset({Role.OPERATOR, Role.SUPERVISOR, Role.AUDITOR})
JACKPOT_READERS = READERS | {Role.CASHIER}
PAYERS = frozenset({Role.CASHIER, Role.SUPERVISOR})
WITNESSES = WITNESS_ROLES
EVERYONE = frozenset(Role)

_TABLES = "/jackpot.v1.TableService/"
_ADMIN = "/jackpot.v1.AdminService/"


@dataclass(frozen=True, slots=True)
class Access:
    """The roles an RPC admits; ``for_own_table``: a table may only name its own table."""

    roles: frozenset[Role]
    for_own_table: bool = False


ACCESS: Mapping[str, Access] = {
    _TABLES + "Lockout": Access(TABLE, for_own_table=True),
    _TABLES + "Settle": Access(TABLE, for_own_table=True),
    _TABLES + "VoidRound": Access(TABLE, for_own_table=True),
    _TABLES + "GetTable": Access(TABLE, for_own_table=True),
    _TABLES + "ReportChipCount": Access(TABLE, for_own_table=True),
    _TABLES + "ReportIrregularity": Access(TABLE, for_own_table=True),
    _TABLES + "WatchMeters": Access(frozenset({Role.TABLE, Role.DISPLAY}), for_own_table=True),
    _ADMIN + "CreateLinkGroup": Access(OPERATOR),
    _ADMIN + "ResumeLinkGroup": Access(OPERATOR),
    # Reconciling a restore: a correction's approver must be another operator than its
    # requester (the store refuses that).
    _ADMIN + "ListRestoreSteps": Access(READERS),
    _ADMIN + "RequestRestoreCorrections": Access(OPERATOR),
    _ADMIN + "ApproveRestoreCorrections": Access(OPERATOR),
    _ADMIN + "FinishRestore": Access(OPERATOR),
    _ADMIN + "CreateMeter": Access(OPERATOR),
    _ADMIN + "RegisterTable": Access(OPERATOR),
    _ADMIN + "RebaseTableRounds": Access(OPERATOR),
    # Meter and table controls; an adjustment's approver must be another operator than its
    # requester (the store refuses that).
    _ADMIN + "EnterMaintenance": Access(OPERATOR),
    _ADMIN + "LeaveMaintenance": Access(OPERATOR),
    _ADMIN + "UpdateMeter": Access(OPERATOR),
    _ADMIN + "RetireMeter": Access(OPERATOR),
    _ADMIN + "RequestAdjustment": Access(OPERATOR),
    _ADMIN + "ApproveAdjustment": Access(OPERATOR),
    _ADMIN + "RejectAdjustment": Access(OPERATOR),
    _ADMIN + "UpdateTable": Access(OPERATOR),
    _ADMIN + "RetireTable": Access(OPERATOR),
    _ADMIN + "CancelStagedMeterChange": Access(OPERATOR),
    _ADMIN + "WindDownMeter": Access(OPERATOR),
    _ADMIN + "CancelStagedTableChange": Access(OPERATOR),
    _ADMIN + "ListAdjustments": Access(READERS),
    _ADMIN + "GetLinkGroup": Access(READERS),
    _ADMIN + "ListLinkGroups": Access(READERS),
    _ADMIN + "GetMeter": Access(READERS),
    _ADMIN + "ListMeters": Access(READERS),
    _ADMIN + "ListTables": Access(READERS),
    _ADMIN + "ListPendingJackpots": Access(JACKPOT_READERS),
    _ADMIN + "ListJackpots": Access(JACKPOT_READERS),
    _ADMIN + "GetJackpot": Access(JACKPOT_READERS),
    _ADMIN + "ApproveJackpot": Access(SUPERVISOR),
    _ADMIN + "RejectJackpot": Access(SUPERVISOR),
    # The cage, or a supervisor other than the one who approved it (the store refuses that).
    _ADMIN + "RecordJackpotPaid": Access(PAYERS),
    _ADMIN + "ListIrregularities": Access(READERS),
    _ADMIN + "ResolveIrregularity": Access(SUPERVISOR),
    # Corrections of a settled round: a supervisor requests (the table itself inside the
    # dealer's window, for its own round), another supervisor or an operator decides.
    _ADMIN + "RequestCorrection": Access(SUPERVISOR | TABLE, for_own_table=True),
    _ADMIN + "ApproveCorrection": Access(SUPERVISOR | OPERATOR),
    _ADMIN + "RejectCorrection": Access(SUPERVISOR | OPERATOR),
    _ADMIN + "ListCorrections": Access(READERS),
    # Payout compliance: a supervisor or a cashier witnesses a hand-pay (never its payer: the
    # store refuses that; docs/payout-compliance.md).
    _ADMIN + "WitnessJackpotPayment": Access(WITNESSES),
    # Any authenticated caller may ask whether the controller serves; the long-lived streams of
    # health and reflection are for the people and tools that operate it.
    "/grpc.health.v1.Health/Check": Access(EVERYONE),
    "/grpc.health.v1.Health/Watch": Access(READERS),
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": Access(READERS),
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo": Access(READERS),
}


WEB_ACCESS: Mapping[str, Access] = {
    # The meter sign (controller.web): meter values and the last winners, which every player
    # sees on the sign anyway; only a sign's certificate is served, of any link group (the
    # identity names a display, not a link group, as for WatchMeters).
    "/sign": Access(frozenset({Role.DISPLAY})),
    # The floor view shows what these roles may already read with jackpotctl (pending
    # jackpots, tables, meters, hits): the cage and the auditors watch it too.
    "/floor": Access(JACKPOT_READERS),
    # Approve or reject from the floor view: as ApproveJackpot and RejectJackpot.
    "/floor/review": Access(SUPERVISOR),
    # The cage's Paid button: cashiers only (a supervisor other than the approver may still
    # record a hand-pay with jackpotctl, RecordJackpotPaid; the floor view is the cage's).
    "/floor/paid": Access(frozenset({Role.CASHIER})),
    # The floor view's Witness button: as WitnessJackpotPayment (docs/payout-compliance.md).
    "/floor/witness": Access(WITNESSES),
}
"""The web port's pages (``--web-port``) and the roles each admits, deny by default."""


def check_role(method: str, caller: Identity, table: Mapping[str, Access] = ACCESS) -> Access:
    """The method's :class:`Access` in ``table`` (the RPCs, or :data:`WEB_ACCESS`) if
    ``caller``'s role may call it, else :class:`PermissionDenied`. The insecure development
    caller may call everything.
    """
    access = table.get(method)
    if access is None:
        raise PermissionDenied("unknown_method", f"{method[:100]} is not served to any caller")
    if caller.role is Role.INSECURE or caller.role in access.roles:
        return access
    allowed = ", ".join(sorted(role.value for role in access.roles))
    raise PermissionDenied(
        "role",
        f"{caller.uri} may not call {method.rsplit('/', 1)[-1]}; it is for: {allowed}",
    )


def check_table(caller: Identity, table_id: str) -> None:
    """For a method ``for_own_table``: refuse a table's certificate naming another table
    (:class:`PermissionDenied`)."""
    if caller.role is Role.TABLE and table_id != caller.name:
        raise PermissionDenied(
            "other_table",
            f"{caller.uri} reports for table {table_id[:64]!r}; a table's certificate is "
            "for its own table only",
        )


_CALLER: ContextVar[Identity] = ContextVar("jackpot_caller")


def set_caller(caller: Identity) -> None:
    """Record the authenticated caller of the call being served (the interceptor does)."""
    _CALLER.set(caller)


def caller() -> Identity:
    """The authenticated caller of the call being served (set by the interceptor before any
    servicer method runs)."""
    return _CALLER.get()

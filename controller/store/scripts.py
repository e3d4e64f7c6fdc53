"""The Lua scripts of the store, loaded from the ``scripts/`` folder beside this module.

Each script is the schema version of the records it writes and reads (``SCHEMA_VERSION``,
from :data:`controller.store.codec.SCHEMA_VERSION`), then ``sha256.lua`` (the journal's hash
function), ``_lib.lua`` (shared helpers), then the script's own file, registered
once per client with ``register_script`` (EVALSHA, falling back to EVAL after a restart or
failover emptied the server's script cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from controller.store.codec import SCHEMA_VERSION

SCRIPT_NAMES = (
    "create_link_group",
    "create_meter",
    "register_table",
    "lockout",
    "settle",
    "void_round",
    "review_jackpot",
    "pay_jackpot",
    "witness_jackpot",
    "rebase_table_rounds",
    "audit_snapshot",
    "check_position",
    "stop_link_group",
    "resume_link_group",
    "export_snapshot",
    "mark_exported",
    "trim_journal",
    "rotate_checkpoint_key",
    "restore_epoch",
    "read_position",
    "report_chip_count",
    "report_irregularity",
    "resolve_irregularity",
    "enter_maintenance",
    "leave_maintenance",
    "update_meter",
    "retire_meter",
    "request_adjustment",
    "review_adjustment",
    "update_table",
    "retire_table",
    "restore_collect",
    "restore_request",
    "restore_apply",
    "restore_finish",
    "close_day",
    "request_correction",
    "review_correction",
    "stage_meter_change",
    "cancel_meter_change",
    "wind_down_meter",
)
CONTROL_SCRIPTS = frozenset(SCRIPT_NAMES[SCRIPT_NAMES.index("enter_maintenance") :])
"""The scripts of meter and table controls: ``_controls.lua`` is prepended to them too."""


PRELUDE_FILES = ("sha256.lua", "_lib.lua", "_staged_tables.lua")
"""The files before every script's own, in this order."""


def prelude_source() -> str:
    """What every script starts with: the schema version, then :data:`PRELUDE_FILES`."""
    folder = resources.files("controller.store") / "scripts"
    parts = [f"local SCHEMA_VERSION = {SCHEMA_VERSION:d}"]
    parts += [(folder / name).read_text(encoding="utf-8") for name in PRELUDE_FILES]
    return "\n".join(parts)


def script_source(name: str) -> str:
    """The full source of script ``name``: the prelude, then the script."""
    folder = resources.files("controller.store") / "scripts"
    parts = [prelude_source()]
    if name in CONTROL_SCRIPTS:  # the controls' shared helpers, after the prelude
        parts.append((folder / "_controls.lua").read_text(encoding="utf-8"))
    parts.append((folder / f"{name}.lua").read_text(encoding="utf-8"))
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class Scripts:
    """One registered script per transition."""

    create_link_group: AsyncScript
    create_meter: AsyncScript
    register_table: AsyncScript
    lockout: AsyncScript
    settle: AsyncScript
    void_round: AsyncScript
    review_jackpot: AsyncScript
    pay_jackpot: AsyncScript
    witness_jackpot: AsyncScript
    rebase_table_rounds: AsyncScript
    audit_snapshot: AsyncScript
    check_position: AsyncScript
    stop_link_group: AsyncScript
    resume_link_group: AsyncScript
    export_snapshot: AsyncScript
    mark_exported: AsyncScript
    trim_journal: AsyncScript
    rotate_checkpoint_key: AsyncScript
    restore_epoch: AsyncScript
    read_position: AsyncScript
    report_chip_count: AsyncScript
    report_irregularity: AsyncScript
    resolve_irregularity: AsyncScript
    enter_maintenance: AsyncScript
    leave_maintenance: AsyncScript
    update_meter: AsyncScript
    retire_meter: AsyncScript
    request_adjustment: AsyncScript
    review_adjustment: AsyncScript
    update_table: AsyncScript
    retire_table: AsyncScript
    restore_collect: AsyncScript
    restore_request: AsyncScript
    restore_apply: AsyncScript
    restore_finish: AsyncScript
    close_day: AsyncScript
    request_correction: AsyncScript
    review_correction: AsyncScript
    stage_meter_change: AsyncScript
    cancel_meter_change: AsyncScript
    wind_down_meter: AsyncScript

    @classmethod
    def register(cls, client: Redis) -> Scripts:
        """Register every script with ``client`` (no round trip until first use)."""
        return cls(**{name: client.register_script(script_source(name)) for name in SCRIPT_NAMES})

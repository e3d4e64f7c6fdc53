"""The position key: the controller's secret for the macs over tables' journal positions.

Every answer to a table carries a MAC over (table, epoch, seq) (:func:`jackpot.epochs.
position_mac`); a table sends it back with its last position, and only a position whose mac
verifies can stop a link group (docs/journal.md, "Verified positions"). The key is held
outside Redis, like the TLS key (``--position-key FILE``): a Redis that lost its data, or
was restored from an older copy, must not take the means to verify with it. Every replica
and worker of one installation reads the same file. The file holds 64 hex digits (32
random bytes) and a newline, readable by the controller only.

    jackpot-controller position-key --out /etc/jackpot/position.key
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from jackpot.errors import InvalidConfiguration

KEY_BYTES = 32


def read_position_key(path: Path) -> bytes:
    """The key in ``path``; :class:`InvalidConfiguration` unless it holds 64 hex digits."""
    text = path.read_text(encoding="ascii").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise InvalidConfiguration(
            f"{path} is not a position key: {2 * KEY_BYTES} hex digits expected "
            "(jackpot-controller position-key --out FILE writes one)"
        )
    return key


def write_position_key(path: Path) -> None:
    """A new random key in ``path`` (created, mode 0600; never overwritten)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(KEY_BYTES) + "\n")
        handle.flush()
        os.fsync(handle.fileno())

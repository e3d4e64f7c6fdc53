"""Options from a config file and the environment, under the command line.

Every long option of ``jackpot-controller serve`` can also be given in a TOML config file
(``--config FILE``; a key is the option's name without its dashes: ``tls-cert = "..."``) or
as an environment variable ``JACKPOT_<NAME>`` (``JACKPOT_TLS_CERT``). The command line wins
over the environment, the environment over the file. Secrets (the Redis password, TLS keys)
are given as files or environment variables, so they never appear in a process listing.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ENV_PREFIX = "JACKPOT_"
REDIS_PASSWORD_ENV = "JACKPOT_REDIS_PASSWORD"
SENTINEL_PASSWORD_ENV = "JACKPOT_SENTINEL_PASSWORD"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


class SettingsError(Exception):
    """A config file or environment variable that cannot be used (the message says why)."""


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Long options by their name without dashes (``tls-cert``)."""
    return {
        option[2:]: action
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option not in ("--help", "--config")
    }


def _value(action: argparse.Action, raw: Any, where: str) -> Any:
    """A value from a file or the environment in the form argparse keeps it."""
    if isinstance(action, argparse._StoreTrueAction):
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in _TRUE | _FALSE:
            raise SettingsError(f"{where}: {raw!r} is not true or false")
        return text in _TRUE
    if isinstance(action, argparse._AppendAction):
        items = raw if isinstance(raw, list) else str(raw).split(os.pathsep)
        convert = action.type or str
        return [convert(item) for item in items if str(item)]  # type: ignore[operator]
    if isinstance(raw, bool | list | dict):
        raise SettingsError(f"{where}: expected a single value, got {raw!r}")
    return str(raw)  # argparse converts a string default with the option's type


def apply(
    parser: argparse.ArgumentParser,
    config: Path | None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Set ``parser``'s defaults from ``config`` (TOML) and then from the environment."""
    options = _options(parser)
    defaults: dict[str, Any] = {}
    if config is not None:
        try:
            data = tomllib.loads(config.read_text(encoding="utf-8"))
        except OSError as error:
            raise SettingsError(f"{config}: cannot read: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise SettingsError(f"{config}: not valid TOML: {error}") from None
        for key, raw in data.items():
            name = key.replace("_", "-")
            action = options.get(name)
            if action is None:
                raise SettingsError(f"{config}: unknown option {key!r}")
            defaults[action.dest] = _value(action, raw, f"{config}: {key}")
    env = os.environ if environ is None else environ
    for name, action in options.items():
        variable = ENV_PREFIX + name.replace("-", "_").upper()
        if variable in env:
            defaults[action.dest] = _value(action, env[variable], variable)
    parser.set_defaults(**defaults)


def redis_password(path: Path | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The Redis password: the content of ``path`` (``--redis-password-file``) without its
    final line break, else ``$JACKPOT_REDIS_PASSWORD``, else None. :class:`SettingsError` if
    the file is unreadable."""
    return _secret(path, "--redis-password-file", REDIS_PASSWORD_ENV, environ)


def sentinel_password(path: Path | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The Redis Sentinels' own password (``requirepass`` of a Sentinel), for a
    ``sentinel://`` Redis URL: the content of ``path`` (``--sentinel-password-file``) without
    its final line break, else ``$JACKPOT_SENTINEL_PASSWORD``, else None (Sentinels without a
    password). :class:`SettingsError` if the file is unreadable."""
    return _secret(path, "--sentinel-password-file", SENTINEL_PASSWORD_ENV, environ)


def _secret(
    path: Path | None, option: str, variable: str, environ: Mapping[str, str] | None
) -> str | None:
    if path is None:
        env = os.environ if environ is None else environ
        return env.get(variable) or None
    try:
        return path.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise SettingsError(f"cannot read {option} {path}: {reason}") from None

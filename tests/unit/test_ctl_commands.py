"""``jackpotctl``'s shape: each command group a module whose ``add_commands`` registers its
parser and handlers; ``main`` only builds the root and dispatches."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from controller.ctl import main


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser a command line can end at, with the words that reach it."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers or not subparsers[0].required:
        yield path, parser
    for action in subparsers:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


def test_every_command_a_line_can_end_at_has_a_handler() -> None:
    leaves = list(_leaves(main._parser()))
    assert len(leaves) > 50
    missing = [
        " ".join(path) for path, parser in leaves if not callable(parser.get_default("handler"))
    ]
    assert missing == []


def test_each_group_module_adds_the_areas_it_names_and_no_other() -> None:
    areas: dict[str, str] = {}
    for group in main.COMMAND_GROUPS:
        top = argparse.ArgumentParser().add_subparsers()
        group.add_commands(top)
        for name in top.choices:
            assert name not in areas, f"{name} added by {areas.get(name)} and {group}"
            areas[name] = getattr(group, "__name__", "")
    root = next(a for a in main._parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(root.choices) == list(areas)
    assert {"certs", "audit", "journal", "restore", "link-groups", "meters", "tables"} <= set(areas)
    assert areas["meters"] == "controller.ctl.meters"


def test_a_group_handler_runs_and_its_error_maps_to_an_exit_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main.main(["rules", "check", "/nonexistent/rules.toml"]) == 1
    assert capsys.readouterr().err.startswith("jackpotctl: /nonexistent/rules.toml: cannot read")
    assert (
        main.main(
            [
                "journal",
                "trim",
                "--redis",
                "redis://x",
                "--signing-key",
                "k",
                "--retention-hours",
                "1e9",
            ]
        )
        == 1
    )
    assert "--retention-hours must be 0 to" in capsys.readouterr().err

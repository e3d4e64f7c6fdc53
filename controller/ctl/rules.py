"""``jackpotctl rules check``: a Rules Submission file validated and described, offline.

jackpotctl rules check deploy/rules/caribbean-stud.toml
"""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.runtime.rules_file import describe, load_submission


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``rules check``."""
    rules = top.add_parser("rules", help="Rules Submissions").add_subparsers(
        dest="action", required=True
    )
    rules_check = rules.add_parser("check", help="validate a Rules Submission file")
    rules_check.add_argument("file", type=Path)
    rules_check.set_defaults(handler=_rules_check)


def _rules_check(args: argparse.Namespace) -> int:
    submission = load_submission(args.file)
    for line in describe(submission):
        print(line)
    print(f"rules: OK ({args.file})")
    return 0

"""``python -m bench.odds``: how long the exact odds of every shipped paytable take.

Each paytable is computed by ``jackpotctl odds`` in a fresh process (cold: the static line
tables are imported, nothing is cached), so the time is what an operator waits. The baseline,
measured in the same run, is the same command's start-up alone (``jackpotctl --help``); the
report gives each paytable's time, its time over the baseline, and its share of the 30 s the
odds calculator is allowed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from controller.domain.games import GAMES
from controller.runtime.rules_file import load_submission

RULES = Path(__file__).resolve().parents[1] / "deploy" / "rules"
BOUND_S = 30.0
CTL = [sys.executable, "-m", "controller.ctl.main"]


def _timed(argv: Sequence[str]) -> float:
    """Seconds one run of ``argv`` takes; it must succeed."""
    begin = time.perf_counter()
    subprocess.run(list(argv), check=True, capture_output=True, timeout=300)
    return time.perf_counter() - begin


def _cases() -> list[tuple[str, list[str]]]:
    """(label, jackpotctl arguments) for every printed and every shipped written paytable."""
    cases = []
    for game in GAMES.values():
        for wager in game.wagers.values():
            for name in sorted(wager.paytables):
                cases.append(
                    (
                        f"{game.facts.name} {wager.facts.kind} {name}",
                        [
                            "odds",
                            "--game",
                            game.facts.name,
                            "--wager",
                            wager.facts.kind,
                            "--paytable",
                            name,
                            "--meter",
                            "10000",
                        ],
                    )
                )
    for path in sorted(RULES.glob("*.toml")):
        for game_name, offers in load_submission(path).games.items():
            for offer in offers.values():
                if offer.paytable.citation == "Rules Submission":
                    cases.append(
                        (
                            f"{game_name} {offer.wager} {offer.paytable.name} ({path.name})",
                            [
                                "odds",
                                "--game",
                                game_name,
                                "--wager",
                                offer.wager,
                                "--paytable",
                                offer.paytable.name,
                                "--meter",
                                "10000",
                                "--rules",
                                str(path),
                            ],
                        )
                    )
    return cases


def main(argv: Sequence[str] | None = None) -> int:
    """Time every case and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per case (best is kept)")
    args = parser.parse_args(argv)
    baseline = min(_timed([*CTL, "--help"]) for _ in range(max(3, args.repeat)))
    print(f"baseline (jackpotctl start-up): {baseline:.2f} s; bound per paytable {BOUND_S:.0f} s")
    print(f"{'paytable':<78}{'seconds':>9}{'x baseline':>12}{'of bound':>10}")
    worst = 0.0
    for label, arguments in _cases():
        seconds = min(_timed([*CTL, *arguments]) for _ in range(args.repeat))
        worst = max(worst, seconds)
        print(f"{label:<78}{seconds:>9.2f}{seconds / baseline:>12.1f}{seconds / BOUND_S:>10.1%}")
    print(f"slowest: {worst:.2f} s ({'within' if worst < BOUND_S else 'OVER'} the bound)")
    return 0 if worst < BOUND_S else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Chaos under load: several simulated tables play while a process dies, Redis stalls or the
network to it fails; afterwards the tables' own records of the money equal Redis's journal,
to the microcent, nothing was applied twice, the audit is OK and the tables kept playing.

harness.py runs the processes, scenarios.py holds the faults, checks.py says exactly what is
checked. A failed scenario names each difference, per table, in cents, and where the
processes' logs are (``--basetemp DIR`` keeps them: other pytest runs on the machine prune
the default temporary directories)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.chaos.harness import Rig, Topology, play_through
from tests.chaos.scenarios import SCENARIOS, Scenario


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_money_survives(scenario: Scenario, make_rig: Callable[[Topology], Rig]) -> None:
    rig = make_rig(scenario.topology)
    rig.start()
    marks = play_through(rig, scenario.fault)
    scenario.check(rig, marks)

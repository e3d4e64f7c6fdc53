"""Chaos under load: several simulated tables play while a process dies, Redis stalls or the
network to it fails; afterwards the tables' own records of the money equal Redis's journal,
to the microcent, nothing was applied twice, the audit is OK and the tables kept playing
(tests/chaos/harness.py says exactly what is checked; scenarios.py holds the faults)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.chaos.checks import verify
from tests.chaos.harness import Rig, Topology, play_through
from tests.chaos.scenarios import SCENARIOS, Scenario


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_money_survives(scenario: Scenario, make_rig: Callable[[Topology], Rig]) -> None:
    rig = make_rig(scenario.topology)
    rig.start()
    marks = play_through(rig, scenario.fault)
    verify(rig, marks)

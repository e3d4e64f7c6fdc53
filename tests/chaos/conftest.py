"""Fixtures of the chaos suite: a rig per scenario, always stopped, also on failure."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from controller.testing import TestPKI
from tests.chaos.harness import Rig, Topology


@pytest.fixture
def make_rig(tmp_path: Path, pki: TestPKI) -> Iterator[Callable[[Topology], Rig]]:
    """Build a :class:`Rig` (not started); every rig built is closed after the test."""
    rigs: list[Rig] = []

    def make(topology: Topology) -> Rig:
        rig = Rig(tmp_path / f"rig-{len(rigs)}", pki, topology)
        rigs.append(rig)
        return rig

    yield make
    for rig in rigs:
        rig.close()

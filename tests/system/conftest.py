"""Fixtures of the system tests: whole processes on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.testing import ControllerProcess, RedisServer, TestPKI
from tests.helpers import CARIBBEAN_RULES


@pytest.fixture
def system(tmp_path: Path, pki: TestPKI) -> Iterator[tuple[RedisServer, ControllerProcess]]:
    """redis-server and a controller process with the Caribbean Stud Rules Submission and no
    call rate limit (simulated tables play fast)."""
    with RedisServer(tmp_path / "redis") as redis:
        controller = ControllerProcess(
            redis.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=CARIBBEAN_RULES,
            extra_args=("--table-calls-per-second", "0"),
        )
        with controller:
            yield redis, controller

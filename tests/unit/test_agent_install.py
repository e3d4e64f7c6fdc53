"""The table agent installs and runs on its own: gRPC and protobuf, no Redis, no Prometheus
client, and nothing of the controller.

The installed distribution's metadata says what ``pip install table-jackpot`` pulls in; a child
interpreter whose imports are limited to the standard library, gRPC, protobuf and the agent's
own packages proves that every module of the agent imports and its command runs without the
rest.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import textwrap
from importlib.metadata import distribution, requires
from pathlib import Path

import grpc
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import table_agent

AGENT_DEPENDENCIES = {"grpcio", "protobuf"}
CONTROLLER_ONLY = {"redis", "prometheus-client", "cryptography", "grpcio-health-checking"}

ROOT = Path(__file__).resolve().parents[2]


def _plain_closure(name: str) -> set[str]:
    """The distributions ``pip install NAME`` installs: NAME and its requirements that no
    extra selects, transitively (by this venv's metadata)."""
    found: set[str] = set()
    todo = [name]
    while todo:
        current = canonicalize_name(todo.pop())
        if current in found:
            continue
        found.add(current)
        for line in requires(current) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def _top_level(name: str) -> set[str]:
    """The importable top-level names a distribution installs."""
    names = set()
    for file in distribution(name).files or []:
        top = file.parts[0]
        if top.endswith((".dist-info", ".pth")) or top == ".." or top.startswith("__"):
            continue
        names.add(top.removesuffix(".py"))
    return names


@pytest.fixture(scope="module")
def agent_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory that holds what ``pip install table-jackpot`` installs and nothing else:
    the agent's packages and every distribution its plain requirements pull in (links to the
    ones this venv has)."""
    where = tmp_path_factory.mktemp("agent-only")
    site = Path(grpc.__file__).parents[1]
    for dist in _plain_closure("table-jackpot") - {"table-jackpot"}:
        for top in _top_level(dist):
            target = site / top if (site / top).exists() else site / f"{top}.py"
            (where / target.name).symlink_to(target)
    for package in ("jackpot", "table_agent"):
        (where / package).symlink_to(ROOT / package)
    return where


def _run_alone(where: Path, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in an isolated interpreter (-I -S: no site-packages, no environment) whose
    only path besides the standard library is ``where``."""
    prelude = f"import sys; sys.path.insert(0, {str(where)!r})\n"
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=where,
    )


def test_the_plain_install_pulls_in_grpc_and_protobuf_only() -> None:
    plain = set()
    extras: dict[str, set[str]] = {}
    for line in requires("table-jackpot") or []:
        requirement = Requirement(line)
        marker = str(requirement.marker or "")
        if not marker:
            plain.add(requirement.name)
        else:
            extra = marker.split("==")[1].strip().strip("\"'")
            extras.setdefault(extra, set()).add(requirement.name)
    assert plain == AGENT_DEPENDENCIES
    assert not _plain_closure("table-jackpot") & CONTROLLER_ONLY
    assert extras["controller"] >= CONTROLLER_ONLY
    assert extras["metrics"] == {"prometheus-client"}
    assert {canonicalize_name(name) for name in extras["console"]} == {"prompt-toolkit"}


def test_every_agent_module_imports_without_redis_prometheus_or_the_controller(
    agent_only: Path,
) -> None:
    modules = [
        info.name
        for info in pkgutil.walk_packages(table_agent.__path__, "table_agent.")
        # the `metrics` extra, and the console's terminal (the `console` extra)
        if info.name not in {"table_agent.metrics", "table_agent.console.screen"}
    ]
    assert "table_agent.console.session" in modules and "table_agent.console.cli" in modules
    assert "table_agent.cli" in modules and "table_agent.games.six_card_fortune" in modules
    result = _run_alone(
        agent_only,
        f"""
        import importlib
        for name in {modules!r}:
            importlib.import_module(name)
        for refused in ("redis", "prometheus_client", "controller", "prompt_toolkit"):
            assert refused not in sys.modules, refused
        print("imported", len({modules!r}))
        """,
    )
    assert result.returncode == 0, result.stderr
    assert f"imported {len(modules)}" in result.stdout


def test_the_agent_only_interpreter_really_lacks_the_controller(agent_only: Path) -> None:
    result = _run_alone(agent_only, "import controller.runtime.cli")
    assert result.returncode != 0
    assert "No module named 'controller'" in result.stderr


def test_the_agent_command_runs_and_names_the_metrics_extra_when_asked_for_metrics(
    agent_only: Path,
) -> None:
    help_run = _run_alone(
        agent_only,
        """
        from table_agent.cli import main
        try:
            main(["--help"])
        except SystemExit as done:
            sys.exit(done.code)
        """,
    )
    assert help_run.returncode == 0, help_run.stderr
    assert "--metrics-port" in help_run.stdout

    metrics_run = _run_alone(
        agent_only,
        """
        from table_agent.cli import main
        sys.exit(main(["--sim", "--table-id", "cs-1", "--controller", "127.0.0.1:1",
                      "--insecure", "--metrics-port", "9109"]))
        """,
    )
    assert metrics_run.returncode == 2, metrics_run.stderr
    assert "pip install 'table-jackpot[metrics]'" in metrics_run.stderr


def test_the_controller_names_its_extra_when_it_is_missing() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['redis'] = None; import controller",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "pip install 'table-jackpot[controller]'" in result.stderr


def test_the_dealer_console_names_its_extra_when_it_is_missing(
    agent_only: Path, tmp_path: Path
) -> None:
    console_run = _run_alone(
        agent_only,
        f"""
        from table_agent.cli import main
        sys.exit(main(["console", "--table-id", "cs-1", "--controller", "127.0.0.1:1",
                      "--insecure", "--state-dir", {str(tmp_path)!r}]))
        """,
    )
    assert console_run.returncode == 2, console_run.stderr
    assert "pip install 'table-jackpot[console]'" in console_run.stderr
    assert "the dealer console needs prompt_toolkit" in console_run.stderr

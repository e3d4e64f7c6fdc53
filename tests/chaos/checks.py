"""What must hold after every scenario, from the agents' outboxes and Redis alone.

(a) :func:`check_tally`, (b) :func:`check_exactly_once`, (c) :func:`check_audit`,
(d) :func:`check_kept_playing`; and no controller crashed, no link group stopped.
:func:`verify` runs them all and fails once, listing every problem.
"""

from __future__ import annotations

import subprocess
import sys

from table_agent.outbox import SUMS
from tests.chaos.agents import SUM_OF_PHASE, Acknowledged, AgentProcess
from tests.chaos.harness import LINK_GROUP, ROUNDS_AFTER_RECOVERY, TABLES, Rig
from tests.chaos.journal import Journal, JournalReport, money


def check_tally(rig: Rig, journal: Journal) -> list[str]:
    """(a) Each table's outbox tally equals its journal entries, to the microcent/cent."""
    problems = []
    for table_id, agent in rig.agents.items():
        tally = agent.outbox.tally()
        recorded = journal.totals(table_id)
        for name in SUMS:
            if tally[name] != recorded[name]:
                problems.append(
                    f"table {table_id}: its outbox tallies {name} {money(name, tally[name])}, "
                    f"its journal entries {money(name, recorded[name])} (outbox - journal = "
                    f"{money(name, tally[name] - recorded[name])})"
                )
    return problems


def _delivery(table_id: str, agent: AgentProcess) -> list[str]:
    problems = [f"table {table_id}: refused {text}" for text in agent.refusals()]
    if agent.outbox.pending():
        problems.append(f"table {table_id}: never delivered {agent.outbox.pending()}")
    if agent.outbox.unfinished_rounds():
        problems.append(f"table {table_id}: rounds left locked {agent.outbox.unfinished_rounds()}")
    return problems


def check_exactly_once(rig: Rig, journal: Journal) -> list[str]:
    """(b) Every acknowledged report is in the journal once, with the amount its table was
    told; the journal holds nothing else of a table; nothing is left to deliver."""
    problems = list(journal.strange)
    for table_id, agent in rig.agents.items():
        acked = agent.acknowledged()
        problems += _delivery(table_id, agent)
        problems += [f"table {table_id}: {text}" for text in acked.contradictions]
        if agent.outbox.tally()["acks"] != acked.count():
            problems.append(
                f"table {table_id}: the outbox tally counts {agent.outbox.tally()['acks']} "
                f"acknowledgements, its records {acked.count()}"
            )
        recorded = journal.reports[table_id]
        problems += _each_report_once(table_id, recorded, acked.report_ids())
        problems += _as_acknowledged(table_id, recorded, acked)
    return problems


def _each_report_once(
    table_id: str, recorded: dict[str, JournalReport], known: set[str]
) -> list[str]:
    """Each report the journal holds: one script's run, acknowledged to the table."""
    problems = []
    for report_id, report in sorted(recorded.items()):
        round_id, _, phase = report_id.partition(":")
        where = f"table {table_id} round {round_id} {phase}"
        first = report.seqs[0]
        if report.seqs != list(range(first, first + len(report.seqs))):
            problems.append(
                f"{where}: journal entries #{report.seqs} ({report.types}) are not one "
                "script's run: applied more than once?"
            )
        if report.types.count("round_voided") > 1:
            problems.append(f"{where}: voided {report.types.count('round_voided')} times")
        if phase == "settle" and f"{round_id}:void" in recorded:
            problems.append(f"{where}: the round is both settled and voided")
        if report_id not in known:
            name = SUM_OF_PHASE[phase]
            problems.append(
                f"{where}: the journal holds {money(name, report.amount)} ({name}) the table "
                "was never acknowledged"
            )
    return problems


def _as_acknowledged(
    table_id: str, recorded: dict[str, JournalReport], acked: Acknowledged
) -> list[str]:
    """Each acknowledgement (and each restart's group of them) equals its journal entries."""
    problems = []
    for report_id, ack in sorted(acked.acks.items(), key=lambda item: item[1].round_id):
        found = recorded.get(report_id)
        amount = found.amount if found else 0
        if amount != ack.amount:
            name = SUM_OF_PHASE[ack.phase]
            problems.append(
                f"table {table_id} round {ack.round_id} {ack.phase}: acknowledged "
                f"{money(name, ack.amount)} ({name}), the journal has {money(name, amount)}"
            )
    for group in acked.recovered:
        where = (
            f"table {table_id}, start {group.start}: the reports it re-sent or voided "
            f"({', '.join(group.report_ids)})"
        )
        if group.acks != len(group.report_ids):
            problems.append(f"{where} were acknowledged {group.acks} times")
        for name in SUMS:
            amount = sum(
                recorded[rid].amount
                for rid in group.report_ids
                if rid in recorded and SUM_OF_PHASE[rid.partition(":")[2]] == name
            )
            if amount != group.sums[name]:
                problems.append(
                    f"{where} moved {name} {money(name, group.sums[name])}, the journal has "
                    f"{money(name, amount)}"
                )
    return problems


def check_audit(rig: Rig) -> list[str]:
    """(c) ``jackpotctl audit verify`` on Redis says OK."""
    result = subprocess.run(
        [sys.executable, "-m", "controller.ctl.main", "audit", "verify", "--redis", rig.redis.url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0 or not result.stdout.startswith("audit: OK"):
        return [f"audit verify exited {result.returncode}:\n{result.stdout}{result.stderr}"]
    return []


def check_kept_playing(rig: Rig, journal: Journal, marks: dict[str, int]) -> list[str]:
    """(d) Every table locked out rounds after the fault was healed, and Redis has them."""
    problems = []
    for table_id, agent in rig.agents.items():
        rounds = agent.acked_lockouts()
        after = [round_id for round_id in rounds if round_id > marks[table_id]]
        if len(after) < ROUNDS_AFTER_RECOVERY:
            problems.append(
                f"table {table_id}: {len(after)} rounds acknowledged after the fault was healed "
                f"(after round {marks[table_id]}), fewer than {ROUNDS_AFTER_RECOVERY}"
            )
        if journal.last_rounds[table_id] != max(rounds, default=0):
            problems.append(
                f"table {table_id}: Redis's last round is {journal.last_rounds[table_id]}, the "
                f"agent's last acknowledged lockout {max(rounds, default=0)}"
            )
    return problems


def check_processes(rig: Rig) -> list[str]:
    """Every controller the scenario did not stop for good still runs (none crashed)."""
    return [
        f"controller {index + 1} is not running:\n{controller.log_tail()}"
        for index, controller in enumerate(rig.controllers)
        if index not in rig.down
        and (controller.process is None or controller.process.poll() is not None)
    ]


def check_no_stop(journal: Journal) -> list[str]:
    """No table found Redis missing what it had been acknowledged (no link group stopped)."""
    return [
        f"the link group stopped: {e.get('reason')}" for e in journal.of_type("link_group_stopped")
    ]


def verify(rig: Rig, marks: dict[str, int]) -> None:
    """Every check, and the fault's own; one failure lists every problem found."""
    journal = Journal(rig.redis.url, LINK_GROUP, TABLES)
    problems = [
        *check_tally(rig, journal),
        *check_exactly_once(rig, journal),
        *check_audit(rig),
        *check_kept_playing(rig, journal, marks),
        *check_processes(rig),
        *check_no_stop(journal),
    ]
    for check in rig.checks:
        problems += check(journal)
    assert not problems, "\n".join(problems) + f"\n(processes' logs in {rig.directory})"

"""The integration scenarios, again, on a Redis Cluster: lockout, settlement and its order,
voids and the lockout gate, the jackpot lifecycle, irregularities, maintenance and meter
controls, journal export and restore, reports and the audit (``jackpotctl`` with
``--redis-cluster``'s URL).

The tests are the integration suite's own, collected here once more: this folder's
``conftest.py`` points ``redis_url`` and ``redis_client`` at the cluster and checks that no
command names keys of more than one slot.
"""

from __future__ import annotations

from tests.integration.test_audit_and_cli import *  # noqa: F403
from tests.integration.test_controls import *  # noqa: F403
from tests.integration.test_idempotency_and_gate import *  # noqa: F403
from tests.integration.test_irregularities import *  # noqa: F403
from tests.integration.test_jackpot_lifecycle import *  # noqa: F403
from tests.integration.test_jackpots_cli import *  # noqa: F403

# A test reads its own module's helpers; only the names here clash ("play" of two modules).
from tests.integration.test_journal_export import *  # type: ignore[assignment]  # noqa: F403
from tests.integration.test_reports import *  # noqa: F403
from tests.integration.test_settlement import *  # noqa: F403

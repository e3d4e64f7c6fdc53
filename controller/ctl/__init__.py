"""``jackpotctl``: the operators' command line (:mod:`controller.ctl.main`).

Each command group is a module whose ``add_commands`` adds its parser and handlers
(``certificates``, ``audit``, ``journal``, ``restore``, ``link_groups``, ``meters``, ``tables``,
``rules``, ``hands``, ``odds``, ``jackpots``, ``irregularities``, ``reports``, ``days``,
``corrections``; ``controls`` and ``staged`` add to ``link-groups``, ``meters`` and ``tables``).
What they share sits below them: ``remote`` (calls to the controller), ``redis_access`` (Redis
named on the command line), ``gaming_days`` and ``report_common``.
"""

import os

# gRPC's transport logs ("Handshake failed with error SSL_ERROR_SSL ...") are not for the
# operator: jackpotctl says what is wrong in one sentence. Set before gRPC is imported;
# GRPC_VERBOSITY=ERROR in the environment keeps them.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

"""``jackpotctl``: the operators' command line (:mod:`controller.ctl.main`)."""

import os

# gRPC's transport logs ("Handshake failed with error SSL_ERROR_SSL ...") are not for the
# operator: jackpotctl says what is wrong in one sentence. Set before gRPC is imported;
# GRPC_VERBOSITY=ERROR in the environment keeps them.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

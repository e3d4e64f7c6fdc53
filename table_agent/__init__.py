"""The table agent: the simulated agent (``table-agent --sim``) and the dealer console."""

import os

# gRPC's transport logs ("Handshake failed with error SSL_ERROR_SSL ...") would land on the
# dealer's screen: the agent says what is wrong in one sentence (jackpot.tls.diagnose) and
# logs it. Set before gRPC is imported; GRPC_VERBOSITY=ERROR in the environment keeps them.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

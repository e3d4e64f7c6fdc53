"""The controller: progressive meters in Redis, settled over gRPC (see README.md).

It needs the ``controller`` extra (Redis and Prometheus clients, cryptography, gRPC health,
reflection and status details); the table agent, installed alone, has none of them.
"""

from importlib.util import find_spec

_NEEDED = ("redis", "prometheus_client", "cryptography", "grpc_health", "grpc_reflection")
_NEEDED_TOO = ("google.rpc",)  # googleapis-common-protos: the refusals' status details
_missing = [name for name in (*_NEEDED, *_NEEDED_TOO) if find_spec(name) is None]
if _missing:
    raise ImportError(
        f"the controller needs {', '.join(_missing)}, which this installation lacks: "
        "pip install 'table-jackpot[controller]'"
    )

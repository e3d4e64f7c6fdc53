"""The controller: progressive meters in Redis, settled over gRPC (see README.md).

It needs the ``controller`` extra (Redis and Prometheus clients, cryptography, gRPC health
and reflection); the table agent, installed alone, has none of them.
"""

from importlib.util import find_spec

_NEEDED = ("redis", "prometheus_client", "cryptography", "grpc_health", "grpc_reflection")
_missing = [name for name in _NEEDED if find_spec(name) is None]
if _missing:
    raise ImportError(
        f"the controller needs {', '.join(_missing)}, which this installation lacks: "
        "pip install 'table-jackpot[controller]'"
    )

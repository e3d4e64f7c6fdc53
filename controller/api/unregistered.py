"""Services added to the gRPC server without registering their methods.

A generated ``add_*Servicer_to_server`` adds a service's handlers twice: as a generic handler
and as registered methods. grpc.aio's accept loop keeps one pending request per registered
method and, for every call that arrives, waits on all of them (``asyncio.wait`` over the set,
about 50 here, each future's callbacks added and removed): at this project's 47 RPCs that
was about a twentieth of a round's instructions. Unregistered, every call comes through the
one generic request, and the interceptor resolves each method's handler once
(:class:`~controller.api.interceptor.ServerInterceptor`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import grpc
from grpc import aio

Servicer = TypeVar("Servicer")


class _GenericOnly:
    """``server`` as a generated ``add_*Servicer_to_server`` sees it: its handlers are added
    as generic ones only."""

    def __init__(self, server: aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(
        self, handlers: Sequence[grpc.GenericRpcHandler[Any, Any]]
    ) -> None:
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        """Left out: the same handlers are generic (see the module)."""


def add_unregistered(
    add: Callable[[Servicer, Any], None], servicer: Servicer, server: aio.Server
) -> None:
    """``add(servicer, server)``, ``add`` a generated ``add_*Servicer_to_server``, with the
    service's methods served through its generic handler only."""
    add(servicer, cast(aio.Server, _GenericOnly(server)))

"""Services added to the gRPC server without registering their methods.

A generated ``add_*Servicer_to_server`` adds a service's handlers twice: as a generic handler
and as registered methods. grpc.aio's accept loop keeps one pending request per registered
method and, for every call that arrives, waits on all of them (``asyncio.wait`` over the set,
each future's callbacks added and removed): with all 47 RPCs and health registered, about 2%
of a round's instructions. Unregistered, a service's calls come through the one generic
request, and the interceptor resolves each method's handler once
(:class:`~controller.api.interceptor.ServerInterceptor`). Only the tables' service stays
registered: with one pending request per method, a Lockout and a Settle that arrive together
are taken in one turn of the event loop; through the one generic request, every call of
every service was one more wake-up (strace: about one more per round with all unregistered).
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

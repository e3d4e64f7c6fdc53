"""Run one controller server in this process until SIGTERM or SIGINT (the entry point of
``jackpot-controller serve`` and of each ``--workers`` process).

The event loop is uvloop's when it is installed (the ``controller`` extra installs it; about
8% less CPU per round than asyncio's loop in ``make bench``), otherwise asyncio's. Once the
server serves, everything it allocated while starting is frozen out of the garbage collector
(:func:`gc.freeze`), so a collection during play walks only what play allocates.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from collections.abc import Callable

from controller.runtime.server import ControllerServer, ServerConfig

log = logging.getLogger("controller")


def run_server(config: ServerConfig, started: Callable[[], object] = lambda: None) -> None:
    """Serve ``config`` in this process until SIGTERM or SIGINT; call ``started`` once it
    serves. Raises :class:`OSError` or :class:`jackpot.errors.JackpotError` when it cannot
    start."""
    factory = _loop_factory()
    log.info("event loop: %s", "uvloop" if factory else "asyncio (uvloop is not installed)")
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(_serve(config, started))


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def _serve(config: ServerConfig, started: Callable[[], object]) -> None:
    server = ControllerServer(config)
    await server.start()
    gc.collect()
    gc.freeze()
    started()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    loop.add_signal_handler(signal.SIGHUP, server.reload)
    await stopping.wait()
    log.info("stopping: finishing calls in flight")
    await server.stop()

"""grpc.aio's "ExecuteBatchError raised in core" record: one INFO line, no traceback, and
nothing else gRPC logs is touched (controller.observability.logs.ClientGoneFilter)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from grpc._cython import cygrpc  # type: ignore[attr-defined]  # grpc.aio raises it

from controller.observability import logs

METHOD = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


def _log_as_grpc_aio(error: BaseException, message: str) -> None:
    """What grpc.aio's ``_handle_exceptions`` does: ``_LOGGER.exception(message, method)``."""
    server = logging.getLogger(logs.GRPC_SERVER_LOGGER)
    try:
        raise error
    except BaseException:
        server.exception(message, METHOD)


@pytest.fixture
def grpc_server_logger() -> Iterator[logging.Logger]:
    server = logging.getLogger(logs.GRPC_SERVER_LOGGER)
    filters = list(server.filters)
    server.addFilter(logs.ClientGoneFilter())
    yield server
    server.filters[:] = filters  # its level is caplog's to restore


def test_a_call_whose_client_went_away_is_one_info_line(
    grpc_server_logger: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logs.GRPC_SERVER_LOGGER)
    failed = cygrpc.ExecuteBatchError('Failed "execute_batch": (SendStatusFromServerOperation,)')
    _log_as_grpc_aio(failed, "ExecuteBatchError raised in core by servicer method [%s]")
    (record,) = caplog.records
    assert record.levelno == logging.INFO and record.exc_info is None
    assert record.getMessage() == (
        f"a call to {METHOD} ended before its status was sent: its client went away"
    )
    assert "Traceback" not in caplog.text


def test_below_info_the_line_is_dropped(
    grpc_server_logger: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logs.GRPC_SERVER_LOGGER)
    _log_as_grpc_aio(cygrpc.ExecuteBatchError("x"), "ExecuteBatchError raised in core [%s]")
    assert caplog.records == []


def test_any_other_grpc_error_keeps_its_traceback(
    grpc_server_logger: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logs.GRPC_SERVER_LOGGER)
    _log_as_grpc_aio(ValueError("a bug"), "Unexpected [ValueError] raised by servicer [%s]")
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "Traceback" in caplog.text


def test_configure_installs_the_filter_once() -> None:
    server = logging.getLogger(logs.GRPC_SERVER_LOGGER)
    filters = list(server.filters)
    try:
        logs.configure("INFO")
        logs.configure("INFO")
        assert sum(isinstance(f, logs.ClientGoneFilter) for f in server.filters) == 1
    finally:
        server.filters[:] = filters  # the root handler is removed by tests/conftest.py

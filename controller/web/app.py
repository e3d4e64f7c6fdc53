"""The controller's web port: routes, authentication and refusals.

* ``GET /sign/<group>`` and ``GET /sign/<group>/events`` — the meter sign of a link group
  and its server-sent events: the ``display`` role;
* ``GET /floor`` and ``GET /floor/state`` — the floor view and its data (JSON, cents):
  supervisors, operators, auditors and the cage (the roles that may list jackpots);
* ``POST /floor/review`` — approve or reject a pending jackpot: supervisors. The body names
  the amount the supervisor confirmed (``amount_cents``); another amount than the record's
  (a stale page) is refused 409 and changes nothing;
* ``POST /floor/paid`` — record the hand-pay of an approved jackpot: the cage (``cashier``)
  only, with the amount confirmed and the cage's receipt (``note``, required), by the one
  path of ``jackpotctl jackpots paid`` (:func:`~controller.actions.jackpot_review.pay_jackpot`).
  Under a payout compliance policy it carries the tax-form reference (``tax_form_ref``) or
  override (``tax_form_override``) the jackpot needs, and is refused 409 naming what is
  missing (docs/payout-compliance.md);
* ``POST /floor/witness`` — a second person witnesses an approved jackpot's hand-pay:
  supervisors and cashiers other than its payer, with the amount confirmed, by the one path
  of ``jackpotctl jackpots witness`` (:func:`~controller.actions.jackpot_review.witness_jackpot`).

The roles are :data:`~controller.api.access.WEB_ACCESS`, beside the RPCs'.

The port speaks HTTPS with the gRPC port's certificate, key and client CA, and requires a
client certificate from that CA: the caller is the certificate's ``jackpot://<role>/<name>``
exactly as on gRPC (:class:`~controller.api.peers.Authenticator`, deny list included). With
``--insecure`` (loopback only, development) it speaks plain HTTP and every caller is the
development identity. The certificate files are read again for the next connection after
any of them changes (:class:`~controller.security.tls.WebCertificates`), as gRPC's are: a CA removed
from ``--client-ca`` is refused here too. Each connection's certificate is judged right
after its handshake, before any byte of its request is read: a revoked or unusable one is
answered 401 and closed at once, so it cannot hold the port's connections; one identity
holds at most :data:`MAX_CONNECTIONS_PER_CALLER` connections and
:data:`MAX_STREAMS_PER_CALLER` signs.

A review or a payment is a POST of a small JSON body, refused unless it comes from the floor
view's own origin: ``Origin`` must name this server (``Sec-Fetch-Site``, when the browser
sends it, must be ``same-origin``) and the body must be ``application/json`` (which no
cross-site form can send without a CORS preflight, never granted here). Every refusal is a
precise 4xx and changes nothing; the review itself takes the one path of
:func:`~controller.actions.jackpot_review.review_jackpot`.

The sign's events carry the names players read (:mod:`controller.web.display`) from the
Rules Submissions this controller was given; a link group of none shows its description.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Iterable
from importlib import resources
from typing import Any

from controller.actions.jackpot_review import (
    check_amount,
    pay_jackpot,
    review_jackpot,
    witness_jackpot,
)
from controller.api.access import WEB_ACCESS, check_role
from controller.api.limits import LogSampler
from controller.api.meter_watch import MeterWatcher
from controller.api.peers import Authenticator
from controller.domain.bounds import check_id, check_jackpot_id
from controller.domain.identity import Identity, Role
from controller.domain.payout_compliance import DEFAULT, PRESETS, WITNESS_ROLES, PayoutCompliance
from controller.domain.submission import RulesSubmission
from controller.observability.metrics import Metrics
from controller.security.tls import TLSFiles, WebCertificates
from controller.store.redis_store import RedisStore
from controller.web.display import SignDisplay, sign_displays
from controller.web.floor import FloorView
from controller.web.sign_feed import RecentWinners, sign_events
from jackpot import errors
from jackpot.money import MAX_METER_CENTS
from jackpot.web import sign
from jackpot.web.server import (
    HANDSHAKE_TIMEOUT_S,
    EventStream,
    Refused,
    Request,
    Response,
    WebServer,
    json_response,
    text,
)

log = logging.getLogger("controller.web")

MAX_BODY_BYTES = 4096
"""A review's or payment's body: a jackpot id, a decision, an amount and a note of at most
500 characters."""
MAX_STREAMS = 200
"""Signs open at once on one controller (each is one event per second, no Redis of its own)."""
MAX_STREAMS_PER_CALLER = 8
"""Signs open at once for one certificate (as WatchMeters streams per caller)."""
MAX_CONNECTIONS_PER_CALLER = 16
"""Connections open at once for one certificate (its signs, and a browser's few more)."""
FLOOR_PAGE = "floor.html"


class _MethodNotAllowed(errors.InvalidArgument):
    """A known path asked with the wrong method (405)."""


class _UnsupportedMedia(errors.InvalidArgument):
    """A body of another type than JSON (415)."""


_STATUS: tuple[tuple[type[errors.JackpotError], int], ...] = (
    (_MethodNotAllowed, 405),
    (_UnsupportedMedia, 415),
    (errors.Unauthenticated, 401),
    (errors.PermissionDenied, 403),
    (errors.InvalidArgument, 400),
    (errors.NotFound, 404),
    (errors.AlreadyExists, 409),
    (errors.FailedPrecondition, 409),
    (errors.ResourceExhausted, 429),
    (errors.CorruptRecord, 500),  # the server's own record: not the request's fault
    (errors.StoreUnavailable, 503),
)
"""The HTTP status of each refusal (as :mod:`controller.api.status` maps them to gRPC)."""


def _status_of(error: errors.JackpotError) -> int:
    return next((status for kind, status in _STATUS if isinstance(error, kind)), 400)


class WebApp:
    """The sign and the floor view of one controller, on ``host``:``port``."""

    def __init__(
        self,
        store: RedisStore,
        metrics: Metrics,
        watcher: MeterWatcher,
        authenticator: Authenticator,
        *,
        host: str,
        port: int,
        tls: TLSFiles | None,
        handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S,
        rules: Iterable[RulesSubmission] = (),
        payout_compliance: PayoutCompliance = PRESETS[DEFAULT],
    ) -> None:
        self._store = store
        rules = tuple(rules)
        self._payout_compliance = payout_compliance
        self._displays = sign_displays(rules)
        self._metrics = metrics
        self._watcher = watcher
        self._authenticator = authenticator
        self._winners = RecentWinners(store)
        self._floor = FloorView(  # the first submission declaring a gaming day
            store,
            next((r.gaming_day for r in rules if r.gaming_day), None),
            payout_compliance,
        )
        self._log_sampler = LogSampler()
        self.server = WebServer(
            host,
            port,
            self.handle,
            ssl_context=WebCertificates(tls) if tls else None,
            admit=self.admit,
            max_streams=MAX_STREAMS,
            max_streams_per_peer=MAX_STREAMS_PER_CALLER,
            max_connections_per_peer=MAX_CONNECTIONS_PER_CALLER,
            max_body=MAX_BODY_BYTES,
            handshake_timeout_s=handshake_timeout_s,
        )

    @property
    def port(self) -> int:
        """The port served (after :meth:`start`)."""
        return self.server.port

    async def start(self) -> None:
        """Open the port (:class:`OSError` when it cannot be had)."""
        await self.server.start()

    async def close(self) -> None:
        """Close the port and every open sign."""
        await self.server.close()

    def identify(self, request: Request) -> Identity:
        """The caller of ``request``, as gRPC would identify it (:class:`Unauthenticated`)."""
        return self._authenticator.identify_der(request.peer_der)

    def admit(self, der: bytes | None) -> str:
        """A connection's caller, judged at its handshake: its identity, or :class:`Refused`
        (401) for a revoked or unusable certificate, counted and logged (sampled)."""
        try:
            return self._authenticator.identify_der(der).uri
        except errors.AccessDenied as error:
            self._metrics.access_denied.labels("/connect", "none", error.reason).inc()
            self._log(f"connection {error.reason}", "web: refused a connection: %s", error)
            raise Refused(_status_of(error), str(error)) from None

    def _log(self, key: str, message: str, *args: object) -> None:
        unlogged = self._log_sampler.sample(key)
        if unlogged is not None:
            since = f" ({unlogged} more since the last line)" if unlogged else ""
            log.warning(message + "%s", *args, since)

    async def handle(self, request: Request) -> Response | EventStream:
        """Answer ``request``; a refusal is the precise status and message of its error."""
        try:
            return await self._route(request)
        except errors.AccessDenied as error:
            self._count_denied(request, error)
            return text(_status_of(error), str(error))
        except errors.JackpotError as error:
            return text(_status_of(error), str(error))

    def _count_denied(self, request: Request, error: errors.AccessDenied) -> None:
        """Log a refusal for who made the request and count it in
        ``jackpot_access_denied_total`` beside the RPCs' (``grpc_method`` is the page:
        ``/sign``, ``/floor``; ``role`` is the certificate's, or ``none``)."""
        try:
            role = self.identify(request).role.value
        except errors.AccessDenied:
            role = "none"
        page = "/" + request.path.strip("/").split("/", 1)[0][:16]
        self._metrics.access_denied.labels(page, role, error.reason).inc()
        self._log(
            f"{request.peer} {error.reason}", "web: refused %s: %s", request.path[:100], error
        )

    async def _route(self, request: Request) -> Response | EventStream:
        caller = self.identify(request)
        parts = request.path.strip("/").split("/")
        if parts[0] == "sign" and len(parts) in (2, 3) and parts[-1] != "":
            check_role("/sign", caller, WEB_ACCESS)
            _method(request, "GET")
            link_group_id = check_id(parts[1], "link group id")
            group = await self._store.catalog.get_link_group(link_group_id)  # NotFound: 404
            if len(parts) == 2:
                return Response(200, sign.page(), "text/html; charset=utf-8")
            if parts[2] == "events":
                shown = self._displays.get(link_group_id)
                if shown is None:
                    shown = SignDisplay(group.description or link_group_id)
                events = sign_events(self._watcher, self._winners, link_group_id, shown.as_json())
                return EventStream(self._while_not_revoked(caller, events))
        elif parts[0] == "floor" and len(parts) <= 2:
            page = parts[1] if len(parts) == 2 else ""
            if page == "review":
                check_role("/floor/review", caller, WEB_ACCESS)
                _method(request, "POST")
                return await self._review(request, caller)
            if page == "paid":
                check_role("/floor/paid", caller, WEB_ACCESS)
                _method(request, "POST")
                return await self._paid(request, caller)
            if page == "witness":
                check_role("/floor/witness", caller, WEB_ACCESS)
                _method(request, "POST")
                return await self._witness(request, caller)
            check_role("/floor", caller, WEB_ACCESS)
            _method(request, "GET")
            if page == "":
                return Response(200, _floor_page(), "text/html; charset=utf-8")
            if page == "state":
                state = dict(await self._floor.snapshot())
                state["caller"] = caller.uri
                state["can_review"] = caller.role in (Role.SUPERVISOR, Role.INSECURE)
                state["can_pay"] = caller.role in (Role.CASHIER, Role.INSECURE)
                state["can_witness"] = caller.role in WITNESS_ROLES | {Role.INSECURE}
                return json_response(200, state)
        raise errors.NotFound(
            f"no page at {request.path[:100]!r}; the pages are /sign/<link group id> and /floor"
        )

    async def _while_not_revoked(
        self, caller: Identity, events: AsyncGenerator[bytes, None]
    ) -> AsyncGenerator[bytes, None]:
        """``events`` until ``caller``'s certificate is revoked (the deny list is read
        again within a second of a change), as gRPC ends a revoked caller's streams."""
        try:
            async for chunk in events:
                try:
                    self._authenticator.check_not_revoked(caller)
                except errors.Unauthenticated:
                    log.warning("sign of %s ended: its certificate is revoked", caller)
                    return
                yield chunk
        finally:
            await events.aclose()

    async def _review(self, request: Request, caller: Identity) -> Response:
        _same_origin(request)
        fields = _fields(request.body, {"jackpot_id", "decision", "note", "amount_cents"})
        if fields.get("decision") not in ("approve", "reject"):
            raise errors.InvalidArgument("decision must be 'approve' or 'reject'")
        record = await review_jackpot(
            self._store,
            self._metrics,
            caller,
            fields["jackpot_id"],
            fields.get("note", ""),
            approve=fields["decision"] == "approve",
            expected_cents=fields["amount_cents"],
        )
        self._floor.forget()
        return json_response(
            200,
            {
                "jackpot_id": record.jackpot_id,
                "status": record.status,
                "reviewed_by": record.reviewed_by,
                "note": record.note,
            },
        )

    async def _paid(self, request: Request, caller: Identity) -> Response:
        _same_origin(request)
        fields = _fields(
            request.body,
            {"jackpot_id", "note", "amount_cents", "tax_form_ref", "tax_form_override"},
        )
        record = await pay_jackpot(
            self._store,
            caller,
            fields["jackpot_id"],
            fields.get("note", ""),
            expected_cents=fields["amount_cents"],
            require_note=True,
            policy=self._payout_compliance,
            tax_form_ref=fields.get("tax_form_ref", ""),
            tax_form_override=fields.get("tax_form_override", ""),
        )
        self._floor.forget()
        answer = {
            "jackpot_id": record.jackpot_id,
            "status": record.status,
            "paid_by": record.paid_by,
            "paid_note": record.paid_note,
        }
        if record.payout_compliance or record.witnessed_by:  # docs/payout-compliance.md
            answer |= {
                "tax_form_ref": record.tax_form_ref,
                "tax_form_override": record.tax_form_override,
                "witnessed_by": record.witnessed_by,
            }
        return json_response(200, answer)

    async def _witness(self, request: Request, caller: Identity) -> Response:
        """The floor view's Witness button: as ``WitnessJackpotPayment``, after the amount
        the person confirmed is checked (a stale page is refused)."""
        _same_origin(request)
        fields = _fields(request.body, {"jackpot_id", "note", "amount_cents"})
        await check_amount(
            self._store, check_jackpot_id(fields["jackpot_id"]), fields["amount_cents"]
        )
        record = await witness_jackpot(
            self._store, caller, fields["jackpot_id"], fields.get("note", "")
        )
        self._floor.forget()
        return json_response(
            200,
            {
                "jackpot_id": record.jackpot_id,
                "status": record.status,
                "witnessed_by": record.witnessed_by,
            },
        )


def _floor_page() -> bytes:
    return resources.files("controller.web").joinpath(FLOOR_PAGE).read_bytes()


def _method(request: Request, allowed: str) -> None:
    if request.method != allowed:
        raise _MethodNotAllowed(f"{request.path[:100]} takes {allowed} only, not {request.method}")


def _same_origin(request: Request) -> None:
    """Refuse a request that a page of another origin could have made (403, 415)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        raise errors.PermissionDenied(
            "cross_site", f"a review must come from the floor view itself (Sec-Fetch-Site {site!r})"
        )
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    if origin != f"{request.scheme}://{host}":
        raise errors.PermissionDenied(
            "cross_site",
            f"a review must come from the floor view itself: Origin {str(origin)[:80]!r} is not "
            f"{request.scheme}://{host[:80]}",
        )
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise _UnsupportedMedia(f"a review is application/json, not {content_type[:60]!r}")


def _fields(body: bytes, allowed: set[str]) -> dict[str, Any]:
    """A review's or payment's fields, of ``allowed``: ``jackpot_id`` (required),
    ``decision`` and ``note`` strings, ``amount_cents`` (required) the integer of cents the
    person confirmed (the store step and the review's function check their content)."""
    try:
        data: Any = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise errors.InvalidArgument("the body is not JSON") from None
    if not isinstance(data, dict):
        raise errors.InvalidArgument("the body must be a JSON object")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise errors.InvalidArgument(f"unknown fields {', '.join(unknown)[:100]}")
    for name in ("jackpot_id", "decision", "note", "tax_form_ref", "tax_form_override"):
        if name in data and not isinstance(data[name], str):
            raise errors.InvalidArgument(f"{name} must be a string")
    if "jackpot_id" not in data:
        raise errors.InvalidArgument("jackpot_id is required")
    amount = data.get("amount_cents")
    if amount is None:
        raise errors.InvalidArgument(
            "amount_cents is required: the amount the person confirmed, in cents"
        )
    if type(amount) is not int or not 0 <= amount <= MAX_METER_CENTS:  # as the gRPC check
        raise errors.InvalidArgument("amount_cents must be a whole number of cents")
    return data

"""The webhook's HTTP face: a Flask app that adapts AdmissionReview requests to ``common.contract.admission``.

All judgement lives in ``common.contract.admission`` (shared with ``cosctl validate``); this module only reads a
bounded body, parses it (``webhook.review``), calls the decision function of the route, writes the
response, counts it and logs one line about it. Whatever goes wrong, the answer is never a 500 and never
contains a traceback or any part of the object under review.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from flask import Flask, Response, request
from werkzeug.exceptions import BadRequest

from common.contract import admission
from common.contract.admission import AccessReview, Config, Decision, Request
from webhook import logs, metrics
from webhook.review import (
    COS,
    DEFAULT_MAX_BODY_BYTES,
    SECRET,
    TOO_DEEP,
    BodyTooLarge,
    Expected,
    MalformedReview,
    TooDeep,
    encode,
    parse,
)

log = logging.getLogger("cos_webhook.admission")

DEFAULT_BODY_TIMEOUT = 10.0  # seconds; the API server's default webhook timeout

Judge = Callable[[Request, Config], Decision]


@dataclass(frozen=True, slots=True)
class Route:
    path: str
    stage: str  # "validate" or "mutate"
    expected: Expected
    judge: Judge


def _noop(req: Request, config: Config) -> Decision:
    """The bench baseline: same parsing and encoding, no judgement."""
    return admission.allowed()


def routes(noop: bool = False, access: AccessReview | None = None) -> list[Route]:
    """The four admission routes. ``access`` (``--authorize-service-accounts``) adds the check that whoever
    names a ServiceAccount on a COS may use it."""
    def validate_with_access(req: Request, config: Config) -> Decision:
        return admission.validate(req, config, access=access)

    validate: Judge = _noop if noop else (admission.validate if access is None else validate_with_access)
    mutate: Judge = _noop if noop else admission.mutate
    return [
        Route("/validate/clusterobjectsets", "validate", COS, validate),
        Route("/mutate/clusterobjectsets", "mutate", COS, mutate),
        Route("/validate/secrets", "validate", SECRET, validate),
        Route("/mutate/secrets", "mutate", SECRET, mutate),
    ]


def internal_error(uid: str) -> Decision:
    """A denial for a bug in the webhook: says so without detail; the log has the exception site."""
    return admission.Decision(False, status={
        "metadata": {}, "status": "Failure", "reason": "InternalError", "code": 500,
        "message": f"internal error in the ClusterObjectSet admission webhook (request uid {uid})"})


def _warm_up(config: Config) -> bool:
    """Run one review of each kind so rule tables compile at start, not on the first real request."""
    samples = [
        Request(COS.kind, "CREATE", {"apiVersion": "olm.operatorframework.io/v1", "kind": COS.kind,
                                     "metadata": {"name": "warm-up"},
                                     "spec": {"revision": 1, "lifecycleState": "Active",
                                              "collisionProtection": "Prevent", "phases": []}}),
        Request(SECRET.kind, "CREATE", {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                        "metadata": {"name": "warm-up", "namespace": "default"}}),
    ]
    try:
        for sample in samples:
            admission.review(sample, config)
    except Exception as exc:  # reported through /readyz and the log
        log.error("admission logic failed its warm-up", extra={"fields": {
            "event": "warm_up", "exception": logs.exception_site(exc)}})
        return False
    return True


def create_app(config: Config = Config(), *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               body_timeout: float = DEFAULT_BODY_TIMEOUT, noop: bool = False,
               access: AccessReview | None = None) -> Flask:
    """The webhook application. ``noop`` answers every review "allowed" unjudged: for the bench only.
    ``access`` sends SubjectAccessReviews for the ServiceAccount check (off when ``None``)."""
    logs.setup()
    app = Flask("cos_webhook")
    app.config["MAX_CONTENT_LENGTH"] = None  # the limit is enforced below, with a 400 as the spec asks
    ready = noop or _warm_up(config)

    def handle(route: Route) -> Response:
        started = time.perf_counter()
        fields: dict[str, object] = {"event": "admission", "route": route.path}

        def malformed(exc: MalformedReview, fields: dict[str, object]) -> Response:
            fields.update(status=400, reason=str(exc))
            metrics.REQUESTS.labels(route.stage, route.expected.kind, "", "malformed").inc()
            metrics.DURATION.labels(route.stage).observe(time.perf_counter() - started)
            resp = Response(str(exc) + "\n", status=400, mimetype="text/plain")
            if isinstance(exc, BodyTooLarge):
                resp.headers["Connection"] = "close"  # do not drain the rest of an oversized body
            log.warning("malformed admission review", extra={"fields": _done(fields, started)})
            return resp

        try:
            body = _read_body(max_body_bytes, body_timeout)
            fields["read_ms"] = read_ms = _ms(started)
            review = parse(body, route.expected, max_body_bytes)
            fields["parse_ms"] = _ms(started) - read_ms
        except MalformedReview as exc:
            return malformed(exc, fields)
        req = review.request
        fields.update(uid=review.uid, kind=req.kind, operation=req.operation, name=req.name,
                      namespace=req.namespace, dry_run=req.dry_run)
        judging = time.perf_counter()
        try:
            decision = route.judge(req, config)
            result = "allowed" if decision.allowed else "denied"
        except RecursionError:
            # Legal JSON nested deeper than a validator can follow: as undecodable as a body too deep to parse.
            return malformed(TooDeep(TOO_DEEP), fields)
        except Exception as exc:  # a bug must not become a 500 with a traceback
            decision = internal_error(review.uid)
            result = "error"
            fields["exception"] = logs.exception_site(exc)
        fields["judge_ms"] = _ms(judging)
        fields.update(allowed=decision.allowed, code=(decision.status or {}).get("code", 200),
                      warnings=len(decision.warnings), patch_ops=len(decision.patch))
        try:
            out = encode(review.uid, decision)
        except Exception as exc:  # e.g. a value the logic put in a message that JSON cannot carry
            decision, result = internal_error(review.uid), "error"
            fields.update(exception=logs.exception_site(exc), allowed=False, code=500)
            out = encode(review.uid, decision)
        metrics.REQUESTS.labels(route.stage, req.kind, req.operation, result).inc()
        metrics.DURATION.labels(route.stage).observe(time.perf_counter() - started)
        (log.error if result == "error" else log.info)("admission review", extra={"fields": _done(fields, started)})
        return Response(out, status=200, mimetype="application/json")

    for route in routes(noop, access):
        app.add_url_rule(route.path, endpoint=route.path, view_func=lambda route=route: handle(route),
                         methods=["POST"])

    @app.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @app.get("/readyz")
    def readyz() -> Response:
        if ready:
            return Response("ok\n", mimetype="text/plain")
        return Response("admission logic failed to initialise (see log)\n", status=503, mimetype="text/plain")

    @app.get("/metrics")
    def metrics_view() -> Response:
        body, content_type = metrics.exposition()
        return Response(body, content_type=content_type)

    return app


def _read_body(limit: int, timeout: float) -> bytes:
    """The request body, reading at most ``limit + 1`` bytes whatever Content-Length claims.

    A client that stops sending mid-body would otherwise hold a worker thread forever; the API server
    gives up on a webhook after at most 30 s anyway.
    """
    length = request.content_length
    if length is not None and length > limit:
        raise BodyTooLarge(f"request body exceeds {limit} bytes")
    sock = request.environ.get("gunicorn.socket")
    if sock is not None:
        sock.settimeout(timeout)
    try:
        body = request.stream.read(limit + 1)
    except BadRequest:  # werkzeug's ClientDisconnected: fewer bytes arrived than Content-Length announced
        raise MalformedReview("request body ended before Content-Length bytes arrived") from None
    except (TimeoutError, OSError):
        raise MalformedReview(f"request body did not arrive within {timeout:g} s") from None
    if len(body) > limit:
        raise BodyTooLarge(f"request body exceeds {limit} bytes")
    if length is not None and len(body) < length:
        raise MalformedReview("request body ended before Content-Length bytes arrived")
    return body


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def _done(fields: dict[str, object], started: float) -> dict[str, object]:
    fields["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
    return fields

"""The AdmissionReview v1 wire format: bytes in, ``common.contract.admission.Request`` out, ``Decision`` back to bytes.

Everything the API server can get wrong (or an attacker can send) is caught here, before any admission
logic runs, and raised as ``MalformedReview`` with a short reason that the HTTP layer answers with a plain
400. A malformed review is never judged, never crashes the worker and never echoes the body back: the
reasons name fields and limits, never values, because a Secret review carries Secret data.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from common.contract import api
from common.contract.admission import Decision, Request
from common.contract.serviceaccount import UserInfo

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")

# Object + oldObject can each approach etcd's 1.5 MiB limit; JSON escaping and the review envelope add more.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
# Nesting depth is bounded by the JSON decoder itself: past Python's recursion limit (~1000 levels) it raises
# RecursionError, answered as a 400 like any other undecodable body. Depths below that are judged; should a
# validator still run out of stack on one, the app answers the same 400 (``TooDeep``). A separate depth walk
# over every parsed body would cost a third of the no-op handler's time on a maximal review.
TOO_DEEP = "request body nests too deeply"
# The API server rejects warnings of 256 characters or more; keep each strictly below in bytes as well.


class MalformedReview(ValueError):
    """The body is not an AdmissionReview v1 request we can judge. ``str()`` is the short 400 reason."""


class BodyTooLarge(MalformedReview):
    """The body is over the configured limit; it was not read past the limit."""


class TooDeep(MalformedReview):
    """The body nests deeper than the decoder (or a validator) can follow."""


@dataclass(frozen=True, slots=True)
class Review:
    """A parsed AdmissionReview request: the uid to echo and what the decision depends on."""

    uid: str
    request: Request
    group: str
    resource: str


@dataclass(frozen=True, slots=True)
class Expected:
    """What a route accepts: the kind (and its API group) the webhook configuration sends to it."""

    kind: str
    group: str


COS = Expected(api.KIND, api.GROUP)
SECRET = Expected("Secret", "")


def _reject_constant(name: str) -> Any:
    raise MalformedReview(f"request body is not valid JSON: {name} is not a JSON value")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _replace_lone_surrogates(node: Any) -> Any:
    """Go's decoder turns an unpaired ``\\uD800``-style escape into U+FFFD; Python keeps an unencodable
    surrogate that would break every later ``.encode()``. Do as the API server does."""
    if isinstance(node, str):
        return _LONE_SURROGATE.sub("\ufffd", node)
    if isinstance(node, list):
        return [_replace_lone_surrogates(v) for v in node]
    if isinstance(node, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v) for k, v in node.items()}
    return node


def decode_json(body: bytes) -> Any:
    """Strict JSON decoding: UTF-8 only (no BOM sniffing of other encodings), no NaN/Infinity.

    orjson takes every well-formed body (about 5x the stdlib's speed on a maximal review). What it refuses
    goes through the stdlib decoder, which names the reason and treats the two things orjson refuses but
    the API server accepts as the API server does: integers beyond 64 bits, and unpaired ``\\uD800``-style
    escapes (turned into U+FFFD)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    return _decode_stdlib(body)


def _decode_stdlib(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedReview("request body is not valid UTF-8") from None
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
        if b"\\ud" in body or b"\\uD" in body:  # only escapes can produce surrogates; rare, so checked lazily
            doc = _replace_lone_surrogates(doc)
        return doc
    except MalformedReview:
        raise
    except RecursionError:
        raise TooDeep(TOO_DEEP) from None
    except ValueError as exc:
        # JSONDecodeError carries line/column only; int conversion limits carry no value either.
        where = f" (line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise MalformedReview(f"request body is not valid JSON{where}") from None


def _field(obj: dict[str, Any], key: str, path: str, types: type | tuple[type, ...], required: bool = False,
           type_name: str = "") -> Any:
    value = obj.get(key)
    if value is None:
        if required:
            raise MalformedReview(f"{path} is required")
        return None
    if not isinstance(value, types):
        raise MalformedReview(f"{path} must be {type_name}")
    return value


def parse(body: bytes, expected: Expected, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Review:
    """Turn a request body into a ``Review``, or raise ``MalformedReview`` saying what is wrong."""
    if len(body) > max_body_bytes:
        raise BodyTooLarge(f"request body exceeds {max_body_bytes} bytes")
    if not body.strip():
        raise MalformedReview("request body is empty")
    doc = decode_json(body)
    if not isinstance(doc, dict):
        raise MalformedReview("request body must be a JSON object (an AdmissionReview)")
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
        raise MalformedReview(f"expected apiVersion {API_VERSION} and kind {KIND}")
    req = _field(doc, "request", "request", dict, required=True, type_name="an object")
    uid = _field(req, "uid", "request.uid", str, required=True, type_name="a string")
    if not uid:
        raise MalformedReview("request.uid must not be empty")
    operation = _field(req, "operation", "request.operation", str, required=True, type_name="a string")
    if operation not in OPERATIONS:
        raise MalformedReview("request.operation must be one of " + ", ".join(OPERATIONS))
    gvk = _field(req, "kind", "request.kind", dict, type_name="an object")
    if gvk is not None:
        kind = _field(gvk, "kind", "request.kind.kind", str, type_name="a string")
        group = _field(gvk, "group", "request.kind.group", str, type_name="a string") or ""
        if kind != expected.kind or group != expected.group:
            wanted = f"{expected.group}/{expected.kind}" if expected.group else expected.kind
            raise MalformedReview(f"request.kind must be {wanted} on this route")
    resource = _field(req, "resource", "request.resource", dict, type_name="an object") or {}
    resource_name = _field(resource, "resource", "request.resource.resource", str, type_name="a string") or ""
    obj = _field(req, "object", "request.object", dict, type_name="an object")
    old = _field(req, "oldObject", "request.oldObject", dict, type_name="an object")
    name = _field(req, "name", "request.name", str, type_name="a string") or ""
    namespace = _field(req, "namespace", "request.namespace", str, type_name="a string") or ""
    dry_run = _field(req, "dryRun", "request.dryRun", bool, type_name="a boolean") or False
    if operation in ("CREATE", "UPDATE") and obj is None:
        raise MalformedReview(f"request.object is required for {operation}")
    user = _user_info(req)
    return Review(uid, Request(expected.kind, operation, obj, old, name, namespace, dry_run, user),
                  expected.group, resource_name)


def _user_info(req: dict[str, Any]) -> UserInfo | None:
    """``request.userInfo``: who asked (the API server always sends it; a review without one is judged as
    coming from nobody, and a check that needs a user then denies)."""
    info = _field(req, "userInfo", "request.userInfo", dict, type_name="an object")
    if info is None:
        return None
    username = _field(info, "username", "request.userInfo.username", str, type_name="a string") or ""
    uid = _field(info, "uid", "request.userInfo.uid", str, type_name="a string") or ""
    groups = _field(info, "groups", "request.userInfo.groups", list, type_name="a list of strings") or []
    if not all(isinstance(g, str) for g in groups):
        raise MalformedReview("request.userInfo.groups must be a list of strings")
    extra = _field(info, "extra", "request.userInfo.extra", dict, type_name="an object") or {}
    pairs = []
    for key, values in sorted(extra.items()):
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise MalformedReview("request.userInfo.extra must map strings to lists of strings")
        pairs.append((key, tuple(values)))
    return UserInfo(username, uid, tuple(groups), tuple(pairs))


def response(uid: str, decision: Decision) -> dict[str, Any]:
    """The AdmissionReview v1 response object for ``decision``."""
    resp: dict[str, Any] = {"uid": uid, "allowed": decision.allowed}
    if decision.status is not None:
        resp["status"] = decision.status
    if decision.warnings:
        resp["warnings"] = list(decision.warnings)  # bounded where the decision was made
    if decision.patch:
        patch = orjson.dumps(list(decision.patch))
        resp["patchType"] = "JSONPatch"
        resp["patch"] = base64.b64encode(patch).decode("ascii")
    return {"apiVersion": API_VERSION, "kind": KIND, "response": resp}


def encode(uid: str, decision: Decision) -> bytes:
    """Compact UTF-8 JSON (orjson: what the stdlib's ``separators=(",", ":")`` gives, non-ASCII unescaped)."""
    return orjson.dumps(response(uid, decision))

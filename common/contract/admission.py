"""Admission decisions as plain data: what the webhook answers and what ``cosctl validate`` prints.

The HTTP layer (``webhook/``) only translates the AdmissionReview wire format to a ``Request`` and a
``Decision`` back; the offline validator builds ``Request`` objects from files. Both therefore give the same
answer for the same input. The response builders mirror controller-runtime's ``Allowed``/``Denied``/
``Patched`` helpers.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonpatch

from common.contract import api, serviceaccount
from common.contract.fielderrors import FieldError, invalid_status
from common.contract.serviceaccount import UserInfo

Obj = dict[str, Any]
Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


@dataclass(frozen=True, slots=True)
class Config:
    """Settings an admin chooses at install time."""

    system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE


@dataclass(frozen=True, slots=True)
class Request:
    """The parts of an AdmissionReview request the decision depends on."""

    kind: str  # "ClusterObjectSet" or "Secret"
    operation: Operation
    object: Obj | None
    old_object: Obj | None = None
    name: str = ""
    namespace: str = ""
    dry_run: bool = False
    user: UserInfo | None = None   # who asked (AdmissionReview request.userInfo); None offline


# access(subject_access_review) -> whether the API server allows it: posts a SubjectAccessReview (the webhook's
# I/O, injected); raises AccessCheckFailed when no answer can be had.
AccessReview = Callable[[Obj], bool]


class AccessCheckFailed(Exception):
    """A SubjectAccessReview could not be answered (API server unreachable, the webhook not allowed to ask).
    ``str()`` says why, without any request content."""


@dataclass(frozen=True, slots=True)
class Decision:
    """An admission answer: allowed or denied (with a Kubernetes Status), plus warnings and a JSONPatch.

    Build it with the helpers below: they bound each warning as the API server requires."""

    allowed: bool
    status: Obj | None = None
    warnings: tuple[str, ...] = ()
    patch: tuple[Obj, ...] = ()
    errors: tuple[FieldError, ...] = field(default=(), compare=False)

    @property
    def message(self) -> str:
        return str((self.status or {}).get("message", ""))


MAX_WARNING_BYTES = 255


def bounded_warning(text: str) -> str:
    """A warning the API server accepts: printable, one line, under 256 bytes (cut at a character). Applied
    where decisions are made, so the webhook and ``cosctl validate`` print the same text."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    raw = flat.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_WARNING_BYTES:
        return flat
    return raw[:MAX_WARNING_BYTES - 3].decode("utf-8", errors="ignore") + "..."


def _warnings(warnings: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(bounded_warning(w) for w in warnings)


def allowed(warnings: list[str] | tuple[str, ...] = ()) -> Decision:
    return Decision(True, warnings=_warnings(warnings))


def patched(patch: list[Obj], warnings: list[str] | tuple[str, ...] = ()) -> Decision:
    return Decision(True, warnings=_warnings(warnings), patch=tuple(patch))


def denied(kind: str, name: str, errors: list[FieldError], warnings: list[str] | tuple[str, ...] = ()) -> Decision:
    """A 422 Invalid denial listing every violation, shaped exactly like the API server's own."""
    group = api.GROUP if kind == api.KIND else ""
    return Decision(False, status=invalid_status(kind, group, name, errors), warnings=_warnings(warnings),
                    errors=tuple(errors))


def bad_request(message: str) -> Decision:
    """A denial for a request that cannot be judged at all (e.g. an UPDATE without oldObject)."""
    return Decision(False, status={"code": 400, "reason": "BadRequest", "message": message,
                                   "status": "Failure", "metadata": {}})


def _name_of(req: Request, obj: Obj | None) -> str:
    if req.name:
        return req.name
    meta = (obj or {}).get("metadata")
    if isinstance(meta, dict):
        return str(meta.get("name") or meta.get("generateName") or "")
    return ""


def mutate(req: Request, config: Config = Config()) -> Decision:
    """The mutating webhook: defaults as a JSONPatch (idempotent), with warnings saying what was defaulted."""
    from common.contract import mutation, validation

    if req.operation not in ("CREATE", "UPDATE") or not isinstance(req.object, dict):
        return allowed()
    if req.kind == api.KIND:
        ops, warnings = mutation.cos_defaults(validation.prune_nulls(req.object), config.system_namespace,
                                              create=req.operation == "CREATE")
    elif req.kind == "Secret" and req.operation == "CREATE":
        ops, warnings = mutation.secret_defaults(req.object)
    else:
        return allowed()
    return patched(ops, warnings) if ops else allowed(warnings)


def service_account_errors(req: Request, access: AccessReview) -> list[FieldError]:
    """**(ours)** Whoever makes a COS name a ServiceAccount (on CREATE, or by changing the annotations on UPDATE)
    must be allowed to create tokens for it or to impersonate it: the reconciler writes the COS's objects with
    that ServiceAccount's rights, so naming one you cannot use would borrow rights you do not hold. One
    SubjectAccessReview per permission, stopping at the first allowed; none when the identity is unchanged.
    Raises :class:`AccessCheckFailed` when the API server cannot answer."""
    ref = serviceaccount.needs_authorization(req.operation, req.object, req.old_object)
    if ref is None:
        return []
    user = req.user or UserInfo("")
    if user.username and any(access(review) for review in serviceaccount.access_reviews(user, ref)):
        return []
    return [serviceaccount.forbidden(user, ref)]


def access_unavailable(message: str) -> Decision:
    """The denial when the ServiceAccount check could not be made: fail closed, and say why (503, so clients
    see a server-side condition to retry rather than a problem with the object)."""
    return Decision(False, status={"code": 503, "reason": "ServiceUnavailable", "status": "Failure",
                                   "metadata": {}, "message": message})


def validate(req: Request, config: Config = Config(), *, access: AccessReview | None = None) -> Decision:
    """The validating webhook: every CRD rule plus the checks the CRD cannot express, all at once. With
    ``access`` (the webhook's ``--authorize-service-accounts``), also whether the requester may use the
    ServiceAccount the COS names (:func:`service_account_errors`)."""
    from common.contract import validation

    if req.operation not in ("CREATE", "UPDATE"):
        return allowed()
    if not isinstance(req.object, dict):
        return bad_request("request.object must be a JSON object")
    if req.operation == "UPDATE" and not isinstance(req.old_object, dict):
        return bad_request("UPDATE request without request.oldObject")
    old = req.old_object if req.operation == "UPDATE" else None
    name = _name_of(req, req.object)
    if req.kind == api.KIND:
        errors, warnings = validation.validate_cos(validation.prune_nulls(req.object),
                                                   validation.prune_nulls(old) if old is not None else None,
                                                   system_namespace=config.system_namespace)
        if access is not None:
            try:
                errors = [*errors, *service_account_errors(req, access)]
            except AccessCheckFailed as exc:
                return access_unavailable(str(exc))
    elif req.kind == "Secret":
        errors, warnings = validation.validate_secret(req.object, old)
    else:
        return allowed()
    if errors:
        return denied(req.kind, name, errors, warnings)
    return allowed(warnings)


def review(req: Request, config: Config = Config()) -> Decision:
    """Mutation then validation of the mutated object, as the API server runs them: the offline validator.

    Warnings of both stages are kept; the patch is the mutating stage's.
    """
    mutated = mutate(req, config)
    obj = req.object
    if mutated.patch and isinstance(obj, dict):
        obj = jsonpatch.apply_patch(copy.deepcopy(obj), list(mutated.patch))
    checked = validate(Request(req.kind, req.operation, obj, req.old_object, req.name, req.namespace,
                               req.dry_run, req.user), config)
    warnings = mutated.warnings + tuple(w for w in checked.warnings if w not in mutated.warnings)
    return Decision(checked.allowed, checked.status, warnings, mutated.patch, checked.errors)


@dataclass(frozen=True, slots=True)
class ClusterAnswer:
    """What an API server with this project's CRD and webhooks answers: ``decision`` and who gave it
    (``mutate`` or ``validate``: a webhook; ``crd``: the API server's own schema and CEL rules)."""

    decision: Decision
    stage: Literal["mutate", "crd", "validate"]


def on_cluster(req: Request, config: Config = Config()) -> ClusterAnswer:
    """``review`` as a cluster's API server runs it, stage by stage: the mutating webhook; then, for a COS,
    the CRD's schema and CEL rules (``validation.crd_errors``); then the validating webhook. Only the first
    stage that denies speaks, so authors on a cluster do not see every violation at once, as ``cosctl
    validate`` shows them."""
    from common.contract import validation

    mutated = mutate(req, config)
    if not mutated.allowed:
        return ClusterAnswer(mutated, "mutate")
    obj = req.object
    if mutated.patch and isinstance(obj, dict):
        obj = jsonpatch.apply_patch(copy.deepcopy(obj), list(mutated.patch))
    if req.kind == api.KIND and isinstance(obj, dict) and req.operation in ("CREATE", "UPDATE"):
        old = req.old_object if req.operation == "UPDATE" and isinstance(req.old_object, dict) else None
        errors = validation.crd_errors(validation.prune_nulls(obj),
                                       validation.prune_nulls(old) if old is not None else None)
        if errors:
            return ClusterAnswer(denied(req.kind, _name_of(req, obj), errors, mutated.warnings), "crd")
    checked = validate(Request(req.kind, req.operation, obj, req.old_object, req.name, req.namespace,
                               req.dry_run, req.user), config)
    warnings = mutated.warnings + tuple(w for w in checked.warnings if w not in mutated.warnings)
    return ClusterAnswer(Decision(checked.allowed, checked.status, warnings, mutated.patch, checked.errors),
                         "validate")

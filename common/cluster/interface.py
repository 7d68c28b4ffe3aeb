"""The cluster-access interface shared by the reconciler engine and the producer.

The engine and the publish logic are plain functions over this small interface, so they can be tested
against an in-memory API server (``common.testing.memcluster``) and run against a real one
(``common.cluster.kube``) unchanged. Errors are modelled on the Kubernetes ``Status`` object (like lightkube's
``ApiError``): every failure carries the server's reason, code and message, and code branches on the
exception class, never on message text.

Objects are plain ``dict`` manifests, exactly as the API server serves them. Implementations never return
objects that alias their own storage: callers may mutate what they get.
"""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from common.contract.objects import Obj


class ApiError(Exception):
    """A request the API server refused; carries the Kubernetes ``Status`` it answered with."""

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"

    def __init__(self, message: str, *, status: Obj | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status: Obj = status if status is not None else {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": self.reason,
            "code": self.code,
        }
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


class BadRequest(ApiError):
    code, reason = 400, "BadRequest"


class Unauthorized(ApiError):
    code, reason = 401, "Unauthorized"


class Forbidden(ApiError):
    code, reason = 403, "Forbidden"


class NotFound(ApiError):
    code, reason = 404, "NotFound"


class MethodNotAllowed(ApiError):
    code, reason = 405, "MethodNotAllowed"


class AlreadyExists(ApiError):
    code, reason = 409, "AlreadyExists"


class Conflict(ApiError):
    """Optimistic-concurrency failure (stale resourceVersion / precondition) or an apply field conflict."""

    code, reason = 409, "Conflict"


class Gone(ApiError):
    """A watch or list resourceVersion too old to resume from (HTTP 410): re-list."""

    code, reason = 410, "Expired"


class Invalid(ApiError):
    code, reason = 422, "Invalid"


class TooManyRequests(ApiError):
    code, reason = 429, "TooManyRequests"


class InternalError(ApiError):
    code, reason = 500, "InternalError"


class ServiceUnavailable(ApiError):
    code, reason = 503, "ServiceUnavailable"


class Timeout(ApiError):
    code, reason = 504, "Timeout"


class Unreachable(ServiceUnavailable):
    """The API server did not answer at all (connection refused or reset, TLS failure, timeout): no Status.
    ``cause`` is the connection's own error."""

    def __init__(self, message: str, cause: Exception) -> None:
        super().__init__(message)
        self.cause = cause


class UnknownKind(NotFound):
    """The API server does not serve this apiVersion/kind (yet): e.g. a CR whose CRD is in an earlier phase."""

    reason = "NotFound"


_BY_REASON: dict[str, type[ApiError]] = {
    cls.reason: cls
    for cls in (BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, AlreadyExists, Conflict,
                Gone, Invalid, TooManyRequests, InternalError, ServiceUnavailable, Timeout)
}
_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    409: Conflict, 410: Gone, 422: Invalid, 429: TooManyRequests, 500: InternalError,
    503: ServiceUnavailable, 504: Timeout,
}


def error_from_status(code: int, status: Obj | None, *, retry_after: float | None = None) -> ApiError:
    """Build the specific ``ApiError`` subclass for an HTTP error answer, keeping the server's message."""
    status = status if isinstance(status, dict) else {}
    reason = str(status.get("reason") or "")
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code) or (InternalError if code >= 500 else BadRequest)
    if reason == "Gone":
        cls = Gone
    message = str(status.get("message") or f"HTTP {code}")
    return cls(message, status=status or None, retry_after=retry_after)


@runtime_checkable
class Cluster(Protocol):
    """What the engine and the producer may ask of a Kubernetes API server.

    ``namespace`` is ``None`` or ``""`` for cluster-scoped objects. Every method raises an ``ApiError``
    subclass on failure; ``UnknownKind`` when the apiVersion/kind is not served.
    """

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        """Read one object (``NotFound`` when absent)."""

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             label_selector: str | None = None, *, limit: int | None = None) -> list[Obj]:
        """List objects of a kind, in one namespace or all (``None``), filtered by a label selector string
        in Kubernetes syntax (``a=b,c!=d,e in (f,g),!h``). ``limit``: at most that many (one page of that size;
        what "does any exist" needs, without reading them all)."""

    def create(self, obj: Obj, *, dry_run: bool = False, field_manager: str | None = None) -> Obj:
        """POST the object (``AlreadyExists`` when it exists); returns it as stored. ``field_manager`` names
        the writer in ``managedFields``; a later ``apply`` by the same manager takes over what it created."""

    def apply(self, obj: Obj, *, field_manager: str, force: bool = True, dry_run: bool = False) -> Obj:
        """Server-side apply (``application/apply-patch+yaml``): ``obj`` is the full intent of
        ``field_manager``; fields it stops declaring are released, fields other managers own survive.
        Fields ``field_manager`` set through its own ``create`` count as applied by it (see
        ``common.cluster.ownership``), so a field a later intent drops is released, not left behind."""

    def merge_patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Obj, *,
                    resource_version: str | None = None, subresource: str = "") -> Obj:
        """JSON merge patch (RFC 7386). With ``resource_version`` the patch carries
        ``metadata.resourceVersion`` and fails with ``Conflict`` when the object changed meanwhile.

        ``subresource="status"`` patches the ``status`` subresource: only ``status`` changes. It is how a
        controller writes status without sending the whole object back (a ClusterObjectSet of 1,000 objects is
        ~200 KB that a PUT makes the server decode and the client encode once more)."""

    def update(self, obj: Obj) -> Obj:
        """PUT the whole object; ``metadata.resourceVersion`` must be current (``Conflict`` otherwise)."""

    def update_status(self, obj: Obj) -> Obj:
        """PUT the ``status`` subresource; ``metadata.resourceVersion`` must be current."""

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               uid: str | None = None, resource_version: str | None = None,
               propagation_policy: str | None = None) -> Obj | None:
        """DELETE with optional uid/resourceVersion preconditions (``Conflict`` when they do not hold).

        Returns the object when the server answers with it, ``None`` when it answers a ``Status``. Either only
        says the deletion was accepted, never that the object is gone: an object with finalizers, a Namespace
        (its ``spec.finalizers``, until the namespace controller has emptied it) and a Pod bound to a node
        (its grace period) are marked with ``metadata.deletionTimestamp`` and stay; a Pod deleted at once is
        answered with its last state, marked too. Only a read (``NotFound``) or a watch's DELETED event says
        an object is gone."""

    def is_namespaced(self, api_version: str, kind: str) -> bool:
        """Whether the kind is namespaced, from discovery (``UnknownKind`` when not served)."""

    def resource_name(self, api_version: str, kind: str) -> str:
        """The kind's resource, as RBAC rules and URLs name it (``deployments``), from discovery (``UnknownKind``
        when not served)."""

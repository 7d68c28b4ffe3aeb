"""Whose rights a ClusterObjectSet's objects are written with, and who may name that identity.

OLM v1 never applies a revision with its controller's own rights: every COS carries the annotations
``olm.operatorframework.io/service-account-name`` and ``olm.operatorframework.io/service-account-namespace``
(a ClusterExtension sets them from its ``spec.serviceAccount`` and ``spec.namespace``), and every write for
its objects is made with a token of that ServiceAccount. A bundle can then do only what the admin granted
its ServiceAccount, and the audit log names who did what. This module is that rule as plain data:

- :func:`service_account` reads the identity off a COS, refusing a revision without it with OLM v1's own
  messages (byte for byte: tools and runbooks written for OLM v1 match on them). A COS with *neither*
  annotation may still be written with the reconciler's own identity when the admin allows it (the
  reconciler's ``--require-service-account`` is off): that is how COSs made before this existed keep working.
  A COS naming only half an identity is always refused: it never falls back to the stronger one.
- :func:`needs_authorization`, :func:`access_reviews` and :func:`forbidden` are the admission side **(ours)**:
  whoever creates a COS naming a ServiceAccount, or changes the identity an existing one names, must be able
  to act as that ServiceAccount already (create tokens for it, or impersonate it). Otherwise naming a
  stronger ServiceAccount would borrow its rights.

Pure functions, no I/O: the webhook sends the SubjectAccessReviews built here and the reconciler requests the
tokens (``common.cluster.kube``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from common.contract import api
from common.contract.fielderrors import FieldError
from common.contract.fielderrors import forbidden as field_forbidden
from common.contract.gotext import go_quote
from common.contract.objects import Obj

NAME_FIELD = f"metadata.annotations[{api.ANNOTATION_SERVICE_ACCOUNT_NAME}]"
SAR_API_VERSION = "authorization.k8s.io/v1"
SAR_KIND = "SubjectAccessReview"


class ServiceAccountMissing(ValueError):
    """A revision that names no (or only half a) ServiceAccount where one is required. ``str()`` is OLM v1's
    message, shown in the COS's ``Progressing``/``Retrying`` condition."""


@dataclass(frozen=True, slots=True, order=True)
class ServiceAccountRef:
    """A ServiceAccount by namespace and name."""

    namespace: str
    name: str

    @property
    def username(self) -> str:
        """The user the API server authenticates this ServiceAccount's tokens as (and audits writes by)."""
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> ServiceAccountRef:
        """``NAMESPACE/NAME`` (what ``cosctl publish --service-account`` takes); ``ValueError`` otherwise."""
        namespace, sep, name = text.strip().partition("/")
        if not sep or not namespace.strip() or not name.strip() or "/" in name:
            raise ValueError(f"{text!r} is not NAMESPACE/NAME")
        return cls(namespace.strip(), name.strip())


def _annotations(obj: Obj | None) -> Obj | None:
    meta = (obj or {}).get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations if isinstance(annotations, dict) and annotations else None


def _value(annotations: Obj, key: str) -> str:
    value = annotations.get(key)
    return value.strip() if isinstance(value, str) else ""   # OLM v1 trims (strings.TrimSpace)


def declares_service_account(cos: Obj) -> bool:
    """Whether the COS carries either annotation (even empty): it asked for an identity of its own."""
    annotations = _annotations(cos) or {}
    return (api.ANNOTATION_SERVICE_ACCOUNT_NAME in annotations
            or api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE in annotations)


def service_account(cos: Obj, *, required: bool) -> ServiceAccountRef | None:
    """The ServiceAccount whose rights the COS's objects are written with.

    ``None`` means "the reconciler's own identity", allowed only when not ``required`` and the COS carries
    neither annotation. Otherwise a missing or blank value raises :class:`ServiceAccountMissing` with OLM v1's
    message: no annotations at all, then the name, then the namespace, in that order, as OLM v1 checks them."""
    name = str((cos.get("metadata") or {}).get("name") or "")
    annotations = _annotations(cos)
    if not required and not declares_service_account(cos):
        return None
    if annotations is None:
        raise ServiceAccountMissing(f"revision {go_quote(name)} is missing required annotations")
    sa_name = _value(annotations, api.ANNOTATION_SERVICE_ACCOUNT_NAME)
    sa_namespace = _value(annotations, api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE)
    if not sa_name:
        raise ServiceAccountMissing(f"revision {go_quote(name)} is missing ServiceAccount name annotation")
    if not sa_namespace:
        raise ServiceAccountMissing(f"revision {go_quote(name)} is missing ServiceAccount namespace annotation")
    return ServiceAccountRef(sa_namespace, sa_name)


def with_service_account(cos: Obj, ref: ServiceAccountRef) -> Obj:
    """``cos`` with both annotations naming ``ref`` (changed in place and returned)."""
    meta = cos.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), api.ANNOTATION_SERVICE_ACCOUNT_NAME: ref.name,
                           api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE: ref.namespace}
    return cos


def declared(cos: Obj | None) -> ServiceAccountRef | None:
    """The ServiceAccount a COS names completely (both annotations non-blank), else ``None``."""
    annotations = _annotations(cos) or {}
    name = _value(annotations, api.ANNOTATION_SERVICE_ACCOUNT_NAME)
    namespace = _value(annotations, api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE)
    return ServiceAccountRef(namespace, name) if name and namespace else None


# --------------------------------------------------------------------------------------------- admission

@dataclass(frozen=True, slots=True)
class UserInfo:
    """The requesting user as the API server authenticated it (``AdmissionReview.request.userInfo``)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


def needs_authorization(operation: str, obj: Obj | None, old: Obj | None) -> ServiceAccountRef | None:
    """The ServiceAccount the requester must be allowed to use: the one a CREATE names, or the one an UPDATE
    newly names (a COS whose identity is unchanged is not judged again: the reconciler's own finalizer and
    status writes never are). A COS naming none, or only half of one, needs nothing here: the reconciler
    refuses to write it as anybody."""
    ref = declared(obj)
    if ref is None:
        return None
    if operation == "UPDATE" and declared(old) == ref:
        return None
    return ref if operation in ("CREATE", "UPDATE") else None


# (verb, subresource) pairs of which one suffices, in the order they are asked.
_USES = (("create", "token"), ("impersonate", ""))


def access_reviews(user: UserInfo, ref: ServiceAccountRef) -> list[Obj]:
    """The SubjectAccessReviews asking whether ``user`` may act as ``ref``: create tokens for it, or
    impersonate it (either suffices; the first allowed answer settles it)."""
    spec_user: Obj = {"user": user.username, "groups": list(user.groups)}
    if user.uid:
        spec_user["uid"] = user.uid
    if user.extra:
        spec_user["extra"] = {k: list(v) for k, v in user.extra}
    reviews = []
    for verb, subresource in _USES:
        attributes: Obj = {"namespace": ref.namespace, "verb": verb, "group": "", "resource": "serviceaccounts",
                           "name": ref.name}
        if subresource:
            attributes["subresource"] = subresource
        reviews.append({"apiVersion": SAR_API_VERSION, "kind": SAR_KIND,
                        "spec": {**spec_user, "resourceAttributes": attributes}})
    return reviews


def forbidden(user: UserInfo, ref: ServiceAccountRef) -> FieldError:
    """The 422 cause for a requester who may not use ``ref``, naming the permission that is missing."""
    return field_forbidden(NAME_FIELD, (
        f"user {go_quote(user.username)} may not use ServiceAccount {go_quote(ref.name)} in namespace "
        f"{go_quote(ref.namespace)}: it needs \"create\" on \"serviceaccounts/token\" or \"impersonate\" on "
        f"\"serviceaccounts\" for it (the objects of a ClusterObjectSet are written with the rights of the "
        f"ServiceAccount it names)"))


__all__ = ["NAME_FIELD", "ServiceAccountMissing", "ServiceAccountRef", "UserInfo", "access_reviews", "declared",
           "declares_service_account", "forbidden", "needs_authorization", "service_account",
           "with_service_account"]

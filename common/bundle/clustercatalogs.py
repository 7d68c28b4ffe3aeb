"""The cluster's ClusterCatalogs as OLM v1's resolver walks them: which it reads, in which order, from which image.

Why: an admin coming from OLM v1 keeps the catalogs they trust as ClusterCatalog objects (``olm.operatorframework.io/
v1``), each with a ``spec.priority``, labels that a ClusterExtension's ``spec.source.catalog.selector`` picks among,
and an ``availabilityMode`` to take one out of resolution without deleting it; catalogd unpacks each and says in
its status which image digest it serves. Resolving across them as operator-controller does (the same catalogs, the
same digests, the same priorities) gives the bundle operator-controller would pick, which is what a migration and
an unattended upgrade need. ``--catalog clustercatalogs:[SELECTOR]`` names them.

What is read of each, as operator-controller's ``CatalogWalker`` and catalog client read it: catalogs whose
``spec.availabilityMode`` is ``Unavailable`` are left out; a catalog left in must be served (condition ``Serving``
True, ``status.resolvedSource.image`` set) or resolution stops with OLM v1's message, as it waits for every catalog
it would read; its content is the image catalogd resolved (``status.resolvedSource.image.ref``, a digest), pulled
by cosctl rather than fetched from catalogd's HTTP server (which is in-cluster only).

Pure functions over the listed objects; listing them is the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from common.contract import api, fielderrors, names
from common.contract import labels as labelsel
from common.contract.objects import Obj

from .registryv1.gotext import go_quote
from .registryv1.imageref import DOCKER_TRANSPORT
from .registryv1.model import BundleError, BundleInputError
from .registryv1.resolve import ResolutionError

API_VERSION: Final = f"{api.GROUP}/v1"
KIND: Final = "ClusterCatalog"
REFERENCE_PREFIX: Final = "clustercatalogs:"
AVAILABILITY_UNAVAILABLE: Final = "Unavailable"
CONDITION_SERVING: Final = "Serving"


class ClusterCatalogsError(BundleInputError):
    """``clustercatalogs:SELECTOR`` that is not a label selector, or a cluster without the ClusterCatalog API."""


class ClusterCatalogsUnreadable(BundleError):
    """The cluster would not list its ClusterCatalogs (refused, unreachable): the cluster's answer, and the right
    that listing needs."""


def is_cluster_catalogs(reference: str) -> bool:
    """Whether a ``--catalog`` value (or a recorded one) names the cluster's ClusterCatalogs."""
    return reference.startswith(REFERENCE_PREFIX)


def reference_for(selector: str) -> str:
    """The ``--catalog`` value for the ClusterCatalogs ``selector`` picks (``""``: all)."""
    return REFERENCE_PREFIX + selector


def selector_of(reference: str) -> str:
    """The label selector of ``clustercatalogs:SELECTOR``, as given (surrounding blanks dropped). The API server
    parses it when the ClusterCatalogs are listed, and refuses it in its own words (``labels.Parse``); cosctl does
    not parse it again, so that what the server takes is taken."""
    return reference[len(REFERENCE_PREFIX):].strip()


# LabelSelector operators as operator-controller (metav1.LabelSelectorAsSelector) maps them.
_EXPRESSION_OPERATORS: Final = {"In": labelsel.OP_IN, "NotIn": labelsel.OP_NOT_IN, "Exists": labelsel.OP_EXISTS,
                                "DoesNotExist": labelsel.OP_DOES_NOT_EXIST}


def _requirement_errors(key: str, op: str, values: list[str]) -> list[fielderrors.FieldError]:
    """``labels.NewRequirement``'s checks, in its order and words: the key a qualified name, the number of values
    the operator takes, each value a label value."""
    errors = [fielderrors.invalid("key", key, "; ".join(problems)) for problems in [names.is_qualified_name(key)]
              if problems]
    shown = values or None   # Go prints an empty slice of values as null
    if op in (labelsel.OP_IN, labelsel.OP_NOT_IN) and not values:
        errors.append(fielderrors.invalid("values", shown, "for 'in', 'notin' operators, values set can't be empty"))
    elif op in (labelsel.OP_EQUALS, labelsel.OP_NOT_EQUALS) and len(values) != 1:
        errors.append(fielderrors.invalid("values", shown, "exact-match compatibility requires one single value"))
    elif op in (labelsel.OP_EXISTS, labelsel.OP_DOES_NOT_EXIST) and values:
        errors.append(fielderrors.invalid("values", shown, "values set must be empty for exists and does not exist"))
    for i, value in enumerate(values):
        if problems := names.is_valid_label_value(value):
            errors.append(fielderrors.invalid(f"values[{i}][{key}]", value, "; ".join(problems)))
    return errors


def selector_object_error(selector: dict[str, Any]) -> str | None:
    """What ``metav1.LabelSelectorAsSelector`` says of a ``LabelSelector`` whose fields have their types (strings;
    ``values`` a list of strings), as operator-controller says it after ``desired catalog selector is invalid: ``;
    None when it is valid. ``matchLabels`` are checked in key order (Go's map order is random)."""
    match_labels = selector.get("matchLabels") or {}
    for key in sorted(match_labels):
        if errors := _requirement_errors(key, labelsel.OP_EQUALS, [match_labels[key]]):
            return fielderrors.aggregate_message(errors)
    for expression in selector.get("matchExpressions") or []:
        operator = expression.get("operator")
        if operator not in _EXPRESSION_OPERATORS:
            return f"{go_quote(str(operator or ''))} is not a valid label selector operator"
        if errors := _requirement_errors(str(expression.get("key") or ""), _EXPRESSION_OPERATORS[operator],
                                         list(expression.get("values") or [])):
            return fielderrors.aggregate_message(errors)
    return None


def selector_text(selector: dict[str, Any] | None) -> str:
    """The string form of a valid ``LabelSelector`` (:func:`selector_object_error` None), for ``labelSelector=``;
    None or empty: every ClusterCatalog, as operator-controller reads an empty selector."""
    return labelsel.to_string(selector) if selector else ""


@dataclass(frozen=True, slots=True)
class WalkedCatalog:
    """One ClusterCatalog resolution walks: its name, priority, and the image catalogd unpacked (``docker://REPO@
    DIGEST``); or, when it is not served, ``problem`` (operator-controller's words) and ``said`` (what its status
    says) instead of an image. Resolution stops at such a catalog (:func:`unserved_error`)."""

    name: str
    priority: int
    image: str | None = None
    problem: str | None = None
    said: str | None = None


def _name(obj: Obj) -> str:
    metadata = obj.get("metadata")
    return str(metadata.get("name") or "") if isinstance(metadata, dict) else ""


def _section(obj: Obj, key: str) -> dict[str, Any]:
    """``spec`` or ``status``; what is not an object (never, under catalogd's CRD) reads as empty."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _status_condition(obj: Obj, kind: str) -> dict[str, Any] | None:
    conditions = _section(obj, "status").get("conditions")
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def walked(objs: Sequence[Obj]) -> list[WalkedCatalog]:
    """The ClusterCatalogs (as listed, selector applied) resolution walks, in name order: the ``Unavailable`` ones
    left out, each either with the image to read or what keeps it from being read."""
    out = []
    for obj in sorted(objs, key=_name):
        name = _name(obj)
        spec = _section(obj, "spec")
        if spec.get("availabilityMode") == AVAILABILITY_UNAVAILABLE:
            continue
        priority = spec.get("priority", 0)
        priority = priority if isinstance(priority, int) and not isinstance(priority, bool) else 0
        status = _section(obj, "status")
        serving = _status_condition(obj, CONDITION_SERVING)
        resolved = status.get("resolvedSource")
        image = resolved.get("image") if isinstance(resolved, dict) else None
        ref = image.get("ref") if isinstance(image, dict) else None
        if serving is None or serving.get("status") != "True":
            problem = f"catalog {go_quote(name)} is not being served"
        elif not isinstance(resolved, dict):
            problem = f"error: catalog {go_quote(name)} has a nil status.resolvedSource value"
        elif not isinstance(image, dict):
            problem = f"error: catalog {go_quote(name)} has a nil status.resolvedSource.image value"
        elif not (isinstance(ref, str) and ref):
            problem = f"error: catalog {go_quote(name)} has no status.resolvedSource.image.ref"
        else:
            out.append(WalkedCatalog(name, priority, f"{DOCKER_TRANSPORT}{ref}"))
            continue
        said = (f"its condition Serving is {serving.get('status')} ({serving.get('reason') or 'no reason'}: "
                f"{serving.get('message') or 'no message'})" if serving is not None
                else "it has no condition Serving: catalogd has not served it (is catalogd running?)")
        out.append(WalkedCatalog(name, priority, problem=problem, said=said))
    return out


def unserved_error(catalog: WalkedCatalog, package: str) -> ResolutionError:
    """What resolving ``package`` says on reaching a ClusterCatalog that is not served: operator-controller's
    message, and a hint with the way on."""
    return ResolutionError(
        f"error walking catalogs: error getting package {go_quote(package)} from catalog {go_quote(catalog.name)}: "
        f"{catalog.problem}",
        [f"ClusterCatalog {catalog.name}: {catalog.said}; OLM v1 resolves nothing until every ClusterCatalog it "
         f"would read is served: wait for catalogd, set its spec.availabilityMode to {AVAILABILITY_UNAVAILABLE}, or "
         "give a selector that leaves it out"])


def nothing_selected(selector: str, listed: Sequence[Obj]) -> str:
    """Why no ClusterCatalog is read (beside OLM v1's ``no bundles found``): none on the cluster, none the selector
    picks, or all Unavailable."""
    where = f"matching {selector!r}" if selector else "on the cluster"
    unavailable = sorted(_name(o) for o in listed if _section(o, "spec").get("availabilityMode") ==
                         AVAILABILITY_UNAVAILABLE)
    if unavailable:
        return (f"no ClusterCatalog was read: those {where} are {AVAILABILITY_UNAVAILABLE} ({', '.join(unavailable)})")
    return f"no ClusterCatalog was read: there is none {where}"

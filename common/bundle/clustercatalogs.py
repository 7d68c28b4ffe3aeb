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

from common.contract import api
from common.contract import labels as labelsel
from common.contract.objects import Obj

from .registryv1.gotext import go_quote
from .registryv1.imageref import DOCKER_TRANSPORT
from .registryv1.model import BundleInputError
from .registryv1.resolve import ResolutionError

API_VERSION: Final = f"{api.GROUP}/v1"
KIND: Final = "ClusterCatalog"
REFERENCE_PREFIX: Final = "clustercatalogs:"
AVAILABILITY_UNAVAILABLE: Final = "Unavailable"
CONDITION_SERVING: Final = "Serving"


class ClusterCatalogsError(BundleInputError):
    """``clustercatalogs:SELECTOR`` that is not a label selector, or nothing to resolve from on the cluster."""


def is_cluster_catalogs(reference: str) -> bool:
    """Whether a ``--catalog`` value (or a recorded one) names the cluster's ClusterCatalogs."""
    return reference.startswith(REFERENCE_PREFIX)


def reference_for(selector: str) -> str:
    """The ``--catalog`` value for the ClusterCatalogs ``selector`` picks (``""``: all)."""
    return REFERENCE_PREFIX + selector


def selector_of(reference: str) -> str:
    """The label selector of ``clustercatalogs:SELECTOR``, in the API server's string form, checked as the API
    server checks it (so that a typo is said before anything is read, naming the option)."""
    text = reference[len(REFERENCE_PREFIX):].strip()
    try:
        labelsel.parse(text)
    except labelsel.SelectorError as exc:
        raise ClusterCatalogsError(f"--catalog {reference}: not a label selector: {exc}") from None
    return text


def selector_reference(selector: Any) -> str:
    """The ``--catalog`` value for a ClusterExtension's ``spec.source.catalog.selector`` (a ``LabelSelector``
    object; None or empty: every ClusterCatalog, as operator-controller reads an empty selector)."""
    return reference_for(labelsel.to_string(selector) if selector else "")


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


def _status_condition(obj: Obj, kind: str) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def walked(objs: Sequence[Obj]) -> list[WalkedCatalog]:
    """The ClusterCatalogs (as listed, selector applied) resolution walks, in name order: the ``Unavailable`` ones
    left out, each either with the image to read or what keeps it from being read."""
    out = []
    for obj in sorted(objs, key=lambda o: str((o.get("metadata") or {}).get("name") or "")):
        name = str(obj["metadata"].get("name") or "")
        spec = obj.get("spec") or {}
        if spec.get("availabilityMode") == AVAILABILITY_UNAVAILABLE:
            continue
        priority = spec.get("priority", 0)
        priority = priority if isinstance(priority, int) and not isinstance(priority, bool) else 0
        status = obj.get("status") or {}
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


def nothing_selected(selector: str, listed: Sequence[Obj], package: str) -> str:
    """Why no ClusterCatalog is read: none on the cluster, none the selector picks, or all Unavailable."""
    where = f"matching {selector!r}" if selector else "on the cluster"
    unavailable = sorted(str(o["metadata"].get("name")) for o in listed
                         if (o.get("spec") or {}).get("availabilityMode") == AVAILABILITY_UNAVAILABLE)
    if unavailable:
        return (f"no ClusterCatalog to resolve package {package} from: those {where} are {AVAILABILITY_UNAVAILABLE} "
                f"({', '.join(unavailable)})")
    return f"no ClusterCatalog to resolve package {package} from: there is none {where}"

"""The CRD upgrade safety check against a cluster: what publishing a revision would do to the custom resources the
cluster stores, as ``cosctl publish`` refuses it and ``cosctl diff`` shows it ahead.

Why a module of its own: the comparisons are pure (:mod:`.crdsafety`); this is the part that reads the cluster (the
live CRDs, who controls them, whether custom resources of them exist), shared by publish, which refuses on its
findings, and diff, which prints them. Both word their own consequences; a read that fails is a
:class:`CRDCheckError` naming what could not be read, never a finding.

Two checks:

- :func:`unsafe_crd_upgrades`: OLM v1's preflight, each CRD of the new content against the cluster's;
- :func:`dropped_crds_in_use`: ours, beyond OLM v1's per-CRD view: a CRD an Active revision of the owner controls
  that the new content lacks, while custom resources of it exist. The new revision's success archives that
  revision, archiving deletes what it controls and the new one does not hold, and the API server deletes every
  custom resource of a deleted CRD.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from common.bundle.crdsafety import CRD_API_VERSION, CRDDecodeError, is_crd, preflight
from common.bundle.phasing import Phase
from common.cluster.interface import ApiError, Cluster, NotFound
from common.contract.objects import Obj


class CRDCheckError(Exception):
    """The check could not be made: a CRD or its custom resources could not be read, or a CRD does not decode. The
    message names which, without saying what the caller does about it."""


def live_crd(cluster: Cluster, name: str) -> Obj | None:
    """The cluster's CustomResourceDefinition ``name``, or None when it has none. Raises :class:`CRDCheckError`
    when it cannot be read."""
    try:
        return cluster.get(CRD_API_VERSION, "CustomResourceDefinition", name)
    except NotFound:
        return None
    except ApiError as exc:
        raise CRDCheckError(f"could not read CustomResourceDefinition {name}: {exc.reason}: {exc.message}") from None


def unsafe_crd_upgrades(cluster: Cluster, new: Sequence[Phase]) -> list[str]:
    """OLM v1's refusal (:func:`.crdsafety.preflight_failure`) for each CRD of ``new`` the cluster has and that
    would break what is stored under it; empty when none would."""
    try:
        return preflight((o for p in new for o in p.objects), lambda name: live_crd(cluster, name))
    except CRDDecodeError as exc:
        raise CRDCheckError(str(exc)) from None


class DroppedCRD(NamedTuple):
    """A CRD the new content lacks that an Active revision controls, while custom resources of it exist."""

    name: str
    controller: str  # the controlling revision's name

    def __str__(self) -> str:
        return f"{self.name} (controlled by {self.controller}; custom resources of it exist)"


def dropped_crds_in_use(cluster: Cluster, held: Iterable[Sequence[Phase]], revision_names: Mapping[str, str],
                        new: Sequence[Phase]) -> list[DroppedCRD]:
    """The CRDs the contents ``held`` (of the owner's Active revisions) have and ``new`` has not, whose live CRD
    is controlled by one of those revisions (``revision_names``: their names by uid, :func:`controllers`) and of
    which custom resources exist. A CRD some other owner controls is only released when those revisions are
    archived, never deleted, so it is not counted."""
    kept = {_name(o) for p in new for o in p.objects if is_crd(o)}
    names = sorted({_name(o) for phases in held for p in phases for o in p.objects if is_crd(o)} - kept)
    in_use = []
    for name in names:
        crd = live_crd(cluster, name)
        controller = revision_names.get(controller_uid(crd) or "") if crd is not None else None
        if crd is None or controller is None:
            continue
        if _custom_resources_exist(cluster, name, crd):
            in_use.append(DroppedCRD(name, controller))
    return in_use


def controllers(revisions: Iterable[Obj]) -> dict[str, str]:
    """Revision names by uid: what a controller ownerReference names (for :func:`dropped_crds_in_use`)."""
    return {str(c["metadata"].get("uid")): str(c["metadata"]["name"]) for c in revisions}


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def controller_uid(obj: Obj) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("uid"))
    return None


def _custom_resources_exist(cluster: Cluster, name: str, crd: Obj) -> bool:
    """Whether any custom resource of ``crd`` exists (no when its kind is not served): one object read, however
    many there are."""
    return bool(custom_resources(cluster, name, crd, limit=1))


def custom_resources(cluster: Cluster, name: str, crd: Obj, *, limit: int | None = None) -> list[Obj]:
    """The custom resources of ``crd`` (named ``name``) in every namespace, at its storage version; at most
    ``limit`` when given; none when it serves none. Raises :class:`CRDCheckError` when they cannot be listed."""
    return list_custom_resources(cluster, name, served_kind(crd), limit=limit)


def list_custom_resources(cluster: Cluster, name: str, served: tuple[str, str] | None, *,
                          limit: int | None = None) -> list[Obj]:
    """:func:`custom_resources` for the apiVersion and kind CRD ``name`` serves (:func:`served_kind`)."""
    if served is None:
        return []
    try:
        return cluster.list(*served, limit=limit)
    except NotFound:  # UnknownKind: not served (yet, or any more)
        return []
    except ApiError as exc:
        raise CRDCheckError(f"could not list the custom resources of CustomResourceDefinition {name}: "
                            f"{exc.reason}: {exc.message}") from None


def served_kind(crd: Obj) -> tuple[str, str] | None:
    """The apiVersion (group and storage version, else the first served) and kind a CRD serves its custom
    resources as; None when it serves none."""
    spec = crd.get("spec") or {}
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served")]
    kind = (spec.get("names") or {}).get("kind")
    if not versions or not kind:
        return None
    storage = next((v for v in versions if v.get("storage")), versions[0])
    return f"{spec.get('group')}/{storage.get('name')}", str(kind)

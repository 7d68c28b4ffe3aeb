"""Judging a ClusterObjectSet: the CRD's verdict in the API server's order, then what only the webhook adds.

``crd_errors`` is what the API server itself answers before any webhook (the name, the schema, embedded
manifests' identity, list-map duplicates, then the CEL rules, skipped after a blocking error as the server does).
``validate_cos`` reports that and everything the CRD cannot express at once (``shared/spec/api-and-admission.md``
section 3): embedded manifests' metadata, duplicates across phases, selector operators, removal of phases, the
size etcd can store, and warnings. An UPDATE that leaves the phases as they were is not judged again on them
(validation ratcheting).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import orjson

from common.contract import api, names
from common.contract import schema as table
from common.contract.fielderrors import OMIT, ErrorType, FieldError, duplicate, invalid, required
from common.contract.validation.cel_rules import MISSING, cel_errors, json_equal
from common.contract.validation.metadata import identity_errors, identity_valid, metadata_field_errors, metadata_valid
from common.contract.validation.structure import only_known_fields, structural_errors, unknown_fields

Obj = dict[str, Any]

# A COS is stored in etcd as one JSON value. etcd refuses a request over its --max-request-bytes, 1.5 MiB by
# default ("etcdserver: request is too large"), and the value it would hold is at least the object's compact
# JSON (the API server adds metadata and escapes <, > and & as six bytes each; on a too-large create it retries
# without metadata.managedFields, so those are not counted). Over the limit the API server cannot store the COS
# whatever the webhook says; between SIZE_WARNING_BYTES and the limit it might not (managedFields, a client-side
# apply's last-applied annotation and etcd's own framing all count), so that band is a warning.
SIZE_WARNING_BYTES = 1024 * 1024


ETCD_MAX_REQUEST_BYTES = 1536 * 1024  # 1572864: etcd's default --max-request-bytes (a cluster may raise it)


ETCD_LIMIT_TEXT = "1.5 MiB"


def _inline_manifests(obj: Obj) -> Iterator[tuple[int, int, Obj]]:
    """(phase index, object index, manifest) of every inline manifest; paths are built only for an error."""
    spec = obj.get("spec")
    phases = spec.get("phases") if isinstance(spec, dict) else None
    for i, phase in enumerate(phases if isinstance(phases, list) else []):
        objects = phase.get("objects") if isinstance(phase, dict) else None
        for j, entry in enumerate(objects if isinstance(objects, list) else []):
            manifest = entry.get("object") if isinstance(entry, dict) else None
            if isinstance(manifest, dict):
                yield i, j, manifest


def _identity(manifest: Obj) -> tuple[str, str, str, str] | None:
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    meta = manifest.get("metadata")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not isinstance(meta, dict):
        return None
    name, namespace = meta.get("name"), meta.get("namespace") or ""
    if not isinstance(name, str) or not name or not isinstance(namespace, str):
        return None
    group = api_version.rpartition("/")[0]
    return group, kind, namespace, name


def _path(i: int, j: int) -> str:
    """The field path of object ``j`` of phase ``i``, built only when something there is reported."""
    return f"spec.phases[{i}].objects[{j}]"


def _spec_extras(spec: Obj, old_spec: Any, system_namespace: str) -> tuple[list[FieldError], list[str]]:
    errs: list[FieldError] = []
    warnings: list[str] = []
    phases = spec.get("phases")
    if isinstance(old_spec, dict):
        old_phases = old_spec.get("phases")
        if isinstance(old_phases, list) and old_phases and "phases" not in spec:
            errs.append(invalid("spec.phases", OMIT, table.MSG_PHASES_IMMUTABLE))
    # where each object and ref was first seen, as (phase, object) indexes: a path is built only to report
    seen_objects: dict[tuple[str, str, str, str], tuple[int, int]] = {}
    seen_refs: dict[tuple[str, str, str], tuple[int, int]] = {}
    for i, phase in enumerate(phases if isinstance(phases, list) else []):
        if not isinstance(phase, dict):
            continue
        name = phase.get("name")
        if isinstance(name, str) and name[:1].isdigit() and len(name) <= 63:
            warnings.append(f'spec.phases[{i}].name: "{name}" starts with a digit: a valid RFC 1123 label, '
                            "but implementations that require RFC 1035 labels reject it")
        objects = phase.get("objects")
        for j, entry in enumerate(objects if isinstance(objects, list) else []):
            if not isinstance(entry, dict):
                continue
            manifest = entry.get("object")
            if isinstance(manifest, dict):
                if "metadata" in manifest and not metadata_valid(manifest["metadata"]):
                    # ObjectMeta shape, no server-populated fields
                    errs.extend(metadata_field_errors(manifest["metadata"], f"{_path(i, j)}.object.metadata"))
                ident = _identity(manifest)
                if ident is not None:
                    group, kind, namespace, obj_name = ident
                    here = (i, j)
                    first = seen_objects.setdefault(ident, here)
                    if first is not here:
                        errs.append(duplicate(_path(i, j), {"group": group, "kind": kind, "namespace": namespace,
                                                            "name": obj_name},
                                              f"the same object is already at {_path(*first)}"))
                    if group == "" and kind == "Secret":
                        shown = f"{namespace}/{obj_name}" if namespace else obj_name
                        warnings.append(f'{_path(i, j)}.object: inline Secret "{shown}" is readable by anyone who '
                                        "can read this ClusterObjectSet; put it in an object-data Secret and use a "
                                        "ref instead")
            ref = entry.get("ref")
            if isinstance(ref, dict) and isinstance(ref.get("name"), str) and isinstance(ref.get("key"), str):
                ref_namespace = ref.get("namespace")
                namespace = ref_namespace if isinstance(ref_namespace, str) else ""
                ident_ref = (namespace or system_namespace, ref["name"], ref["key"])
                first = seen_refs.setdefault(ident_ref, (i, j))
                if first != (i, j):
                    errs.append(duplicate(_path(i, j), {"name": ident_ref[1], "namespace": ident_ref[0],
                                                        "key": ident_ref[2]},
                                          f"the same ref is already at {_path(*first)}"))
    probes = spec.get("progressionProbes")
    for i, probe in enumerate(probes if isinstance(probes, list) else []):
        selector = probe.get("selector") if isinstance(probe, dict) else None
        label = selector.get("label") if isinstance(selector, dict) else None
        if isinstance(label, dict):
            errs.extend(names.validate_label_selector(label, f"spec.progressionProbes[{i}].selector.label"))
    return errs, warnings


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def api_server_order(err: FieldError) -> tuple[tuple[int, int, str], ...]:
    """Sort key putting errors in the order a Kubernetes API server lists them, whatever the manifest's order:
    properties by name at each level, list items by index (``spec.phases[2]`` before ``spec.phases[10]``).
    ``sorted`` is stable, so several errors at one path keep the order of the rules that found them."""
    return tuple((0, int(index), "") if index else (1, 0, name) for name, index in _PATH_TOKEN.findall(err.field))


def _ratchet_phases(obj: Obj, old: Obj | None) -> tuple[Obj, Obj | None, bool]:
    """Validation ratcheting (Kubernetes 1.30+ does the same for CRDs): on an UPDATE that leaves
    ``spec.phases`` exactly as it was, the phases were judged when they were admitted and are not judged
    again. ``spec.phases`` is immutable, so this is nearly every UPDATE of a COS (archiving it, changing
    its labels or probes), and on a maximal COS it turns ~80 ms of checks into one ~3 ms comparison.

    Returns the objects to judge (with the unchanged phases set aside) and whether they were.
    """
    spec = obj.get("spec")
    old_spec = old.get("spec") if isinstance(old, dict) else None
    if not (isinstance(spec, dict) and isinstance(old_spec, dict) and "phases" in spec and "phases" in old_spec
            and json_equal(spec["phases"], old_spec["phases"])):
        return obj, old, False
    assert isinstance(old, dict)
    return ({**obj, "spec": {**spec, "phases": []}}, {**old, "spec": {**old_spec, "phases": []}}, True)


# The error a Kubernetes API server appends when a blocking structural rule failed and it skipped the CEL
# rules (and so never called a validating webhook either).
NOT_ALL_CHECKED = FieldError(
    ErrorType.INVALID, "<nil>", None,
    "some validation rules were not checked because the object was invalid; correct the existing errors to "
    "complete validation")


# apiextensions-apiserver's hasBlockingErr: after one of these, CEL rules are not evaluated.
_BLOCKING = {ErrorType.NOT_SUPPORTED, ErrorType.REQUIRED, ErrorType.TOO_LONG, ErrorType.TOO_MANY,
             ErrorType.TYPE_INVALID}


def _crd_errors(obj: Obj, old: Obj | None, *, every_rule: bool) -> list[FieldError]:
    """The CRD's own verdict in the API server's order: the name, the schema (properties by name, items by
    index), embedded manifests' apiVersion and kind, list-map key duplicates, then the CEL rules. The API
    server skips CEL after a blocking error and says so (``NOT_ALL_CHECKED``); ``every_rule`` runs them
    anyway, for the webhook and ``cosctl validate``, which report everything at once."""
    errors: list[FieldError] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        errors.append(required("metadata.name", "name or generateName is required"))
    structural = structural_errors(obj)
    errors += sorted((e for e in structural if e.type is not ErrorType.DUPLICATE), key=api_server_order)
    embedded = [e for i, j, manifest in _inline_manifests(obj) if not identity_valid(manifest)
                for e in identity_errors(manifest, f"{_path(i, j)}.object")]
    errors += sorted(embedded, key=api_server_order)
    errors += sorted((e for e in structural if e.type is ErrorType.DUPLICATE), key=api_server_order)
    if not every_rule and any(e.type in _BLOCKING for e in errors):
        return [*errors, NOT_ALL_CHECKED]
    return errors + sorted(cel_errors(obj, old if isinstance(old, dict) else MISSING), key=api_server_order)


def crd_errors(obj: Obj, old: Obj | None = None) -> list[FieldError]:
    """What a cluster's API server itself answers for this COS (``old`` on UPDATE) before any validating
    webhook is called, in its order; empty when the CRD admits it. ``validate_cos`` reports this and more at
    once; this is what ``kubectl apply`` shows on a cluster."""
    obj, old, _ = _ratchet_phases(obj, old)
    return _crd_errors(obj, old, every_rule=False)


def serialized_size(obj: Any) -> int:
    """Bytes of ``obj`` as compact UTF-8 JSON, as etcd would store it. orjson writes exactly what the stdlib
    writes with ``separators=(",", ":"), ensure_ascii=False``, 20x faster on a maximal COS (this was a fifth
    of the validating route's time); it refuses unpaired surrogates, which the stdlib path counts."""
    try:
        return len(orjson.dumps(obj))
    except (TypeError, orjson.JSONEncodeError):
        return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass"))


def validate_cos(obj: Obj, old: Obj | None = None, *,
                 system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE) -> tuple[list[FieldError], list[str]]:
    """Every violation of a ClusterObjectSet (``old`` given on UPDATE), and the warnings for it."""
    obj, old, ratcheted = _ratchet_phases(obj, old)
    errors = _crd_errors(obj, old, every_rule=True)
    warnings: list[str] = []
    spec = obj.get("spec")
    if isinstance(spec, dict):
        old_spec = old.get("spec") if isinstance(old, dict) else None
        extra_errors, extra_warnings = _spec_extras(spec, old_spec, system_namespace)
        errors += sorted(extra_errors, key=api_server_order)
        warnings += extra_warnings
    if not only_known_fields(obj):
        warnings += [f'unknown field "{p}"' for p in unknown_fields(obj)]
    if ratcheted:
        # judged when the phases were admitted; and that they were stored proves this cluster's etcd takes them
        return errors, warnings
    size = serialized_size(obj)
    if size > ETCD_MAX_REQUEST_BYTES:
        size = stored_size(obj)
    if size > api.API_SERVER_MAX_REQUEST_BYTES:
        errors.append(too_large(size))
    elif size > ETCD_MAX_REQUEST_BYTES:
        warnings.append(f"this ClusterObjectSet is {size / 1048576:.2f} MiB serialized, over the {ETCD_LIMIT_TEXT} "
                        "etcd stores by default (unless its --max-request-bytes was raised); move large objects "
                        "into object-data Secrets and reference them with ref (cosctl pack does this)")
    elif size > SIZE_WARNING_BYTES:
        warnings.append(f"this ClusterObjectSet is {size / 1048576:.2f} MiB serialized, close to etcd's "
                        f"{ETCD_LIMIT_TEXT} object limit; move large objects into object-data Secrets and "
                        "reference them with ref (cosctl pack does this)")
    return errors, warnings


def stored_size(obj: Obj) -> int:
    """The fewest bytes etcd could be asked to store for ``obj``: its compact JSON without
    ``metadata.managedFields``, which the API server drops and retries without when a create or update is too
    large (k8s.io/apiserver endpoints/handlers, ``isTooLargeError``)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return serialized_size(obj)


def too_large(size: int) -> FieldError:
    """The denial of a COS no API server can store: over the request body it reads. Only ``cosctl validate``
    ever gives it (the API server refuses such a body before admission, "Request entity too large: limit is
    3145728"). Between etcd's default limit and this one the COS is allowed with a warning, as the spec's
    "larger than 1 MiB" row says: a cluster whose etcd takes larger requests stores it, and the webhook must not
    refuse what the cluster can hold."""
    return FieldError(ErrorType.TOO_LONG, "spec.phases", OMIT,
                      f"this ClusterObjectSet is {size} bytes serialized ({size / 1048576:.2f} MiB), over the "
                      f"{api.API_SERVER_MAX_REQUEST_BYTES} bytes (3 MiB) the API server reads in a request, so it can "
                      "never be stored: move objects into object-data Secrets and reference them with ref (cosctl "
                      "pack does this)")

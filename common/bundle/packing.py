"""Packing phased manifests into a ClusterObjectSet and content-addressed, immutable object-data Secrets.

Bundles routinely exceed what one etcd object may hold (1.5 MiB), so objects are externalized into Secrets and
the COS carries only ``ref``s. The format is a compatibility promise (``shared/spec/producer.md`` section 2):

- each object is stored as compact, key-sorted JSON; gzip-compressed (deterministically: mtime 0, no file
  name, fixed level) only when the JSON is over 900 KiB; still over 900 KiB is an error;
- its data key is the SHA-256 of the stored bytes, base64url without padding, so keys are content addresses
  (a changed object can never be mistaken for the old one, and identical objects share a key);
- objects fill Secrets in phase order, a new Secret starting when the next value would take the raw total
  over 900 KiB; each Secret is named ``<COS name>-<16 hex>`` from a hash of its keys and values.

What is rendered must be what a cluster accepts. An object over 3 MiB as JSON (no API server reads a request
that large, and gzip could squeeze a 30 MiB one under 900 KiB into a value the webhook refuses to decompress
past 10 MiB) and an inline COS larger than etcd stores are refused here, naming the object and its size; then
every rendered document is judged by the admission webhook's own rules (:func:`check_admissible`), so no rule
packing did not think of can slip through.

Everything is a pure function of its input: the same manifests give the same Secrets and COS byte for byte,
which is what lets GitOps diffs stay empty and lets ``publish`` treat ``AlreadyExists`` as success.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from common.bundle.phasing import Phase
from common.contract import api
from common.contract.api import API_SERVER_MAX_REQUEST_BYTES, MAX_DECOMPRESSED_BYTES
from common.contract.objectdata import content_key
from common.contract.objects import GVK, Obj

MAX_VALUE_BYTES = 900 * 1024  # 921600: the most one stored object may take
MAX_SECRET_BYTES = 900 * 1024  # the most the raw values of one Secret may add up to
# kube-apiserver's limit on a request body (not configurable): the reconciler sends each object as one apply
# request, so no object larger than this as JSON can ever be applied.
MAX_REQUEST_BYTES = API_SERVER_MAX_REQUEST_BYTES
assert MAX_REQUEST_BYTES < MAX_DECOMPRESSED_BYTES  # so no stored value decompresses past the webhook's limit
GZIP_LEVEL = 9
SECRET_NAME_HASH_BYTES = 8
MAX_LABEL_VALUE = 63

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# gzip member header: magic, deflate, no flags, mtime 0, XFL 2 (maximum compression), OS 255 (unknown).
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"


class PackingError(ValueError):
    """The bundle cannot be packed as asked (names, sizes)."""


class ObjectTooLarge(PackingError):
    """One object cannot be deployed (over 3 MiB as JSON) or does not fit in a Secret value even gzip-compressed."""


class RevisionTooLarge(PackingError):
    """An inline ClusterObjectSet is larger than etcd stores."""


class NotAdmissible(PackingError):
    """A rendered document is one the admission webhook would deny (``problems``: ``Kind name: field error``,
    one per violation)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("the admission webhook would deny the revision as rendered (nothing was written):\n"
                         + "\n".join(f"  {p}" for p in self.problems))


@dataclass(frozen=True, slots=True)
class Packed:
    """A rendered revision: the COS and the Secrets its refs point at (empty when packed inline)."""

    cos: Obj
    secrets: tuple[Obj, ...]

    def documents(self) -> list[Obj]:
        """Secrets first, so applying the documents in order never leaves the COS waiting for its data."""
        return [*self.secrets, self.cos]


def to_json(obj: Any) -> bytes:
    """Compact, key-sorted JSON: the canonical serialization for stored values and digests."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def gzip_deterministic(data: bytes) -> bytes:
    """gzip with a fixed header (mtime 0, no name) and level, so equal input gives equal bytes everywhere
    the same zlib runs (``gzip.compress`` changed its header across Python versions)."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = compressor.compress(data) + compressor.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def stored_bytes(obj: Obj, *, where: str = "") -> bytes:
    """What a Secret stores for ``obj``: its JSON, gzip-compressed when over 900 KiB.

    Raises :class:`ObjectTooLarge` (naming ``where`` and the sizes) when the object could never be applied
    (:func:`check_object_size`), or when even the compressed form is over 900 KiB.
    """
    raw = to_json(obj)
    check_object_size(len(raw), where)
    if len(raw) <= MAX_VALUE_BYTES:
        return raw
    packed = gzip_deterministic(raw)
    if len(packed) > MAX_VALUE_BYTES:
        raise ObjectTooLarge(
            f"{where or 'object'} is too large for a Secret: {len(raw)} bytes as JSON, {len(packed)} bytes "
            f"gzip-compressed, more than the {MAX_VALUE_BYTES} bytes a value may hold")
    return packed


def check_object_size(size: int, where: str = "") -> None:
    """Refuse an object of ``size`` bytes of JSON that no cluster could take. The API server reads no write
    request body over 3 MiB ("Request entity too large: limit is 3145728"), so the reconciler could never apply
    it; that also keeps every stored value under the 10 MiB the webhook lets one decompress to, which gzip
    alone would not (30 MiB of repetitive YAML compresses to a few KiB)."""
    if size <= MAX_REQUEST_BYTES:
        return
    secret_limit = (f" (and than the {MAX_DECOMPRESSED_BYTES} bytes an object-data Secret value may hold "
                    "decompressed)" if size > MAX_DECOMPRESSED_BYTES else "")
    raise ObjectTooLarge(
        f"{where or 'object'} is too large to deploy: {size} bytes as JSON, more than the {MAX_REQUEST_BYTES} bytes "
        f"(3 MiB) the API server accepts in a request body{secret_limit}")


def secret_name(cos_name: str, data: dict[str, bytes]) -> str:
    """``<COS name>-<16 hex>``: the first 8 bytes of SHA-256 over each sorted key followed by its value."""
    h = hashlib.sha256()
    for key in sorted(data):
        h.update(key.encode("ascii"))
        h.update(data[key])
    return f"{cos_name}-{h.digest()[:SECRET_NAME_HASH_BYTES].hex()}"


def object_label(obj: Obj) -> str:
    """``Kind.group namespace/name`` for messages (never content)."""
    gvk = GVK.of(obj)
    meta = obj.get("metadata") or {}
    kind = f"{gvk.kind}.{gvk.group}" if gvk.group else gvk.kind
    ns, name = meta.get("namespace"), meta.get("name")
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def check_names(name: str, owner: str | None, *, with_secrets: bool) -> None:
    """Refuse names the API server would refuse, before anything is rendered or created."""
    if not name or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        raise PackingError(f"invalid ClusterObjectSet name {name!r}: must be a lowercase RFC 1123 subdomain "
                           "(a-z, 0-9, '-' and '.', starting and ending alphanumeric, at most 253 characters)")
    if with_secrets and len(name) > MAX_LABEL_VALUE:
        raise PackingError(f"invalid ClusterObjectSet name {name!r}: at most {MAX_LABEL_VALUE} characters when "
                           f"objects go to Secrets (it is the value of label {api.LABEL_REVISION_NAME})")
    if owner is not None and (not owner or len(owner) > MAX_LABEL_VALUE or not _LABEL_VALUE.match(owner)):
        raise PackingError(f"invalid owner {owner!r}: must be a label value (at most {MAX_LABEL_VALUE} "
                           "characters: alphanumerics, '-', '_' and '.', starting and ending alphanumeric)")


def secret_labels(cos_name: str, owner: str | None) -> dict[str, str]:
    labels = {api.LABEL_REVISION_NAME: cos_name}
    if owner:
        labels[api.LABEL_OWNER_NAME] = owner
    return labels


def _secret(name: str, namespace: str, labels: dict[str, str], data: dict[str, bytes]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "type": api.SECRET_TYPE,
        "immutable": True,
        "data": {k: base64.b64encode(data[k]).decode("ascii") for k in sorted(data)},
    }


def pack_secrets(phases: Sequence[Phase], *, cos_name: str, namespace: str,
                 owner: str | None = None) -> tuple[list[list[Obj]], list[Obj]]:
    """The refs replacing each phase's objects, and the Secrets holding them, per the spec's algorithm."""
    labels = secret_labels(cos_name, owner)
    secrets: list[Obj] = []
    refs: list[list[Obj]] = []
    current: dict[str, bytes] = {}
    current_size = 0
    pending: list[Obj] = []  # refs into ``current``, named once it is finalized
    located: dict[str, str] = {}  # key -> name of the finalized Secret already holding it

    def finalize() -> None:
        nonlocal current, current_size, pending
        if not current:
            return
        name = secret_name(cos_name, current)
        for ref in pending:
            ref["name"] = name
        located.update(dict.fromkeys(current, name))
        secrets.append(_secret(name, namespace, labels, current))
        current, current_size, pending = {}, 0, []

    for phase in phases:
        phase_refs: list[Obj] = []
        for index, obj in enumerate(phase.objects):
            stored = stored_bytes(obj, where=f"phase {phase.name!r} object {index} ({object_label(obj)})")
            key = content_key(stored)
            ref: Obj = {"name": located.get(key, ""), "namespace": namespace, "key": key}
            if key in current:
                pending.append(ref)
            elif key not in located:
                if current and current_size + len(stored) > MAX_SECRET_BYTES:
                    finalize()
                current[key] = stored
                current_size += len(stored)
                pending.append(ref)
            phase_refs.append(ref)
        refs.append(phase_refs)
    finalize()
    return refs, secrets


def pack(phases: Sequence[Phase], *, name: str, revision: int = 1,
         system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE, owner: str | None = None,
         owner_kind: str | None = None, inline: bool = False,
         collision_protection: str = api.COLLISION_PREVENT, progress_deadline_minutes: int | None = None,
         bundle_version: str | None = None, progression_probes: list[Obj] | None = None,
         annotations: Mapping[str, str] | None = None) -> Packed:
    """Render revision ``revision`` of the phases as a COS named ``name`` plus its object-data Secrets.
    ``annotations`` go on the COS (a registry+v1 bundle's package, bundle name and options); ``bundle_version``
    is the bundle-version annotation, and wins over one in ``annotations``."""
    check_names(name, owner, with_secrets=not inline)
    if revision < 1:
        raise PackingError(f"invalid revision {revision}: must be at least 1")
    if collision_protection not in api.COLLISION_PROTECTIONS:
        raise PackingError(f"invalid collision protection {collision_protection!r}: must be one of "
                           + ", ".join(api.COLLISION_PROTECTIONS))
    if progress_deadline_minutes is not None and not 10 <= progress_deadline_minutes <= 720:
        raise PackingError(f"invalid progress deadline {progress_deadline_minutes}: must be 10..720 minutes")
    if progression_probes is not None:
        check_probes(progression_probes)
    if inline:
        entries = [[{"object": obj} for obj in phase.objects] for phase in phases]
        secrets: list[Obj] = []
    else:
        refs, secrets = pack_secrets(phases, cos_name=name, namespace=system_namespace, owner=owner)
        entries = [[{"ref": ref} for ref in phase_refs] for phase_refs in refs]
    metadata: Obj = {"name": name}
    if owner:
        metadata["labels"] = {api.LABEL_OWNER_KIND: owner_kind or DEFAULT_OWNER_KIND,
                              api.LABEL_OWNER_NAME: owner}
    cos_annotations = dict(annotations or {})
    if bundle_version:
        cos_annotations[api.ANNOTATION_BUNDLE_VERSION] = bundle_version
    if cos_annotations:
        metadata["annotations"] = dict(sorted(cos_annotations.items()))
    spec: Obj = {
        "revision": revision,
        "lifecycleState": api.LIFECYCLE_ACTIVE,
        "collisionProtection": collision_protection,
    }
    if progress_deadline_minutes:
        spec["progressDeadlineMinutes"] = progress_deadline_minutes
    if progression_probes:
        spec["progressionProbes"] = progression_probes
    spec["phases"] = [{"name": phase.name, "objects": objs} for phase, objs in zip(phases, entries, strict=False)]
    cos = {"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": metadata, "spec": spec}
    packed = Packed(cos, tuple(secrets))
    check_inline_size(cos)
    check_admissible(packed, system_namespace)
    return packed


def check_probes(probes: Any) -> None:
    """Refuse ``spec.progressionProbes`` that are not a list of 1..20 probe objects: one check, for :func:`pack`
    and for a caller that read them from a file and names it."""
    if not isinstance(probes, list) or not 1 <= len(probes) <= 20 or not all(isinstance(p, dict) for p in probes):
        raise PackingError("invalid progression probes: must be a list of 1..20 probe objects")


def probe_problems(probes: list[Obj]) -> list[str]:
    """The field errors the admission webhook would report in these ``spec.progressionProbes``, in its words:
    judged on their own (in a COS holding nothing else), so that a caller can name the file they came from, which
    :func:`check_admissible` cannot."""
    from common.contract.admission import Request, validate

    cos = {"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": {"name": "probes"},
           "spec": {"progressionProbes": probes}}
    decision = validate(Request(api.KIND, "CREATE", cos, name="probes"))
    return [str(e) for e in decision.errors if e.field.startswith("spec.progressionProbes")]


def check_inline_size(cos: Obj) -> None:
    """Refuse a COS larger than any API server stores (measured as the webhook measures it), naming its size and
    its largest inline object, the one to move into a Secret first. Between etcd's default 1.5 MiB and this,
    ``cosctl pack`` warns (a cluster may have raised etcd's limit)."""
    total = len(to_json(cos))
    if total <= MAX_REQUEST_BYTES:
        return
    inline = [(len(to_json(entry["object"])), phase["name"], index, entry["object"])
              for phase in cos["spec"]["phases"] for index, entry in enumerate(phase["objects"]) if "object" in entry]
    for size, phase, index, obj in inline:
        check_object_size(size, f"phase {phase!r} object {index} ({object_label(obj)})")
    largest = ""
    if inline:
        size, phase, index, obj = max(inline, key=lambda s: s[0])
        largest = f" (its largest object is phase {phase!r} object {index} ({object_label(obj)}), {size} bytes)"
    raise RevisionTooLarge(
        f"the ClusterObjectSet {cos['metadata']['name']} is {total} bytes as JSON{largest}, over the "
        f"{MAX_REQUEST_BYTES} bytes (3 MiB) the API server reads in a request, so it can never be stored: pack "
        "without --inline to move the objects into Secrets")


def check_admissible(packed: Packed, system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE) -> None:
    """Judge every rendered document as the admission webhook would judge its CREATE; raise
    :class:`NotAdmissible` listing every denial. Packing checks what it knows it could get wrong with better
    messages first; this is what keeps ``pack`` from ever writing what ``cosctl validate`` refuses."""
    from common.contract.admission import Config, Request, validate

    config = Config(system_namespace=system_namespace)
    problems: list[str] = []
    for doc in packed.documents():
        meta = doc["metadata"]
        kind = "Secret" if doc["kind"] == "Secret" else api.KIND
        decision = validate(Request(kind, "CREATE", doc, name=meta["name"], namespace=meta.get("namespace", "")),
                            config)
        if not decision.allowed:
            problems += [f"{doc['kind']} {meta['name']}: {error}" for error in decision.errors] or [decision.message]
    if problems:
        raise NotAdmissible(problems)


# The owner kind OLM v1 stamps; tools that group revisions by owner-kind expect it.
DEFAULT_OWNER_KIND = "ClusterExtension"

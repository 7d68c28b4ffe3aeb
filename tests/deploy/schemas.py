"""Validate rendered objects against the Kubernetes OpenAPI (JSON) schemas that ``kubernetes-validate`` ships.

The package carries strict schemas (unknown fields rejected, as ``kubectl apply`` with server-side field
validation does) for every Kubernetes minor release it knows, so this works offline. Its own ``validate``
re-reads the 1 MB definitions file for every object; this module loads each release's definitions once.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import referencing
from packaging.version import Version

Obj = dict[str, Any]

SCHEMA_ROOT = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"

# Custom resources of other projects that kubernetes-validate has no schema for; their content is checked by
# the property tests instead.
NO_SCHEMA_GROUPS = {"cert-manager.io"}


class SchemaMissing(Exception):
    """No schema for this kind in this release."""


def versions() -> list[str]:
    """Every Kubernetes release (``1.25``, ...) the installed schemas cover, oldest first."""
    found = {m.group(1) for d in SCHEMA_ROOT.iterdir() if (m := re.fullmatch(r"v(\d+\.\d+)\.\d+-local-strict", d.name))}
    return sorted(found, key=Version)


def newest() -> str:
    return versions()[-1]


def _dir(version: str) -> Path:
    matches = sorted(SCHEMA_ROOT.glob(f"v{version}.*-local-strict"))
    if not matches:
        raise SchemaMissing(f"kubernetes-validate has no schemas for Kubernetes {version}")
    return matches[-1]


@functools.cache
def _registry(version: str) -> referencing.Registry:
    definitions = json.loads((_dir(version) / "_definitions.json").read_text())
    # Kind schemas refer to "/api/_definitions.json#/$defs/..."; register the definitions under that URI.
    resource = referencing.Resource.from_contents(definitions)
    return referencing.Registry().with_resource("https://kubernetes.io/api/_definitions.json", resource) \
        .with_resource(definitions.get("$id", "https://kubernetes.io/api/_definitions.json"), resource)


@functools.cache
def _validator(version: str, kind: str, api_version: str) -> jsonschema.protocols.Validator:
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = _dir(version) / f"{kind.lower()}-{group_version}.json"
    if not path.is_file():
        raise SchemaMissing(f"no schema for {kind} {api_version} in Kubernetes {version}")
    schema = json.loads(path.read_text())
    registry = referencing.Resource.from_contents(schema) @ _registry(version)
    return jsonschema.Draft202012Validator(schema, registry=registry)


def errors(obj: Obj, version: str) -> list[str]:
    """Every schema violation of ``obj`` in Kubernetes ``version``, as ``path: message`` lines."""
    validator = _validator(version, str(obj.get("kind")), str(obj.get("apiVersion")))
    out = []
    for err in validator.iter_errors(obj):
        path = ".".join(str(p) for p in err.absolute_path) or "<root>"
        out.append(f"{path}: {err.message}")
    return sorted(out)

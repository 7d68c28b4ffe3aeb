"""Generate the base configuration schema of registry+v1 bundles from a Kubernetes OpenAPI v3 document.

OLM v1 validates a bundle's configuration against ``registryv1bundleconfig.json``, which its
``hack/tools/schema-generator`` builds from Kubernetes' ``api/openapi-spec/v3/api__v1_openapi.json``: the
top-level ``watchNamespace`` (replaced per bundle from its install modes, see
:func:`common.bundle.registryv1.config.config_schema`) and ``deploymentConfig``, whose properties are the
fields of OLM v0's ``SubscriptionConfig`` (less ``selector``) typed by ``$ref`` to the core/v1 schemas, which are
copied verbatim, with everything they reference, under ``components/schemas``. This script does the same, so
the data file shipped next to ``config.py`` is derived from Kubernetes' API as OLM's is, and is written the
way Go's ``json.MarshalIndent`` writes OLM's (map keys sorted, ``<``, ``>`` and ``&`` escaped): generated from
the document OLM used, the file is OLM's byte for byte.

It is a development tool, not part of the installed package (the wheel ships only its output). Regenerate
with::

    python tools/gen_registryv1_schema.py path/to/api__v1_openapi.json

which rewrites ``common/bundle/registryv1/registryv1bundleconfig.json`` (``--output`` to write elsewhere).
The document comes from the Kubernetes source tree (``api/openapi-spec/v3/api__v1_openapi.json`` of the tag
OLM v1 generated its file from; OLM's ``hack/tools/update-registryv1-bundle-schema.sh`` names it).

Which document matters for more than descriptions: the shape of the core/v1 schemas decides the structure of
validation errors and so OLM v1's messages (an ``allOf: [{$ref}]`` wrapper adds a level). The committed file
is generated from the Kubernetes 1.35.1 document (openshift/microshift at a69e717a78,
``deps/github.com/openshift/kubernetes/api/openapi-spec/v3/api__v1_openapi.json``), whose schemas OLM v1's
shipped file (Kubernetes 1.36.0) has exactly, up to two field descriptions. The 1.36 document of that tree
today (openshift/kubernetes 1.36.1+) references list items without the ``allOf`` wrapper and would change
some multi-error messages.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

SCHEMA_ID = "https://operator-framework.io/schemas/registry-v1-bundle-config.json"
SCHEMA_DRAFT = "http://json-schema.org/draft-07/schema#"
SCHEMA_TITLE = "Registry+v1 Bundle Configuration"
SCHEMA_DESCRIPTION = (
    "Configuration schema for registry+v1 bundles. Includes watchNamespace for controlling operator scope and "
    "deploymentConfig for customizing operator deployment (environment variables, resource scheduling, storage, "
    "and pod placement). The deploymentConfig follows the same structure and behavior as OLM v0's "
    "SubscriptionConfig. Note: The 'selector' field from v0's SubscriptionConfig is not included as it was "
    "never used."
)
WATCH_NAMESPACE_DESCRIPTION = (
    "The namespace that the operator should watch for custom resources. The meaning and validation of this "
    "field depends on the operator's install modes. This field may be optional or required, and may have format "
    "constraints, based on the operator's supported install modes."
)
DEPLOYMENT_CONFIG_DESCRIPTION = (
    "Configuration for customizing operator deployment (environment variables, resources, volumes, etc.)"
)

CORE = "io.k8s.api.core.v1."
REF_PREFIX = "#/components/schemas/"

# The fields of OLM v0's SubscriptionConfig (github.com/operator-framework/api, pkg/operators/v1alpha1,
# subscription_types.go) without `selector`, which OLM v1 leaves out: JSON name -> ("map" | "one" | "list",
# core/v1 type). The struct has not changed since these nine fields; a new one would be a new OLM feature.
SUBSCRIPTION_CONFIG_FIELDS: dict[str, tuple[str, str]] = {
    "nodeSelector": ("map", ""),
    "tolerations": ("list", "Toleration"),
    "resources": ("one", "ResourceRequirements"),
    "envFrom": ("list", "EnvFromSource"),
    "env": ("list", "EnvVar"),
    "volumes": ("list", "Volume"),
    "volumeMounts": ("list", "VolumeMount"),
    "affinity": ("one", "Affinity"),
    "annotations": ("map", ""),
}


class GeneratorError(Exception):
    """The OpenAPI document lacks something the schema needs."""


def _references(node: Any) -> list[str]:
    """Names of the component schemas ``node`` references directly or in any sub-schema."""
    found: list[str] = []
    stack = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith(REF_PREFIX):
                found.append(ref[len(REF_PREFIX):])
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def _closure(schemas: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    """The named schemas and every schema they reference, transitively (a reference the document does not
    define is an error: the generated file must be closed under ``$ref``)."""
    collected: dict[str, Any] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in collected:
            continue
        if name not in schemas:
            raise GeneratorError(f"the OpenAPI document has no schema {name!r} (referenced by the closure)")
        collected[name] = schemas[name]
        pending.extend(_references(schemas[name]))
    return collected


def _sorted(value: Any) -> Any:
    """``value`` with every mapping's keys sorted, as Go's encoding/json writes a map."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def build_schema(openapi: dict[str, Any]) -> dict[str, Any]:
    """The base schema for an OpenAPI v3 document (a dict with ``components.schemas``), with its keys in the
    order OLM's generator writes them."""
    schemas = (openapi.get("components") or {}).get("schemas")
    if not isinstance(schemas, dict):
        raise GeneratorError("the OpenAPI document has no components.schemas")
    properties: dict[str, Any] = {}
    roots: list[str] = []
    for name, (shape, type_name) in SUBSCRIPTION_CONFIG_FIELDS.items():
        if shape == "map":
            properties[name] = {"type": "object", "additionalProperties": {"type": "string"}}
            continue
        ref = {"$ref": REF_PREFIX + CORE + type_name}
        roots.append(CORE + type_name)
        properties[name] = {"type": "array", "items": ref} if shape == "list" else ref
    components = _closure(schemas, roots)
    return {
        "$schema": SCHEMA_DRAFT,
        "$id": SCHEMA_ID,
        "title": SCHEMA_TITLE,
        "description": SCHEMA_DESCRIPTION,
        "type": "object",
        "properties": {
            "deploymentConfig": {
                "type": "object",
                "description": DEPLOYMENT_CONFIG_DESCRIPTION,
                "properties": {k: properties[k] for k in sorted(properties)},
                "additionalProperties": False,
            },
            "watchNamespace": {
                "description": WATCH_NAMESPACE_DESCRIPTION,
                "anyOf": [{"type": "null"}, {"type": "string"}],
            },
        },
        "additionalProperties": False,
        "components": {"schemas": _sorted(components)},
    }


def render(schema: dict[str, Any]) -> str:
    """``schema`` as Go's ``json.MarshalIndent(schema, "", "  ")`` writes it (HTML characters escaped), plus a
    final newline."""
    text = json.dumps(schema, indent=2, ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text + "\n"


DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "common/bundle/registryv1/registryv1bundleconfig.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("openapi", type=Path, help="Kubernetes' api/openapi-spec/v3/api__v1_openapi.json")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the schema")
    args = parser.parse_args(argv)
    try:
        openapi = json.loads(args.openapi.read_text(encoding="utf-8"))
        text = render(build_schema(openapi))
    except (OSError, ValueError, GeneratorError) as exc:
        print(f"gen_registryv1_schema: {args.openapi}: {exc}", file=sys.stderr)
        return 1
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

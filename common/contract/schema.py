"""The one rule table: the ClusterObjectSet structural schema and every CEL rule with its exact message.

Everything that enforces the API reads this table: the CRD in ``deploy/crd/`` is generated from it
(``python -m common.contract.crd``), and the webhook and ``cosctl validate`` check objects against it
(``common.contract.validation``: structure with ``jsonschema``, rules with the CEL runtime). The table is written as
the OpenAPI v3 schema the CRD carries, so there is nothing to translate and nothing to drift.

The rules and messages are those of the OLM v1 CRD (``shared/spec/api-and-admission.md`` section 2). The one
deliberate difference: upstream checks phase names with the ``format`` CEL library, which exists only on
Kubernetes 1.31+; here the same check is a portable ``matches`` regex with the same message, so the CRD
installs on Kubernetes 1.25+.
"""

from __future__ import annotations

import copy
from typing import Any

from common.contract import api
from common.contract.conditions import AVAILABLE, PROGRESSING

Schema = dict[str, Any]

# Messages are compatibility promises: byte for byte as upstream.
MSG_REVISION_IMMUTABLE = "revision is immutable"
MSG_COLLISION_PROTECTION_IMMUTABLE = "collisionProtection is immutable"
MSG_CANNOT_UNARCHIVE = "cannot un-archive"
MSG_PHASES_IMMUTABLE = "phases is immutable"
MSG_DNS1123_LABEL = (
    "the value must consist of only lowercase alphanumeric characters and hyphens, "
    "and must start and end with an alphanumeric character."
)
MSG_EXACTLY_ONE_OBJECT_REF = "exactly one of the fields in [object ref] must be set"
MSG_FIELD_PATH = (
    'must contain a valid field path. valid fields contain upper or lower-case alphanumeric characters '
    'separated by the "." character.'
)
MSG_OBSERVED_PHASES_IMMUTABLE = "observedPhases is immutable"
MSG_DIGEST_FORMAT = "digest must be in the format '<algorithm>:<hex>'"

FIELD_PATH_PATTERN = r"^[a-zA-Z0-9]+(?:\.[a-zA-Z0-9]+)*$"
DNS1123_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DIGEST_PATTERN = r"^[a-z0-9]+:[a-f0-9]+$"

MAX_PHASES = 20
MAX_OBJECTS_PER_PHASE = 50
MAX_PROBES = 20
MAX_ASSERTIONS = 20


def rule(expression: str, message: str) -> dict[str, str]:
    return {"rule": expression, "message": message}


def _string(description: str, *, min_length: int | None = None, max_length: int | None = None,
            enum: tuple[str, ...] | None = None, pattern: str | None = None) -> Schema:
    s: Schema = {"description": description, "type": "string"}
    if enum is not None:
        s["enum"] = list(enum)
    if min_length is not None:
        s["minLength"] = min_length
    if max_length is not None:
        s["maxLength"] = max_length
    if pattern is not None:
        s["pattern"] = pattern
    return s


def _object(description: str, properties: Schema, *, required: tuple[str, ...] = (),
            rules: list[dict[str, str]] | None = None) -> Schema:
    s: Schema = {"description": description, "type": "object", "properties": properties}
    if required:
        s["required"] = list(required)
    if rules:
        s["x-kubernetes-validations"] = rules
    return s


def _collision_protection(description: str) -> Schema:
    return _string(description, enum=api.COLLISION_PROTECTIONS)


def _field_path(description: str) -> Schema:
    s = _string(description, min_length=1, max_length=200)
    s["x-kubernetes-validations"] = [rule(f"self.matches('{FIELD_PATH_PATTERN.replace(chr(92), chr(92) * 2)}')",
                                          MSG_FIELD_PATH)]
    return s


def _body_required_when(field: str, type_value: str) -> dict[str, str]:
    return rule(f"self.type == '{type_value}' ?has(self.{field}) : !has(self.{field})",
                f"{field} is required when type is {type_value}, and forbidden otherwise")


_OBJECT_METADATA: Schema = {
    "description": "Standard object metadata of the embedded manifest.",
    "type": "object",
}

_EMBEDDED_OBJECT: Schema = {
    "description": "An embedded Kubernetes manifest. Top-level status is never applied.",
    "type": "object",
    "x-kubernetes-embedded-resource": True,
    "x-kubernetes-preserve-unknown-fields": True,
}

_REF: Schema = _object(
    "A key of a Secret whose value is the JSON manifest, optionally gzip-compressed.",
    {
        "name": _string("Name of the Secret.", min_length=1, max_length=253),
        "namespace": _string("Namespace of the Secret; empty means the system namespace.", max_length=63),
        "key": _string("Data key of the Secret holding the manifest.", min_length=1, max_length=253),
    },
    required=("name", "key"),
)

_OBJECT_ENTRY: Schema = _object(
    "One object of a phase: exactly one of object and ref.",
    {
        "object": _EMBEDDED_OBJECT,
        "ref": _REF,
        "collisionProtection": _collision_protection(
            "Collision protection for this object; overrides the phase's and the spec's."),
    },
    rules=[rule("[has(self.object),has(self.ref)].filter(x,x==true).size() == 1", MSG_EXACTLY_ONE_OBJECT_REF)],
)

_PHASE: Schema = _object(
    "A named group of objects, rolled out after the previous phase is complete.",
    {
        "name": {
            **_string("Name of the phase (an RFC 1123 DNS label).", min_length=1, max_length=63),
            "x-kubernetes-validations": [rule(f"self.matches('{DNS1123_LABEL_PATTERN}')", MSG_DNS1123_LABEL)],
        },
        "objects": {
            "description": "Objects of this phase.",
            "type": "array",
            "maxItems": MAX_OBJECTS_PER_PHASE,
            "items": _OBJECT_ENTRY,
        },
        "collisionProtection": _collision_protection(
            "Collision protection for the objects of this phase; overrides the spec's."),
    },
    required=("name", "objects"),
)

_LABEL_SELECTOR: Schema = _object(
    "A label selector with exactly one of matchLabels and matchExpressions.",
    {
        "matchLabels": {
            "description": "Labels an object must carry.",
            "type": "object",
            "additionalProperties": {"type": "string"},
        },
        "matchExpressions": {
            "description": "Label selector requirements, ANDed.",
            "type": "array",
            "items": _object(
                "A label selector requirement.",
                {
                    "key": _string("The label key."),
                    "operator": _string("In, NotIn, Exists or DoesNotExist."),
                    "values": {"description": "Values for In and NotIn.", "type": "array",
                               "items": {"type": "string"}},
                },
                required=("key", "operator"),
            ),
        },
    },
    rules=[rule("(has(self.matchExpressions) && !has(self.matchLabels)) || "
                "(!has(self.matchExpressions) && has(self.matchLabels))",
                "exactly one of matchLabels or matchExpressions must be set")],
)

_SELECTOR: Schema = _object(
    "Which objects a probe applies to.",
    {
        "type": _string("GroupKind or Label.", enum=("GroupKind", "Label")),
        "groupKind": _object(
            "Exact group and kind; an empty group is the core group.",
            {"group": _string("API group."), "kind": _string("Kind.")},
            required=("group", "kind"),
        ),
        "label": _LABEL_SELECTOR,
    },
    required=("type",),
    rules=[_body_required_when("groupKind", "GroupKind"), _body_required_when("label", "Label")],
)

_ASSERTION: Schema = _object(
    "A check on a selected object's status.",
    {
        "type": _string("ConditionEqual, FieldsEqual or FieldValue.",
                        enum=("ConditionEqual", "FieldsEqual", "FieldValue")),
        "conditionEqual": _object(
            "The condition of this type has this status.",
            {
                "type": _string("Condition type.", min_length=1, max_length=200),
                "status": _string("Expected status.", enum=("True", "False")),
            },
            required=("type", "status"),
        ),
        "fieldsEqual": _object(
            "Two fields have equal values.",
            {"fieldA": _field_path("First field path."), "fieldB": _field_path("Second field path.")},
            required=("fieldA", "fieldB"),
        ),
        "fieldValue": _object(
            "A field has this value.",
            {
                "fieldPath": _field_path("Field path."),
                "value": _string("Expected value.", min_length=1, max_length=200),
            },
            required=("fieldPath", "value"),
        ),
    },
    required=("type",),
    rules=[_body_required_when("conditionEqual", "ConditionEqual"),
           _body_required_when("fieldsEqual", "FieldsEqual"),
           _body_required_when("fieldValue", "FieldValue")],
)

_PROBE: Schema = _object(
    "Readiness assertions for the objects a selector picks.",
    {
        "selector": _SELECTOR,
        "assertions": {
            "description": "All must be true for a selected object to be ready.",
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_ASSERTIONS,
            "items": _ASSERTION,
        },
    },
    required=("selector", "assertions"),
)

_SPEC: Schema = _object(
    "The desired revision.",
    {
        "revision": {
            "description": "Revision number, increasing across revisions of the same owner.",
            "type": "integer",
            "format": "int64",
            "minimum": 1,
            "x-kubernetes-validations": [rule("self == oldSelf", MSG_REVISION_IMMUTABLE)],
        },
        "lifecycleState": {
            **_string("Active rolls out; Archived tears down. Archived never goes back to Active.",
                      enum=api.LIFECYCLE_STATES),
            "x-kubernetes-validations": [rule(
                "oldSelf == 'Active' || oldSelf == 'Archived' && oldSelf == self", MSG_CANNOT_UNARCHIVE)],
        },
        "collisionProtection": {
            **_collision_protection("How to treat objects that exist already and are not owned by this "
                                    "revision's owner: Prevent, IfNoController or None."),
            "x-kubernetes-validations": [rule("self == oldSelf", MSG_COLLISION_PROTECTION_IMMUTABLE)],
        },
        "phases": {
            "description": "Ordered phases; each is rolled out after the previous one is complete.",
            "type": "array",
            "maxItems": MAX_PHASES,
            "items": _PHASE,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "x-kubernetes-validations": [rule("self == oldSelf || oldSelf.size() == 0", MSG_PHASES_IMMUTABLE)],
        },
        "progressDeadlineMinutes": {
            "description": "Minutes after creation by which the rollout must have succeeded; unset means none.",
            "type": "integer",
            "format": "int32",
            "minimum": 10,
            "maximum": 720,
        },
        "progressionProbes": {
            "description": "Readiness probes in addition to the built-in ones.",
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_PROBES,
            "items": _PROBE,
        },
    },
    required=("revision", "lifecycleState", "collisionProtection"),
)

_CONDITION: Schema = _object(
    "A standard Kubernetes condition.",
    {
        "type": _string("Condition type.", max_length=316,
                        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"),
        "status": _string("True, False or Unknown.", enum=("True", "False", "Unknown")),
        "observedGeneration": {"description": "Generation the condition was set for.", "type": "integer",
                               "format": "int64", "minimum": 0},
        "lastTransitionTime": {"description": "When the status last changed.", "type": "string",
                               "format": "date-time"},
        "reason": _string("Machine-readable reason.", min_length=1, max_length=1024,
                          pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
        "message": _string("Human-readable message.", max_length=32768),
    },
    required=("type", "status", "lastTransitionTime", "reason", "message"),
)

_STATUS: Schema = _object(
    "Observed state, written only by the reconciler.",
    {
        "conditions": {
            "description": "Available, Progressing and Succeeded.",
            "type": "array",
            "items": _CONDITION,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
        },
        "observedPhases": {
            "description": "Digest of each phase's resolved content, recorded once.",
            "type": "array",
            "maxItems": MAX_PHASES,
            "items": _object(
                "A phase and the digest of its resolved objects.",
                {
                    "name": _string("Phase name.", min_length=1, max_length=63),
                    "digest": {
                        **_string("<algorithm>:<hex>", min_length=1, max_length=256),
                        "x-kubernetes-validations": [rule(f"self.matches('{DIGEST_PATTERN}')",
                                                          MSG_DIGEST_FORMAT)],
                    },
                },
                required=("name", "digest"),
            ),
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "x-kubernetes-validations": [rule("self == oldSelf || oldSelf.size() == 0",
                                              MSG_OBSERVED_PHASES_IMMUTABLE)],
        },
    },
)

COS_SCHEMA: Schema = {
    "description": "ClusterObjectSet is an immutable revision of a set of Kubernetes objects, "
                   "rolled out in ordered phases.",
    "type": "object",
    "properties": {
        "apiVersion": {"description": "APIVersion of this representation.", "type": "string"},
        "kind": {"description": "Kind of this representation.", "type": "string"},
        "metadata": {"type": "object"},
        "spec": _SPEC,
        "status": _STATUS,
    },
    "required": ["spec"],
}

PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": ctype, "type": "string", "jsonPath": f'.status.conditions[?(@.type=="{ctype}")].status'}
    for ctype in (AVAILABLE, PROGRESSING)
] + [
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def openapi_schema() -> Schema:
    """A copy of the table as the CRD's ``openAPIV3Schema``."""
    return copy.deepcopy(COS_SCHEMA)


def iter_rules(schema: Schema = COS_SCHEMA, path: str = "") -> list[tuple[str, str, str]]:
    """Every (schema path, rule, message) of the table, in document order; for tests and docs."""
    found: list[tuple[str, str, str]] = []
    for r in schema.get("x-kubernetes-validations", []):
        found.append((path or ".", r["rule"], r["message"]))
    for name, sub in schema.get("properties", {}).items():
        found.extend(iter_rules(sub, f"{path}.{name}"))
    if "items" in schema:
        found.extend(iter_rules(schema["items"], f"{path}[]"))
    return found

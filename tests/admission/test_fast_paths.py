"""Property: the validating route's fast paths judge exactly as the reference paths they stand in for.

``structural_errors`` (a compiled validity check before jsonschema), ``cel_errors`` (shortcuts for the
constant-shaped rules, CEL views built only where a program runs), ``metadata_valid`` and ``identity_valid``
(validity checks before the field-by-field ones) must give byte-identical errors, in the same order, on any
input: random ClusterObjectSets generated from the rule table itself, most of them broken somewhere, some far
from the schema, and UPDATE pairs for the transition rules.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.contract import names, samples
from common.contract import schema as table
from common.contract.admission import Request, validate
from common.contract.cel import compile_rule
from common.contract.validation import cel_rules, metadata, structure
from tests.admission.oracles import cel_errors_reference

Obj = dict[str, Any]

# Values chosen to sit on the edges of the table's rules: patterns (a final newline, case, leading digits
# and dashes, dots), enums, bounds, lengths, and JSON types the fields do not declare.
STRINGS = ["", "a", "deploy", "phase-1", "Phase", "1abc", "-a", "a-", "a\n", "a" * 63, "a" * 64, "a" * 254,
           "Active", "Archived", "Prevent", "IfNoController", "None", "GroupKind", "Label", "ConditionEqual",
           "FieldsEqual", "FieldValue", "True", "False", "Unknown", "status.ready", "status..ready", "a.b\n",
           "sha256:abc123", "sha256:ABC", "sha256:", ":abc", "Available", "example.com/Ready", "Bad Reason",
           "2024-01-01T00:00:00Z", "v1", "apps/v1", "a/b/c", "Secret", "ConfigMap", "demo", "ns", "é"]
NUMBERS = [0, 1, 9, 10, 30, 720, 721, -1, 2**31 - 1, 2**31, 2**63, 1.0, 10.0, 1.5, True, False]
junk = st.one_of(st.none(), st.sampled_from(NUMBERS), st.sampled_from(STRINGS), st.just([]), st.just({}),
                 st.just(["x"]), st.just({"x": 1}))

LABEL_KEYS = ["app", "app.kubernetes.io/name", "example.com/", "/name", "a/b/c", "-bad", "UPPER", "x" * 64,
              "é"]
LABEL_VALUES = ["", "demo", "v1.2.3", "-bad", "x" * 64, "a b", 1, None]


def _valid_choices(node: Obj, candidates: list[Any]) -> list[Any]:
    """The candidates the node's schema and rules accept (all of them if none is accepted)."""
    checker = structure._StructuralValidator({k: v for k, v in node.items() if k != "items"})
    rules = [compile_rule(r["rule"], r["message"]) for r in node.get("x-kubernetes-validations", [])]
    good = [c for c in candidates if checker.is_valid(c) and not isinstance(c, (bool, float))
            and all(r.is_transition or r.holds(c) for r in rules)]
    return good or candidates


@st.composite
def manifests(draw: st.DrawFn, strict: bool = False) -> Any:
    """An embedded manifest: usually shaped like one, with edge cases in identity and metadata (``strict``:
    a valid one, with at most valid variations)."""
    if not strict and draw(st.integers(0, 9)) == 0:
        return draw(junk)
    manifest: Obj = {}
    if strict or draw(st.integers(0, 9)):
        manifest["apiVersion"] = draw(st.sampled_from(["v1", "apps/v1", "example.com/v1"] if strict else
                                                      ["v1", "apps/v1", "", "a/b/c", 1, "example.com/v1"]))
    if strict or draw(st.integers(0, 9)):
        manifest["kind"] = draw(st.sampled_from(["ConfigMap", "Secret", "Deployment"] if strict else
                                                ["ConfigMap", "Secret", "Deployment", "", "Bad_Kind", 2]))
    if strict or draw(st.integers(0, 9)):
        meta: Any = {}
        if strict or draw(st.booleans()):
            meta["name"] = draw(st.sampled_from(["cm1", "cm2", "cm3"] if strict else
                                                ["cm1", "cm2", ".", "..", "a/b", "a%b", 3, ""]))
        if draw(st.booleans()):
            meta["namespace"] = draw(st.sampled_from(["ns", "", "other"] if strict else
                                                     ["ns", "", "Bad", "a" * 64, None, 4]))
        for field, loose_values in (("labels", LABEL_VALUES), ("annotations", ["anything", "", 5])):
            keys, values = (["app", "app.kubernetes.io/name"], ["", "demo", "v1.2.3"]) if strict else (
                LABEL_KEYS, loose_values)
            if draw(st.integers(0, 2)) == 0:
                meta[field] = draw(st.dictionaries(st.sampled_from(keys), st.sampled_from(values), max_size=3)
                                   if strict else st.one_of(
                    st.dictionaries(st.sampled_from(keys), st.sampled_from(values), max_size=3), junk))
        if draw(st.integers(0, 4)) == 0:
            field = draw(st.sampled_from(metadata.FORBIDDEN_METADATA))
            meta[field] = draw(st.sampled_from([None, "", 0, [], {}] if strict else
                                               [None, "", 0, [], {}, "x", 1, ["f"], False]))
        if not strict and draw(st.integers(0, 9)) == 0:
            meta = draw(junk)
        manifest["metadata"] = meta
    if draw(st.booleans()):
        manifest["data"] = {"key": draw(st.sampled_from(STRINGS))}
    return manifest


def from_schema(node: Obj, strict: bool = False) -> st.SearchStrategy[Any]:
    """Values for one node of the rule table: mostly of its type with edge-case contents, sometimes junk;
    ``strict``: values the node's schema and own rules accept, with every required property."""
    if node.get("x-kubernetes-embedded-resource"):
        return manifests(strict)
    kind = node.get("type")
    if kind == "object" and "properties" in node:
        props = {name: from_schema(sub, strict) for name, sub in node["properties"].items()}
        required = node.get("required", ())

        @st.composite
        def objects(draw: st.DrawFn) -> Obj:
            out: Obj = {}
            for name, sub in props.items():
                if (name in required or draw(st.integers(0, 5)) > 0) and (
                        (strict and name in required) or draw(st.integers(0, 11)) > 0):
                    out[name] = draw(sub)
            if not strict and draw(st.integers(0, 9)) == 0:
                out["unknownField"] = draw(junk)
            return out
        good = objects()
    elif kind == "object":
        good = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=2)
        if strict:
            good = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["demo", "x"]), max_size=2)
    elif kind == "array":
        item = from_schema(node["items"], strict)
        limit = node.get("maxItems")
        low = node.get("minItems", 0) if strict else 0
        # Up to 3 drawn items; rarely (a long list is slow to judge by reference) one item repeated over
        # maxItems.
        good = st.lists(item, min_size=low, max_size=max(low, 3))
        if limit and not strict:
            repeated = item.map(lambda one: [copy.deepcopy(one) for _ in range(limit + 1)])
            good = st.one_of(good, good, good, good, good, good, good, repeated)
    elif kind == "string":
        choices = list(node.get("enum", [])) + STRINGS
        valid = _valid_choices(node, choices)
        # Loose: as often an edge string as a valid one, or a valid one with a final newline (which Python's
        # "$" matches and RE2's does not).
        good = st.sampled_from(valid) if strict else st.one_of(
            st.sampled_from(valid), st.sampled_from(choices), st.sampled_from([v + "\n" for v in valid]))
    elif kind == "integer":
        good = st.sampled_from(_valid_choices(node, NUMBERS) if strict else NUMBERS)
    else:
        good = junk
    if strict:
        return good
    return st.one_of(good, good, good, good, good, good, good, good, good, junk)


def _cos(strict: bool) -> st.SearchStrategy[Obj]:
    spec = from_schema(table.COS_SCHEMA["properties"]["spec"], strict)
    status = from_schema(table.COS_SCHEMA["properties"]["status"], strict)
    return st.builds(lambda spec, status, meta: {
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "metadata": meta,
        **({"spec": spec} if spec is not None else {}), **({"status": status} if status is not None else {})},
        spec if strict else st.one_of(spec, st.none()), st.one_of(st.none(), st.none(), status),
        st.sampled_from([{"name": "demo"}, {}, {"generateName": "demo-"}]))


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


EDGES = STRINGS + [s + "\n" for s in STRINGS] + NUMBERS + [None, [], {}, ["x"], {"x": 1}]


@st.composite
def corrupted(draw: st.DrawFn) -> Obj:
    """A valid (or nearly) COS with one to three values replaced by edge values or removed: one fault
    where the fast paths must hand over to the reference, amid values they accept."""
    # Copies: the strategies hand out shared constants (st.just([]), sampled_from's dicts, EDGES' lists), and
    # editing them in place changed later examples (hypothesis: "inconsistent data generation") and could make a
    # list contain itself (RecursionError in _paths).
    doc = copy.deepcopy(draw(_cos(strict=True)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)[1:]))
        parent: Any = doc
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and draw(st.integers(0, 3)) == 0:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(EDGES)))
    return doc


# Valid or nearly (so the fast paths' "valid" answer is checked), one fault in a valid one, broken anywhere.
cos_objects = st.one_of(_cos(strict=True), corrupted(), _cos(strict=False))
metadata_manifests = st.one_of(manifests(strict=True), manifests())

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


@PROPERTY
@given(cos_objects)
def test_structure_fast_path_is_the_reference(obj: Obj) -> None:
    pruned = structure.prune_nulls(obj)
    assert structure.structural_errors(pruned) == structure.schema_errors(pruned)


@PROPERTY
@given(cos_objects, st.one_of(st.none(), cos_objects))
def test_cel_fast_path_is_the_reference(obj: Obj, old: Obj | None) -> None:
    new, prior = structure.prune_nulls(obj), structure.prune_nulls(old) if old is not None else None
    fast = cel_rules.cel_errors(new, prior)
    reference = cel_errors_reference(new, prior)
    assert [str(e) for e in fast] == [str(e) for e in reference]
    assert fast == reference


@PROPERTY
@given(cos_objects)
def test_unknown_fields_fast_check_is_the_reference(obj: Obj) -> None:
    pruned = structure.prune_nulls(obj)
    assert structure.only_known_fields(pruned) is (structure.unknown_fields(pruned) == [])


@PROPERTY
@given(metadata_manifests)
def test_metadata_fast_path_is_the_reference(manifest: Any) -> None:
    meta = manifest.get("metadata") if isinstance(manifest, dict) else manifest
    path = "spec.phases[0].objects[0].object.metadata"
    assert metadata.metadata_valid(meta) is (metadata.metadata_field_errors(meta, path) == [])


IDENTITY_VALUES = st.one_of(st.sampled_from(["", "v1", "apps/v1", "a/b/c", "/", "v1/", "Deployment", "deploy",
                                             "Config-Map", "1abc", "a_b", "A" * 63, "A" * 64, "Ä"]),
                            st.none(), st.integers(), st.booleans(), st.text(max_size=8), st.lists(st.text()))


@PROPERTY
@given(st.dictionaries(st.sampled_from(["apiVersion", "kind", "metadata"]), IDENTITY_VALUES))
def test_identity_fast_path_is_the_reference(manifest: Obj) -> None:
    path = "spec.phases[0].objects[0].object"
    assert metadata.identity_valid(manifest) is (metadata.identity_errors(manifest, path) == [])


VALID_META: Obj = {"name": "cm1", "namespace": "ns", "labels": {"app.kubernetes.io/name": "demo"},
                   "annotations": {"example.com/owner": "team"}}
ONE_FAULT: list[tuple[str, Any]] = [("name", v) for v in (".", "..", "a/b", "a%b", 3)] + [
    ("namespace", v) for v in ("Bad", "a" * 64, 4)] + [
    ("labels", v) for v in ({"bad key!": "x"}, {"app": "bad value!"}, {"app": 1}, "x")] + [
    ("annotations", v) for v in ({"a/b/c": "v"}, {"a": 1}, [""])] + [
    (field, "x") for field in metadata.FORBIDDEN_METADATA]


@pytest.mark.parametrize(("field", "value"), ONE_FAULT, ids=[f"{f}={v!r}"[:40] for f, v in ONE_FAULT])
def test_metadata_fast_path_refuses_each_fault_alone(field: str, value: Any) -> None:
    """Each check of the fast path on its own, in metadata that is otherwise valid (random metadata seldom
    breaks exactly one rule, so a dropped check could pass the property above)."""
    path = "spec.phases[0].objects[0].object.metadata"
    assert metadata.metadata_valid(VALID_META) and metadata.metadata_field_errors(VALID_META, path) == []
    meta = {**VALID_META, field: value}
    assert not metadata.metadata_valid(meta) and metadata.metadata_field_errors(meta, path)


@PROPERTY
@given(cos_objects)
def test_update_of_the_same_phases_judged_as_its_create_minus_what_ratchets(obj: Obj) -> None:
    """Transition rules through the fast walk on an UPDATE whose ``old`` differs only in one phase."""
    old = copy.deepcopy(obj)
    phases = old.get("spec", {}).get("phases") if isinstance(old.get("spec"), dict) else None
    if isinstance(phases, list) and phases:
        phases.pop()
    new, prior = structure.prune_nulls(obj), structure.prune_nulls(old)
    assert cel_rules.cel_errors(new, prior) == cel_errors_reference(new, prior)


def test_every_shortcut_stands_for_a_rule_of_the_table() -> None:
    """A shortcut whose rule text changed would silently stop applying: the table must still hold each."""
    rules = {r for _, r, _ in table.iter_rules()}
    assert set(cel_rules._SHORTCUTS) <= rules
    assert len(cel_rules._SHORTCUTS) == 10


@pytest.mark.parametrize("rule", sorted(cel_rules._SHORTCUTS))
@pytest.mark.parametrize("value", [
    {}, {"object": {}}, {"ref": {}}, {"object": {}, "ref": {}}, {"type": "GroupKind", "groupKind": {}},
    {"type": "GroupKind"}, {"type": "Label", "label": {}}, {"type": "Label"}, {"type": 1}, {"type": "Other"},
    {"matchLabels": {}}, {"matchExpressions": []}, {"matchLabels": {}, "matchExpressions": []},
    {"type": "ConditionEqual", "conditionEqual": {}}, {"type": "FieldValue", "fieldsEqual": {}},
    "deploy", "Deploy", "deploy\n", "-deploy", "status.ready", "status.", "sha256:ab12", "sha256:AB", "", 1, None,
])
def test_a_shortcut_that_holds_agrees_with_cel(rule: str, value: Any) -> None:
    """The shortcut is a sufficient condition: whenever it holds, the CEL program holds too."""
    if cel_rules._SHORTCUTS[rule](value):
        assert compile_rule(rule, "m").holds(value)


def test_a_maximal_create_takes_every_fast_path_and_is_admitted_as_before() -> None:
    obj = samples.maximal_cos()
    assert structure._VALID is not None and structure._VALID(obj)
    assert cel_rules.cel_errors(obj) == cel_errors_reference(obj) == []
    decision = validate(Request("ClusterObjectSet", "CREATE", obj))
    assert decision.allowed
    assert [w[:40] for w in decision.warnings] == ["this ClusterObjectSet is 1.12 MiB serial"]


def test_list_items_their_shortcuts_settle_are_not_visited() -> None:
    """On a maximal COS the 1,000 inline objects are settled by the exactly-one shortcut: no path is built
    and no judge called for them (only with ``shortcuts``: the reference walk still visits every one)."""
    obj = samples.maximal_cos()
    items = cel_rules.RULE_TREE["properties"]["spec"]["properties"]["phases"]["items"]["properties"]["objects"]
    assert items["items"]["settled_by"] is not None
    assert cel_rules.RULE_TREE["properties"]["spec"]["properties"]["phases"]["settled_by"] is None  # transition

    def visited(shortcuts: bool) -> list[str]:
        paths: list[str] = []
        cel_rules.walk(cel_rules.RULE_TREE, obj, cel_rules.MISSING, "", [],
                       lambda node, value, old, path, out: paths.append(path), shortcuts=shortcuts)
        return paths

    assert not [p for p in visited(True) if ".objects[" in p]
    assert len([p for p in visited(False) if ".objects[" in p]) == 1000
    both = {**obj["spec"]["phases"][0]["objects"][0], "ref": {"name": "s", "key": "k"}}
    obj["spec"]["phases"][0]["objects"][0] = both  # the shortcut fails: CEL decides, and words it
    assert [e.field for e in cel_rules.cel_errors(obj)] == ["spec.phases[0].objects[0]"]


def test_metadata_too_long_to_be_valid_is_refused_without_entering_the_caches() -> None:
    """A label key or value, a kind or a namespace longer than any valid one is invalid whatever it holds: refused
    at once, and never kept by the validity caches (whose entries would otherwise hold strings as large as a
    request)."""
    long_value, long_key = "v" * 64, "example.com/" + "k" * 306
    before = (metadata._label_valid.cache_info().currsize, metadata._annotation_key_valid.cache_info().currsize)
    assert not metadata.metadata_valid({"labels": {"app": long_value}})
    assert not metadata.metadata_valid({"labels": {long_key: "v"}})
    assert not metadata.metadata_valid({"annotations": {long_key: "v"}})
    after = (metadata._label_valid.cache_info().currsize, metadata._annotation_key_valid.cache_info().currsize)
    assert after == before
    assert metadata.metadata_valid({"labels": {"example.com/" + "k" * 63: "v" * 63}})  # the longest valid ones
    assert [e.detail for e in metadata.metadata_field_errors({"labels": {"app": long_value}}, "m")] == [
        "must be no more than 63 bytes"]
    caches = (metadata._kind_valid.cache_info().currsize, metadata._namespace_valid.cache_info().currsize)
    assert not metadata.identity_valid({"apiVersion": "v1", "kind": "K" * 64})
    assert not metadata.metadata_valid({"namespace": "n" * 64})
    assert (metadata._kind_valid.cache_info().currsize, metadata._namespace_valid.cache_info().currsize) == caches
    assert metadata.identity_valid({"apiVersion": "v1", "kind": "K" * 63})   # the longest valid ones
    assert metadata.metadata_valid({"namespace": "n" * 63})


def test_names_checks_keep_no_value_too_long_to_be_valid() -> None:
    """The name checks' caches take only values short enough to be valid: a longer one gets the same words,
    computed without the cache (which would otherwise hold up to 4,096 strings as large as a request)."""
    checks = [(names.is_dns1123_subdomain, 253, "must be no more than 253 characters"),
              (names.is_dns1123_label, 63, "must be no more than 63 characters"),
              (names.is_dns1035_label, 63, "must be no more than 63 characters"),
              (names.is_qualified_name, 317, "name part must be no more than 63 bytes"),
              (names.is_valid_label_value, 63, "must be no more than 63 bytes")]
    for check, longest, words in checks:
        check.cache_clear()  # type: ignore[attr-defined]
        assert words in check("a" * (longest + 1) + "x" * 100_000)
        assert check.cache_info().currsize == 0  # type: ignore[attr-defined]
        check("b" * longest)   # the longest that could be valid is cached (valid or not)
        assert check.cache_info().currsize == 1  # type: ignore[attr-defined]

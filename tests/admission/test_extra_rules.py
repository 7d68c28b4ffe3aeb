"""Every row of the "what the webhook adds" table (shared/spec/api-and-admission.md section 3)."""

from __future__ import annotations

import copy

import pytest

from common.contract.samples import maximal_cos
from common.contract.validation import serialized_size
from tests.admission.helpers import base_cos, check, errors_of, probe, reviewed, update


def _with_objects(*manifests: dict) -> dict:
    return base_cos(phases=[{"name": "deploy", "objects": [{"object": m} for m in manifests]}])


def test_cos_without_spec() -> None:
    obj = base_cos()
    del obj["spec"]
    assert errors_of(obj) == ["spec: Required value"]


def test_update_removing_non_empty_phases() -> None:
    new, old = update(base_cos(), lambda o: o["spec"].pop("phases"))
    assert errors_of(new, old) == ["spec.phases: Invalid value: phases is immutable"]


def test_update_removing_empty_phases_is_allowed() -> None:
    new, old = update(base_cos(phases=[]), lambda o: o["spec"].pop("phases"))
    assert errors_of(new, old) == []


def test_update_reordering_phases() -> None:
    old = base_cos(phases=[{"name": "a", "objects": []}, {"name": "b", "objects": []}])
    new, _ = update(old, lambda o: o["spec"]["phases"].reverse())
    assert errors_of(new, old) == ["spec.phases: Invalid value: phases is immutable"]


@pytest.mark.parametrize("manifest,expected", [
    ({"kind": "ConfigMap", "metadata": {"name": "a"}},
     ["spec.phases[0].objects[0].object.apiVersion: Required value"]),
    ({"apiVersion": "v1", "metadata": {"name": "a"}},
     ["spec.phases[0].objects[0].object.kind: Required value"]),
    ({"apiVersion": "", "kind": "ConfigMap", "metadata": {"name": "a"}},
     ['spec.phases[0].objects[0].object.apiVersion: Invalid value: "": must not be empty']),
    ({"apiVersion": "a/b/c", "kind": "ConfigMap", "metadata": {"name": "a"}},
     ['spec.phases[0].objects[0].object.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c']),
    ({"apiVersion": 1, "kind": "ConfigMap", "metadata": {"name": "a"}},
     ["spec.phases[0].objects[0].object.apiVersion: Invalid value: 1: must be a string"]),
    ({"apiVersion": "v1", "kind": "Config Map", "metadata": {"name": "a"}},
     ['spec.phases[0].objects[0].object.kind: Invalid value: "Config Map": may have mixed case, but should '
      "otherwise match: a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-', "
      "start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
      "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "a"},
     ['spec.phases[0].objects[0].object.metadata: Invalid value: "string": '
      'spec.phases[0].objects[0].object.metadata in body must be of type object: "string"']),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a/b"}},
     ['spec.phases[0].objects[0].object.metadata.name: Invalid value: "a/b": may not contain \'/\'']),
])
def test_inline_object_identity(manifest: dict, expected: list[str]) -> None:
    assert errors_of(_with_objects(manifest)) == expected


@pytest.mark.parametrize("api_version", ["v1", "apps/v1", "cert-manager.io/v1"])
def test_inline_object_api_versions_allowed(api_version: str) -> None:
    assert errors_of(_with_objects({"apiVersion": api_version, "kind": "Thing", "metadata": {"name": "a"}})) == []


@pytest.mark.parametrize("field,value", [
    ("uid", "1234"), ("resourceVersion", "42"), ("generation", 3), ("generateName", "cm-"),
    ("finalizers", ["example.com/x"]),
    ("ownerReferences", [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]),
])
def test_server_populated_metadata_forbidden(field: str, value) -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", field: value}}
    assert errors_of(_with_objects(manifest)) == [
        f"spec.phases[0].objects[0].object.metadata.{field}: Forbidden: must be empty"]


def test_each_forbidden_metadata_field_reported() -> None:
    meta = {"name": "a", "uid": "u", "finalizers": ["f"], "ownerReferences": [{}]}
    assert errors_of(_with_objects({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})) == [
        "spec.phases[0].objects[0].object.metadata.finalizers: Forbidden: must be empty",
        "spec.phases[0].objects[0].object.metadata.ownerReferences: Forbidden: must be empty",
        "spec.phases[0].objects[0].object.metadata.uid: Forbidden: must be empty",
    ]


def test_top_level_status_is_allowed() -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "status": {"x": 1}}
    assert errors_of(_with_objects(manifest)) == []


def test_invalid_labels_in_embedded_metadata() -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"ok": "-bad-"}}}
    assert errors_of(_with_objects(manifest)) == [
        'spec.phases[0].objects[0].object.metadata.labels: Invalid value: "-bad-": a valid label must be an empty '
        "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]


def test_same_object_twice_in_one_phase() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}
    assert errors_of(_with_objects(cm, copy.deepcopy(cm))) == [
        'spec.phases[0].objects[1]: Duplicate value: {"group":"","kind":"ConfigMap","name":"a","namespace":"ns"}: '
        "the same object is already at spec.phases[0].objects[0]"]


def test_same_object_across_phases_with_other_version() -> None:
    d1 = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "ns"}}
    d2 = {"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "a", "namespace": "ns"}}
    obj = base_cos(phases=[{"name": "one", "objects": [{"object": d1}]}, {"name": "two", "objects": [{"object": d2}]}])
    assert errors_of(obj) == [
        'spec.phases[1].objects[0]: Duplicate value: {"group":"apps","kind":"Deployment","name":"a","namespace":"ns"}: '
        "the same object is already at spec.phases[0].objects[0]"]


def test_same_name_in_other_namespace_or_kind_is_fine() -> None:
    a = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "x"}}
    b = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "y"}}
    c = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "x"}}
    assert errors_of(_with_objects(a, b, c)) == []


def test_same_ref_twice_counts_the_default_namespace() -> None:
    obj = base_cos(phases=[{"name": "p", "objects": [
        {"ref": {"name": "s", "key": "k"}}, {"ref": {"name": "s", "namespace": "olmv1-system", "key": "k"}}]}])
    assert errors_of(obj) == [
        'spec.phases[0].objects[1]: Duplicate value: {"key":"k","name":"s","namespace":"olmv1-system"}: '
        "the same ref is already at spec.phases[0].objects[0]"]


@pytest.mark.parametrize("expr,expected", [
    ({"key": "a", "operator": "Foo"},
     ['spec.progressionProbes[0].selector.label.matchExpressions[0].operator: Invalid value: "Foo": '
      "not a valid selector operator"]),
    ({"key": "a", "operator": "In"},
     ["spec.progressionProbes[0].selector.label.matchExpressions[0].values: Required value: "
      "must be specified when `operator` is 'In' or 'NotIn'"]),
    ({"key": "a", "operator": "NotIn", "values": []},
     ["spec.progressionProbes[0].selector.label.matchExpressions[0].values: Required value: "
      "must be specified when `operator` is 'In' or 'NotIn'"]),
    ({"key": "a", "operator": "Exists", "values": ["x"]},
     ["spec.progressionProbes[0].selector.label.matchExpressions[0].values: Forbidden: "
      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"]),
    ({"key": "a", "operator": "DoesNotExist", "values": ["x"]},
     ["spec.progressionProbes[0].selector.label.matchExpressions[0].values: Forbidden: "
      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"]),
    ({"key": "a", "operator": "In", "values": ["x"]}, []),
    ({"key": "a", "operator": "Exists"}, []),
])
def test_label_selector_operators(expr: dict, expected: list[str]) -> None:
    obj = base_cos(progressionProbes=[probe({"type": "Label", "label": {"matchExpressions": [expr]}})])
    assert errors_of(obj) == expected


def test_label_selector_bad_key() -> None:
    """As kube-apiserver 1.36 words it (apimachinery 0.36's content.IsLabelKey): a label key, lengths in bytes."""
    obj = base_cos(progressionProbes=[probe({"type": "Label", "label": {"matchLabels": {"a/b/c": "x",
                                                                                        "k": "v" * 64}}})])
    assert errors_of(obj) == [
        'spec.progressionProbes[0].selector.label.matchLabels: Invalid value: "a/b/c": a valid label key must '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName')",
        f'spec.progressionProbes[0].selector.label.matchLabels: Invalid value: "{"v" * 64}": must be no more than '
        "63 bytes"]


def test_phase_name_starting_with_digit_is_allowed_with_warning() -> None:
    d = check(base_cos(phases=[{"name": "1st", "objects": []}]))
    assert d.allowed
    assert d.warnings == ('spec.phases[0].name: "1st" starts with a digit: a valid RFC 1123 label, but '
                          "implementations that require RFC 1035 labels reject it",)


def test_inline_secret_is_allowed_with_warning_without_its_data() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "app"},
              "stringData": {"password": "hunter2-MARKER"}}
    d = check(_with_objects(secret))
    assert d.allowed
    assert d.warnings == ('spec.phases[0].objects[0].object: inline Secret "app/creds" is readable by anyone '
                          "who can read this ClusterObjectSet; put it in an object-data Secret and use a ref "
                          "instead",)
    assert all(len(w) < 256 and "MARKER" not in w for w in d.warnings)


def test_large_cos_is_allowed_with_warning() -> None:
    d = check(maximal_cos())
    assert d.allowed
    assert d.warnings == ("this ClusterObjectSet is 1.12 MiB serialized, close to etcd's 1.5 MiB object limit; "
                          "move large objects into object-data Secrets and reference them with ref "
                          "(cosctl pack does this)",)
    assert check(base_cos()).warnings == ()


def _sized_cos(size: int) -> dict:
    """A valid COS whose compact JSON is exactly ``size`` bytes (one inline ConfigMap carries the bulk)."""
    obj = _with_objects({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "ns"},
                         "data": {"blob": ""}})
    obj["spec"]["phases"][0]["objects"][0]["object"]["data"]["blob"] = "x" * (size - serialized_size(obj))
    assert serialized_size(obj) == size
    return obj


def too_large(size: int) -> str:
    return (f"spec.phases: Too long: this ClusterObjectSet is {size} bytes serialized ({size / 1048576:.2f} MiB), "
            "over the 3145728 bytes (3 MiB) the API server reads in a request, so it can never be stored: move "
            "objects into object-data Secrets and reference them with ref (cosctl pack does this)")


def over_etcd(mib: str) -> str:
    return (f"this ClusterObjectSet is {mib} MiB serialized, over the 1.5 MiB etcd stores by default (unless its "
            "--max-request-bytes was raised); move large objects into object-data Secrets and reference them with "
            "ref (cosctl pack does this)")


def test_a_cos_no_api_server_can_store_is_denied_pointing_at_cosctl_pack() -> None:
    assert errors_of(_sized_cos(3145729)) == [too_large(3145729)]
    assert check(_sized_cos(3145729)).warnings == ()  # the error says it; no warning repeats it
    assert errors_of(_sized_cos(31037194)) == [
        "spec.phases: Too long: this ClusterObjectSet is 31037194 bytes serialized (29.60 MiB), over the 3145728 "
        "bytes (3 MiB) the API server reads in a request, so it can never be stored: move objects into "
        "object-data Secrets and reference them with ref (cosctl pack does this)"]


def test_a_cos_over_etcds_default_limit_is_allowed_with_a_warning_as_a_cluster_may_raise_it() -> None:
    # the spec's row: larger than 1 MiB is allowed with a warning; a cluster whose etcd takes larger requests
    # stores it, and the webhook must not refuse what the cluster can hold
    for size, mib in ((1572865, "1.50"), (3145728, "3.00")):
        d = check(_sized_cos(size))
        assert d.allowed and d.warnings == (over_etcd(mib),)
    d = check(_sized_cos(1572864))
    assert d.allowed
    assert d.warnings == ("this ClusterObjectSet is 1.50 MiB serialized, close to etcd's 1.5 MiB object limit; "
                          "move large objects into object-data Secrets and reference them with ref "
                          "(cosctl pack does this)",)


def test_the_size_limit_leaves_managed_fields_out_as_the_api_server_drops_them_before_giving_up() -> None:
    obj = _sized_cos(1572000)
    obj["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                                         "fieldsV1": {"f:spec": {"f:x" * 500: {}}}}]
    assert serialized_size(obj) > 1572864
    d = check(obj)
    assert d.allowed and d.warnings[0].startswith("this ClusterObjectSet is 1.50 MiB serialized, close to etcd's")
    obj["spec"]["phases"][0]["objects"][0]["object"]["data"]["blob"] += "x" * 865
    assert check(obj).warnings == (over_etcd("1.50"),)


def test_an_update_leaving_stored_phases_alone_is_not_judged_for_size() -> None:
    # the phases are stored already: whatever its etcd accepts, this cluster took them
    new, old = update(_sized_cos(1600000), lambda o: o["spec"].update(lifecycleState="Archived"))
    assert check(new, old).allowed and check(new, old).warnings == ()


def test_unknown_fields_warned_not_silently_dropped() -> None:
    obj = base_cos(revison=2)
    obj["spec"]["phases"][0]["objcts"] = []
    d = check(obj)
    assert d.allowed
    assert d.warnings == ('unknown field "spec.phases[0].objcts"', 'unknown field "spec.revison"')


def test_defaults_are_applied_with_warnings_on_create() -> None:
    obj = base_cos()
    del obj["spec"]["lifecycleState"], obj["spec"]["collisionProtection"]
    d = reviewed(obj)
    assert d.allowed
    assert d.warnings == ('spec.lifecycleState was not set; defaulted to "Active"',
                          'spec.collisionProtection was not set; defaulted to "Prevent"')


def test_missing_required_fields_without_mutation_are_denied() -> None:
    obj = base_cos()
    del obj["spec"]["lifecycleState"], obj["spec"]["collisionProtection"]
    assert errors_of(obj) == ["spec.collisionProtection: Required value", "spec.lifecycleState: Required value"]


def test_denial_status_shape() -> None:
    d = check(base_cos(revision=0, phases=[{"name": "deploy", "objects": []}, {"name": "deploy", "objects": []}]))
    assert d.status == {
        "metadata": {},
        "status": "Failure",
        "message": 'ClusterObjectSet.olm.operatorframework.io "demo" is invalid: [spec.revision: Invalid value: 0: '
                   "spec.revision in body should be greater than or equal to 1, spec.phases[1]: Duplicate value: "
                   '{"name":"deploy"}]',
        "reason": "Invalid",
        "details": {
            "name": "demo",
            "group": "olm.operatorframework.io",
            "kind": "ClusterObjectSet",
            "causes": [
                {"reason": "FieldValueInvalid",
                 "message": "Invalid value: 0: spec.revision in body should be greater than or equal to 1",
                 "field": "spec.revision"},
                {"reason": "FieldValueDuplicate", "message": 'Duplicate value: {"name":"deploy"}',
                 "field": "spec.phases[1]"},
            ],
        },
        "code": 422,
    }


def test_single_error_message_has_no_brackets() -> None:
    d = check(base_cos(revision=0))
    assert d.message == ('ClusterObjectSet.olm.operatorframework.io "demo" is invalid: '
                         "spec.revision: Invalid value: 0: spec.revision in body should be greater than or equal to 1")


def test_trailing_newlines_are_not_valid_names() -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns\n",
                                                                       "labels": {"app": "v\n"}}}
    errs = errors_of(_with_objects(manifest))
    assert [e.split(":")[0] for e in errs] == ["spec.phases[0].objects[0].object.metadata.labels",
                                               "spec.phases[0].objects[0].object.metadata.namespace"]
    selector = {"type": "Label", "label": {"matchLabels": {"a\n": "b"}}}
    assert errors_of(base_cos(progressionProbes=[probe(selector)]))[0].startswith(
        'spec.progressionProbes[0].selector.label.matchLabels: Invalid value: "a\\n": name part must consist of')


def test_one_becoming_true_inside_phases_is_a_change() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": 1}}

    def data(o: dict) -> dict:
        return o["spec"]["phases"][0]["objects"][0]["object"]["data"]

    new, old = update(_with_objects(cm), lambda o: data(o).update(x=True))
    assert errors_of(new, old) == ["spec.phases: Invalid value: phases is immutable"]
    same, old = update(_with_objects(cm), lambda o: data(o).update(x=1.0))
    assert errors_of(same, old) == []  # 1 and 1.0 are the same number, as in CEL

"""Folding a manager's create (Update) ownership into its Apply ownership, as client-go's csaupgrade does."""

from __future__ import annotations

from common.cluster.ownership import merge_fields, upgrade_managed_fields, upgrade_patch

M = "olm.operatorframework.io"


def entry(manager: str, operation: str, fields: dict, **extra) -> dict:
    return {"manager": manager, "operation": operation, "apiVersion": "v1", "time": "t", "fieldsType": "FieldsV1",
            "fieldsV1": fields, **extra}


def test_merge_fields_is_a_deep_union() -> None:
    a = {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {"f:x": {}}}}
    b = {"f:data": {"f:b": {}}, "f:spec": {".": {}}}
    assert merge_fields(a, b) == {"f:data": {".": {}, "f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:x": {}}},
                                  "f:spec": {".": {}}}
    assert a == {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {"f:x": {}}}}  # inputs untouched


def test_update_entry_folded_into_existing_apply_entry() -> None:
    fields = [entry(M, "Update", {"f:data": {"f:old": {}}}), entry("kubectl", "Update", {"f:x": {}}),
              entry(M, "Apply", {"f:data": {"f:new": {}}}), entry(M, "Update", {"f:status": {}}, subresource="status")]
    assert upgrade_managed_fields(fields, M) == [
        entry("kubectl", "Update", {"f:x": {}}),
        entry(M, "Apply", {"f:data": {"f:new": {}, "f:old": {}}}),
        entry(M, "Update", {"f:status": {}}, subresource="status"),  # a subresource's writes are not the object's
    ]


def test_apply_entry_created_when_missing() -> None:
    assert upgrade_managed_fields([entry(M, "Update", {"f:a": {}})], M) == [entry(M, "Apply", {"f:a": {}})]


def test_nothing_to_fold() -> None:
    fields = [entry(M, "Apply", {"f:a": {}}), entry("other", "Update", {"f:b": {}})]
    assert upgrade_managed_fields(fields, M) is None
    obj = {"metadata": {"resourceVersion": "7", "managedFields": fields}}
    assert upgrade_patch(obj, M) is None


def test_patch_is_guarded_by_the_resource_version() -> None:
    obj = {"metadata": {"resourceVersion": "7", "managedFields": [entry(M, "Update", {"f:a": {}})]}}
    assert upgrade_patch(obj, M) == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "replace", "path": "/metadata/managedFields", "value": [entry(M, "Apply", {"f:a": {}})]},
    ]

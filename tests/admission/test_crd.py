"""The committed CRD is exactly what the rule table generates, and it has what the API promises."""

from __future__ import annotations

import yaml

from common.contract import crd, schema


def test_committed_crd_is_fresh() -> None:
    assert crd.CRD_PATH.read_text() == crd.render(), (
        "stale CRD: run `python -m common.contract.crd` and commit the result")


def test_check_mode_detects_staleness(tmp_path) -> None:
    path = tmp_path / "crd.yaml"
    path.write_text(crd.render())
    assert crd.main(["--check", "--output", str(path)]) == 0
    path.write_text(crd.render().replace("revision is immutable", "revision is frozen"))
    assert crd.main(["--check", "--output", str(path)]) == 1


def test_crd_shape() -> None:
    doc = yaml.safe_load(crd.CRD_PATH.read_text())
    assert doc["metadata"]["name"] == "clusterobjectsets.olm.operatorframework.io"
    spec = doc["spec"]
    assert spec["scope"] == "Cluster"
    assert spec["names"] == {"kind": "ClusterObjectSet", "listKind": "ClusterObjectSetList",
                             "plural": "clusterobjectsets", "singular": "clusterobjectset"}
    (version,) = spec["versions"]
    assert version["name"] == "v1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == ["Available", "Progressing", "Age"]
    assert version["schema"]["openAPIV3Schema"] == schema.COS_SCHEMA


def _walk(node: dict, path: str = ""):
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{name}")
    if "items" in node:
        yield from _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(node["additionalProperties"], f"{path}{{}}")


def test_schema_is_structural_and_portable_to_kubernetes_1_25() -> None:
    text = crd.CRD_PATH.read_text()
    assert "format.dns1123Label" not in text and "messageExpression" not in text
    for path, node in _walk(schema.COS_SCHEMA):
        assert "type" in node, f"{path or '.'} has no type: not a structural schema"
        for rule in node.get("x-kubernetes-validations", []):
            assert set(rule) == {"rule", "message"}, path
        if any("matches(" in r["rule"] for r in node.get("x-kubernetes-validations", [])):
            assert "maxLength" in node, f"{path}: a regex rule on an unbounded string exceeds the cost budget"

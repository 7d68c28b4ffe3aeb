"""Generated names: OLM v1's ObjectNameForBaseAndSuffix and the RBAC name hash (DeepHashObject)."""

from __future__ import annotations

from common.bundle.registryv1.names import deep_hash, object_name_for_base_and_suffix, unique_name


def test_base_and_suffix_fit_63_characters() -> None:
    assert object_name_for_base_and_suffix("short", "service") == "short-service"
    assert object_name_for_base_and_suffix("b" * 57, "service") == "b" * 55 + "-service"  # cut to 63
    assert len(object_name_for_base_and_suffix("x" * 100, "abc")) == 63
    # OLM's test leaves the dash out: base and suffix of 63 together are kept, and the name has 64 characters
    assert object_name_for_base_and_suffix("b" * 56, "service") == "b" * 56 + "-service"


def test_the_hash_is_base36_sha224_of_the_go_encoding_with_its_newline() -> None:
    # StrategyDeploymentPermissions{ServiceAccountName: "e", Rules: []} as encoding/json writes it; the name OLM
    # v1 gave a ClusterRole for exactly this permission is e.v1-e-2v8a1...
    assert deep_hash({"serviceAccountName": "e", "rules": []}) == "2v8a1okz4vnaisdbcf6ndlm332gzpybdh879hduyq85w"
    assert deep_hash({"serviceAccountName": "f", "rules": None}) == "3130ab7p96369sefv7xrxnjznof6q41ixmf2gk4e5f3w"


def test_field_order_matters_as_in_go() -> None:
    a = deep_hash({"serviceAccountName": "e", "rules": []})
    assert deep_hash({"rules": [], "serviceAccountName": "e"}) != a


def test_unique_name_cuts_the_base_for_the_hash() -> None:
    name = unique_name("argocd-operator.v0.6.0-argocd-operator-controller-manager", {"serviceAccountName": "e",
                                                                                     "rules": []})
    assert name == "argocd-operator.v0-2v8a1okz4vnaisdbcf6ndlm332gzpybdh879hduyq85w"
    assert len(name) == 63

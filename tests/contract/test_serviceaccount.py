"""The identity a COS names: OLM v1's refusals byte for byte, and the admission side's reviews and message."""

from __future__ import annotations

from typing import Any

import pytest

from common.contract import api
from common.contract.serviceaccount import (
    NAME_FIELD,
    ServiceAccountMissing,
    ServiceAccountRef,
    UserInfo,
    access_reviews,
    declared,
    forbidden,
    needs_authorization,
    service_account,
    with_service_account,
)

NAME = api.ANNOTATION_SERVICE_ACCOUNT_NAME
NAMESPACE = api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE


def cos(annotations: dict[str, Any] | None = None, name: str = "shop-3") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": meta, "spec": {}}


def refused(obj: dict[str, Any], *, required: bool) -> str:
    with pytest.raises(ServiceAccountMissing) as exc:
        service_account(obj, required=required)
    return str(exc.value)


def test_both_annotations_name_the_account_trimmed_as_olm_v1_trims() -> None:
    assert service_account(cos({NAME: "installer", NAMESPACE: "shop"}), required=True) == \
        ServiceAccountRef("shop", "installer")
    assert service_account(cos({NAME: " installer\t", NAMESPACE: "\nshop "}), required=False) == \
        ServiceAccountRef("shop", "installer")


def test_olm_v1_messages_byte_for_byte_when_required() -> None:
    # the checks and their order of revision_engine_factory.go's getServiceAccount
    assert refused(cos(None), required=True) == 'revision "shop-3" is missing required annotations'
    assert refused(cos({}), required=True) == 'revision "shop-3" is missing required annotations'
    assert refused(cos({"kubectl.kubernetes.io/last-applied-configuration": "{}"}), required=True) == \
        'revision "shop-3" is missing ServiceAccount name annotation'
    assert refused(cos({NAMESPACE: "shop"}), required=True) == \
        'revision "shop-3" is missing ServiceAccount name annotation'
    assert refused(cos({NAME: "  ", NAMESPACE: "shop"}), required=True) == \
        'revision "shop-3" is missing ServiceAccount name annotation'
    assert refused(cos({NAME: "installer"}), required=True) == \
        'revision "shop-3" is missing ServiceAccount namespace annotation'
    assert refused(cos({NAME: "installer", NAMESPACE: ""}), required=True) == \
        'revision "shop-3" is missing ServiceAccount namespace annotation'
    # the name is quoted as Go's %q quotes it
    assert refused(cos(None, name='a"b'), required=True) == 'revision "a\\"b" is missing required annotations'


def test_not_required_a_cos_naming_nobody_is_written_as_the_process() -> None:
    assert service_account(cos(None), required=False) is None
    assert service_account(cos({"other": "x"}), required=False) is None


def test_half_an_identity_is_refused_even_when_not_required() -> None:
    """Never fall back to the stronger identity when the author meant to name a weaker one."""
    assert refused(cos({NAME: "installer"}), required=False) == \
        'revision "shop-3" is missing ServiceAccount namespace annotation'
    assert refused(cos({NAMESPACE: "shop"}), required=False) == \
        'revision "shop-3" is missing ServiceAccount name annotation'
    assert refused(cos({NAME: "", NAMESPACE: ""}), required=False) == \
        'revision "shop-3" is missing ServiceAccount name annotation'


def test_ref_parse_username_and_annotating() -> None:
    ref = ServiceAccountRef.parse(" shop/installer ")
    assert ref == ServiceAccountRef("shop", "installer")
    assert str(ref) == "shop/installer"
    assert ref.username == "system:serviceaccount:shop:installer"
    for bad in ("installer", "/installer", "shop/", "a/b/c", ""):
        with pytest.raises(ValueError, match="is not NAMESPACE/NAME"):
            ServiceAccountRef.parse(bad)
    obj = with_service_account(cos({"keep": "me"}), ref)
    assert obj["metadata"]["annotations"] == {"keep": "me", NAME: "installer", NAMESPACE: "shop"}
    assert declared(obj) == ref
    assert declared(cos({NAME: "installer"})) is None
    assert declared(None) is None


def test_which_requests_need_the_requester_to_be_able_to_use_the_account() -> None:
    sa = {NAME: "installer", NAMESPACE: "shop"}
    ref = ServiceAccountRef("shop", "installer")
    assert needs_authorization("CREATE", cos(sa), None) == ref
    assert needs_authorization("CREATE", cos(None), None) is None
    assert needs_authorization("CREATE", cos({NAME: "installer"}), None) is None   # refused by the reconciler
    # an UPDATE is judged only when it changes the identity
    assert needs_authorization("UPDATE", cos({**sa, "x": "y"}), cos(sa)) is None
    assert needs_authorization("UPDATE", cos(sa), cos(None)) == ref
    assert needs_authorization("UPDATE", cos(sa), cos({NAME: "other", NAMESPACE: "shop"})) == ref
    assert needs_authorization("UPDATE", cos(sa), cos({NAME: " installer ", NAMESPACE: "shop"})) is None
    assert needs_authorization("UPDATE", cos(None), cos(sa)) is None   # dropping it names nobody new
    assert needs_authorization("DELETE", cos(sa), None) is None


def test_access_reviews_ask_for_token_creation_then_impersonation() -> None:
    user = UserInfo("bob", "uid-1", ("dev", "system:authenticated"), (("scopes", ("a", "b")),))
    assert access_reviews(user, ServiceAccountRef("shop", "installer")) == [
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
         "spec": {"user": "bob", "groups": ["dev", "system:authenticated"], "uid": "uid-1",
                  "extra": {"scopes": ["a", "b"]},
                  "resourceAttributes": {"namespace": "shop", "verb": "create", "group": "",
                                         "resource": "serviceaccounts", "name": "installer",
                                         "subresource": "token"}}},
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
         "spec": {"user": "bob", "groups": ["dev", "system:authenticated"], "uid": "uid-1",
                  "extra": {"scopes": ["a", "b"]},
                  "resourceAttributes": {"namespace": "shop", "verb": "impersonate", "group": "",
                                         "resource": "serviceaccounts", "name": "installer"}}},
    ]
    bare = access_reviews(UserInfo("alice"), ServiceAccountRef("shop", "installer"))[0]["spec"]
    assert set(bare) == {"user", "groups", "resourceAttributes"}


def test_the_refusal_names_the_field_the_user_and_the_missing_permission() -> None:
    err = forbidden(UserInfo("system:serviceaccount:team:bob"), ServiceAccountRef("shop", "installer"))
    assert NAME_FIELD == "metadata.annotations[olm.operatorframework.io/service-account-name]"
    assert str(err) == (
        'metadata.annotations[olm.operatorframework.io/service-account-name]: Forbidden: user '
        '"system:serviceaccount:team:bob" may not use ServiceAccount "installer" in namespace "shop": it needs '
        '"create" on "serviceaccounts/token" or "impersonate" on "serviceaccounts" for it (the objects of a '
        'ClusterObjectSet are written with the rights of the ServiceAccount it names)')
    assert err.cause()["reason"] == "FieldValueForbidden"

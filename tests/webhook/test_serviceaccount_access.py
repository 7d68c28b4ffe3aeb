"""``--authorize-service-accounts``: a COS may name only a ServiceAccount its requester can already act as.

The decision (common.contract.admission.validate with ``access``), the wire (userInfo parsed, the 422 as the
API server shapes it, a 503 when no answer can be had), and the SubjectAccessReviews the webhook sends to a
(fake) API server.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from common.cluster.kube import KubeCluster
from common.contract import api
from common.contract.admission import AccessCheckFailed, Request, validate
from common.contract.serviceaccount import ServiceAccountRef, UserInfo, access_reviews
from tests.support.fake_apiserver import SUBJECT_ACCESS_REVIEW, FakeApiServer
from tests.webhook.support import admission_review, valid_cos
from webhook import review
from webhook.access import SubjectAccessReviewer
from webhook.app import create_app

NAME, NAMESPACE = api.ANNOTATION_SERVICE_ACCOUNT_NAME, api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE
BOB = UserInfo("system:serviceaccount:team:bob", "uid-bob", ("system:serviceaccounts", "system:authenticated"))
DENIAL = ('ClusterObjectSet.olm.operatorframework.io "podinfo-1" is invalid: '
          'metadata.annotations[olm.operatorframework.io/service-account-name]: Forbidden: user '
          '"system:serviceaccount:team:bob" may not use ServiceAccount "installer" in namespace "shop": it needs '
          '"create" on "serviceaccounts/token" or "impersonate" on "serviceaccounts" for it (the objects of a '
          'ClusterObjectSet are written with the rights of the ServiceAccount it names)')


def named(obj: dict[str, Any], name: str = "installer") -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"]["annotations"] = {NAME: name, NAMESPACE: "shop"}
    return obj


class Answers:
    """An ``AccessReview`` answering from a set of (verb, subresource) the user holds; records every review."""

    def __init__(self, *held: tuple[str, str]) -> None:
        self.held = set(held)
        self.asked: list[dict[str, Any]] = []

    def __call__(self, sar: dict[str, Any]) -> bool:
        self.asked.append(sar)
        attrs = sar["spec"]["resourceAttributes"]
        return (attrs["verb"], attrs.get("subresource", "")) in self.held


def test_a_user_who_may_neither_create_tokens_nor_impersonate_is_denied_on_the_name_annotation() -> None:
    access = Answers()
    decision = validate(Request(api.KIND, "CREATE", named(valid_cos()), user=BOB), access=access)
    assert not decision.allowed
    assert decision.status is not None and decision.status["code"] == 422 and decision.status["reason"] == "Invalid"
    assert decision.message == DENIAL
    assert decision.status["details"]["causes"] == [{
        "reason": "FieldValueForbidden", "field": "metadata.annotations[olm.operatorframework.io/service-account-name]",
        "message": DENIAL.split("service-account-name]: ", 1)[1]}]
    assert [a["spec"]["resourceAttributes"]["verb"] for a in access.asked] == ["create", "impersonate"]
    assert {a["spec"]["user"] for a in access.asked} == {BOB.username}


@pytest.mark.parametrize("held, asked", [
    ((("create", "token"),), ["create"]),                         # the first answer settles it
    ((("impersonate", ""),), ["create", "impersonate"]),
])
def test_either_permission_suffices(held: tuple[tuple[str, str], ...], asked: list[str]) -> None:
    access = Answers(*held)
    assert validate(Request(api.KIND, "CREATE", named(valid_cos()), user=BOB), access=access).allowed
    assert [a["spec"]["resourceAttributes"]["verb"] for a in access.asked] == asked


def test_only_a_new_identity_is_judged() -> None:
    access = Answers()
    plain = valid_cos()
    assert validate(Request(api.KIND, "CREATE", plain, user=BOB), access=access).allowed
    same = named(plain)
    relabelled = named(plain)
    relabelled["metadata"]["labels"] = {"x": "y"}
    assert validate(Request(api.KIND, "UPDATE", relabelled, same, user=BOB), access=access).allowed
    assert access.asked == []
    # naming another account, or one where there was none, is judged
    assert not validate(Request(api.KIND, "UPDATE", named(plain, "other"), same, user=BOB), access=access).allowed
    assert not validate(Request(api.KIND, "UPDATE", same, plain, user=BOB), access=access).allowed


def test_other_violations_are_reported_with_it_and_offline_nothing_is_asked() -> None:
    bad = named(valid_cos())
    bad["spec"]["phases"][1]["objects"].append(copy.deepcopy(bad["spec"]["phases"][0]["objects"][0]))
    decision = validate(Request(api.KIND, "CREATE", bad, user=BOB), access=Answers())
    fields = [c["field"] for c in decision.status["details"]["causes"]] if decision.status else []
    assert fields == ["spec.phases[1].objects[2]",
                      "metadata.annotations[olm.operatorframework.io/service-account-name]"]
    assert validate(Request(api.KIND, "CREATE", named(valid_cos()), user=BOB)).allowed   # no access: not checked


def test_no_answer_fails_closed_with_a_503_saying_why() -> None:
    def broken(sar: dict[str, Any]) -> bool:
        raise AccessCheckFailed("cannot check who may use the ServiceAccount the ClusterObjectSet names: "
                                "SubjectAccessReview failed: connection refused")

    decision = validate(Request(api.KIND, "CREATE", named(valid_cos()), user=BOB), access=broken)
    assert not decision.allowed
    assert decision.status == {"code": 503, "reason": "ServiceUnavailable", "status": "Failure", "metadata": {},
                               "message": "cannot check who may use the ServiceAccount the ClusterObjectSet names: "
                                          "SubjectAccessReview failed: connection refused"}


def test_the_review_carries_the_requesting_user() -> None:
    doc = admission_review(valid_cos())
    doc["request"]["userInfo"] = {"username": "bob", "uid": "u1", "groups": ["g1", "g2"],
                                  "extra": {"b": ["2"], "a": ["1", "x"]}}
    parsed = review.parse(json.dumps(doc).encode(), review.COS)
    assert parsed.request.user == UserInfo("bob", "u1", ("g1", "g2"), (("a", ("1", "x")), ("b", ("2",))))
    for bad, reason in ((["bob"], "request.userInfo must be an object"),
                        ({"username": 7}, "request.userInfo.username must be a string"),
                        ({"username": "b", "groups": [1]}, "request.userInfo.groups must be a list of strings"),
                        ({"username": "b", "extra": {"a": "1"}}, "request.userInfo.extra must map strings to lists "
                                                                 "of strings")):
        doc["request"]["userInfo"] = bad
        with pytest.raises(review.MalformedReview) as exc:
            review.parse(json.dumps(doc).encode(), review.COS)
        assert str(exc.value) == reason


def test_the_app_answers_the_denial_as_an_admission_review() -> None:
    doc = admission_review(named(valid_cos()))
    doc["request"]["userInfo"] = {"username": BOB.username, "groups": list(BOB.groups)}
    client = create_app(access=Answers()).test_client()
    resp = client.post("/validate/clusterobjectsets", data=json.dumps(doc), content_type="application/json")
    answer = resp.get_json()["response"]
    assert resp.status_code == 200 and answer["allowed"] is False
    assert answer["status"]["code"] == 422 and answer["status"]["message"] == DENIAL
    # without access (the default), the same review is admitted
    plain = create_app().test_client().post("/validate/clusterobjectsets", data=json.dumps(doc),
                                            content_type="application/json")
    assert plain.get_json()["response"]["allowed"] is True


@pytest.fixture
def apiserver() -> Iterator[FakeApiServer]:
    with FakeApiServer() as s:
        s.register(SUBJECT_ACCESS_REVIEW)
        yield s


def test_the_reviewer_asks_the_api_server(apiserver: FakeApiServer, tmp_path: Any) -> None:
    apiserver.authorize = lambda user, verb, resource, ns, name: user == "admin" or (
        user, verb, resource, ns, name) == ("alice", "create", "serviceaccounts/token", "shop", "installer")
    path = apiserver.write_kubeconfig(str(tmp_path / "kc"))
    reviewer = SubjectAccessReviewer.from_kubeconfig(path)
    alice = validate(Request(api.KIND, "CREATE", named(valid_cos()), user=UserInfo("alice")), access=reviewer)
    bob = validate(Request(api.KIND, "CREATE", named(valid_cos()), user=BOB), access=reviewer)
    assert alice.allowed and not bob.allowed
    sent = [(r.path, r.body["spec"]["user"], r.body["spec"]["resourceAttributes"]["verb"])
            for r in apiserver.requests if r.method == "POST"]
    assert sent == [("/apis/authorization.k8s.io/v1/subjectaccessreviews", "alice", "create"),
                    ("/apis/authorization.k8s.io/v1/subjectaccessreviews", BOB.username, "create"),
                    ("/apis/authorization.k8s.io/v1/subjectaccessreviews", BOB.username, "impersonate")]
    assert {r.user_agent for r in apiserver.requests} == {"cos-webhook"}


def test_the_reviewer_fails_closed_when_the_api_server_refuses(apiserver: FakeApiServer, tmp_path: Any) -> None:
    apiserver.authorize = lambda user, verb, resource, ns, name: user != "admin"   # the webhook itself may not ask
    reviewer = SubjectAccessReviewer.from_kubeconfig(apiserver.write_kubeconfig(str(tmp_path / "kc")))
    sar = access_reviews(BOB, ServiceAccountRef("shop", "installer"))[0]
    with pytest.raises(AccessCheckFailed) as exc:
        reviewer(sar)
    assert str(exc.value) == (
        "cannot check who may use the ServiceAccount the ClusterObjectSet names: SubjectAccessReview failed: "
        'subjectaccessreviews.authorization.k8s.io is forbidden: User "admin" cannot create resource '
        '"subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope')
    missing = SubjectAccessReviewer.from_kubeconfig(str(tmp_path / "nothing-here"))
    with pytest.raises(AccessCheckFailed, match="no API server configuration"):
        missing(sar)


def test_reviewer_is_built_once_per_process() -> None:
    built: list[int] = []

    class Kube:
        def create(self, obj: dict[str, Any]) -> dict[str, Any]:
            return {"status": {"allowed": True}}

    def connect() -> KubeCluster:
        built.append(1)
        return Kube()  # type: ignore[return-value]

    reviewer = SubjectAccessReviewer(connect)
    assert reviewer({}) and reviewer({})
    assert built == [1]

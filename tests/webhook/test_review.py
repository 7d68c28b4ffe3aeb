"""The AdmissionReview wire format: what is accepted, and the exact 400 reason for everything else."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from common.contract.admission import Decision, allowed, denied
from common.contract.fielderrors import invalid
from tests.webhook.support import admission_review, valid_cos
from webhook import review
from webhook.app import create_app

VALID = admission_review(valid_cos())


def body(doc: object) -> bytes:
    return json.dumps(doc).encode()


def with_request(**changes: object) -> bytes:
    doc = copy.deepcopy(VALID)
    for key, value in changes.items():
        if value is review.__name__:  # sentinel: delete
            del doc["request"][key]
        else:
            doc["request"][key] = value
    return body(doc)


def nested(depth: int) -> dict:
    node: dict = {"leaf": True}
    for _ in range(depth - 1):
        node = {"n": node}
    return node


DELETE = review.__name__
TRUNCATED = b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "a", '
NAN = body(VALID).replace(b'"revision": 1', b'"revision": NaN')
HUGE_INT = body(VALID).replace(b'"revision": 1', b'"revision": ' + b"9" * 5000)

# (case, body, exact 400 reason)
MALFORMED = [
    ("empty", b"", "request body is empty"),
    ("whitespace", b"  \n", "request body is empty"),
    ("not JSON", b"not json", "request body is not valid JSON (line 1 column 1)"),
    ("truncated", TRUNCATED, "request body is not valid JSON (line 1 column 90)"),
    ("array", b"[]", "request body must be a JSON object (an AdmissionReview)"),
    ("string", b'"AdmissionReview"', "request body must be a JSON object (an AdmissionReview)"),
    ("null", b"null", "request body must be a JSON object (an AdmissionReview)"),
    ("v1beta1", body({**VALID, "apiVersion": "admission.k8s.io/v1beta1"}),
     "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview"),
    ("wrong kind", body({**VALID, "kind": "TokenReview"}),
     "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview"),
    ("no request", body({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}), "request is required"),
    ("request not object", body({**VALID, "request": ["x"]}), "request must be an object"),
    ("no uid", with_request(uid=DELETE), "request.uid is required"),
    ("uid null", with_request(uid=None), "request.uid is required"),
    ("uid number", with_request(uid=7), "request.uid must be a string"),
    ("uid empty", with_request(uid=""), "request.uid must not be empty"),
    ("no operation", with_request(operation=DELETE), "request.operation is required"),
    ("bad operation", with_request(operation="PATCH"),
     "request.operation must be one of CREATE, UPDATE, DELETE, CONNECT"),
    ("operation number", with_request(operation=1), "request.operation must be a string"),
    ("object string", with_request(object="spec"), "request.object must be an object"),
    ("object list", with_request(object=[]), "request.object must be an object"),
    ("no object on CREATE", with_request(object=DELETE), "request.object is required for CREATE"),
    ("oldObject number", with_request(oldObject=3), "request.oldObject must be an object"),
    ("kind string", with_request(kind="ClusterObjectSet"), "request.kind must be an object"),
    ("kind.kind number", with_request(kind={"group": "olm.operatorframework.io", "kind": 1}),
     "request.kind.kind must be a string"),
    ("Secret on COS route", with_request(kind={"group": "", "version": "v1", "kind": "Secret"}),
     "request.kind must be olm.operatorframework.io/ClusterObjectSet on this route"),
    ("name number", with_request(name=5), "request.name must be a string"),
    ("namespace object", with_request(namespace={}), "request.namespace must be a string"),
    ("dryRun string", with_request(dryRun="true"), "request.dryRun must be a boolean"),
    ("resource string", with_request(resource="clusterobjectsets"), "request.resource must be an object"),
    ("non-UTF-8", body(VALID).replace(b"podinfo-1", b"podinfo-\xff"), "request body is not valid UTF-8"),
    ("UTF-16 with BOM", json.dumps(VALID).encode("utf-16"), "request body is not valid UTF-8"),
    ("NaN", NAN, "request body is not valid JSON: NaN is not a JSON value"),
    ("5000-digit integer", HUGE_INT, "request body is not valid JSON"),
    ("100000 levels deep", b"[" * 100000 + b"]" * 100000, "request body nests too deeply"),
    ("100000 levels deep in object", body(VALID).replace(b'"greeting": "hello"', b'"deep": ' + b"[" * 100000
                                                         + b"]" * 100000), "request body nests too deeply"),
]


@pytest.mark.parametrize("case,raw,reason", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_parse_rejects_malformed_reviews_with_a_specific_reason(case: str, raw: bytes, reason: str) -> None:
    with pytest.raises(review.MalformedReview) as err:
        review.parse(raw, review.COS)
    assert str(err.value) == reason


def test_over_the_body_limit_is_refused_before_parsing() -> None:
    with pytest.raises(review.BodyTooLarge) as err:
        review.parse(body(VALID), review.COS, max_body_bytes=100)
    assert str(err.value) == "request body exceeds 100 bytes"


def test_parse_returns_the_request_the_decision_depends_on() -> None:
    doc = admission_review(valid_cos(), operation="UPDATE", old=valid_cos(), dry_run=True)
    parsed = review.parse(body(doc), review.COS)
    assert parsed.uid == "3f1c2b7e-0000-4000-8000-000000000001"
    assert parsed.resource == "clusterobjectsets"
    req = parsed.request
    assert (req.kind, req.operation, req.name, req.namespace, req.dry_run) == (
        "ClusterObjectSet", "UPDATE", "podinfo-1", "", True)
    assert req.object == valid_cos() and req.old_object == valid_cos()


def test_fifty_levels_of_nesting_inside_an_object_are_accepted_for_judgement() -> None:
    doc = copy.deepcopy(VALID)
    doc["request"]["object"]["spec"]["phases"][0]["objects"][0]["object"]["data"] = nested(50)
    assert review.parse(body(doc), review.COS).request.object == doc["request"]["object"]


def test_a_review_without_kind_is_taken_as_the_routes_kind() -> None:
    doc = copy.deepcopy(VALID)
    del doc["request"]["kind"]
    assert review.parse(body(doc), review.COS).request.kind == "ClusterObjectSet"


def test_delete_needs_no_object() -> None:
    doc = admission_review(None, operation="DELETE", old=valid_cos())
    assert review.parse(body(doc), review.COS).request.object is None


def test_allowed_response_is_minimal() -> None:
    assert review.response("u-1", Decision(True)) == {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": "u-1", "allowed": True}}


def test_patch_is_base64_json_patch_and_warnings_are_kept() -> None:
    ops = ({"op": "add", "path": "/spec/lifecycleState", "value": "Active"},)
    out = review.response("u-2", Decision(True, warnings=("defaulted",), patch=ops))["response"]
    assert out["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(out["patch"])) == list(ops)
    assert out["warnings"] == ["defaulted"]


def test_denial_carries_the_status_unchanged() -> None:
    decision = denied("ClusterObjectSet", "x", [invalid("spec.revision", 0, "must be positive")])
    out = review.response("u-3", decision)["response"]
    assert out["allowed"] is False
    assert out["status"] == decision.status
    assert out["status"]["code"] == 422 and out["status"]["reason"] == "Invalid"


def test_warnings_are_one_printable_line_under_256_bytes() -> None:
    long = "é" * 300
    out = review.response("u", allowed([long, "two\nlines\x00"]))["response"]["warnings"]
    assert len(out[0].encode()) <= 255 and out[0].endswith("...") and out[0].startswith("é" * 100)
    assert out[1] == "two lines"


@pytest.fixture(scope="module")
def client():
    return create_app(max_body_bytes=1024 * 1024).test_client()


@pytest.mark.parametrize("case,raw,reason", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_app_answers_malformed_reviews_with_plain_400(client, case: str, raw: bytes, reason: str) -> None:
    resp = client.post("/validate/clusterobjectsets", data=raw, content_type="application/json")
    assert resp.status_code == 400
    assert resp.mimetype == "text/plain"
    assert resp.get_data(as_text=True) == reason + "\n"


def test_app_refuses_a_body_over_the_limit_with_400(client) -> None:
    doc = copy.deepcopy(VALID)
    doc["request"]["object"]["metadata"]["annotations"] = {"pad": "x" * (1024 * 1024)}
    resp = client.post("/mutate/clusterobjectsets", data=body(doc), content_type="application/json")
    assert resp.status_code == 400
    assert resp.get_data(as_text=True) == "request body exceeds 1048576 bytes\n"


def test_secret_route_refuses_a_cos_review(client) -> None:
    resp = client.post("/validate/secrets", data=body(VALID), content_type="application/json")
    assert resp.status_code == 400
    assert resp.get_data(as_text=True) == "request.kind must be Secret on this route\n"


def test_get_on_an_admission_route_is_405(client) -> None:
    assert client.get("/validate/clusterobjectsets").status_code == 405


@pytest.mark.parametrize("depth", [50, 200, 900])
def test_deeply_nested_objects_are_judged_or_refused_never_a_5xx(client, depth: int) -> None:
    doc = copy.deepcopy(VALID)
    doc["request"]["object"]["spec"]["phases"][0]["objects"][0]["object"]["data"] = nested(depth)
    resp = client.post("/validate/clusterobjectsets", data=body(doc), content_type="application/json")
    if resp.status_code == 400:
        assert resp.get_data(as_text=True) == "request body nests too deeply\n"
    else:
        assert resp.status_code == 200
        assert resp.get_json()["response"]["uid"] == VALID["request"]["uid"]


def test_a_validator_running_out_of_stack_is_a_400_not_a_500(monkeypatch) -> None:
    from common.contract import admission

    def recurse(req, config):
        return recurse(req, config)

    monkeypatch.setattr(admission, "validate", recurse)
    resp = create_app().test_client().post("/validate/clusterobjectsets", data=body(VALID),
                                            content_type="application/json")
    assert resp.status_code == 400
    assert resp.get_data(as_text=True) == "request body nests too deeply\n"


def test_a_bug_in_the_logic_is_a_denial_without_detail_never_a_500(monkeypatch, capsys) -> None:
    from common.contract import admission

    def broken(req, config):
        raise KeyError("SECRET-VALUE-IN-EXCEPTION")

    monkeypatch.setattr(admission, "validate", broken)
    resp = create_app().test_client().post("/validate/clusterobjectsets", data=body(VALID),
                                            content_type="application/json")
    assert resp.status_code == 200
    answer = resp.get_json()["response"]
    assert answer["allowed"] is False
    assert answer["status"] == {
        "metadata": {}, "status": "Failure", "reason": "InternalError", "code": 500,
        "message": "internal error in the ClusterObjectSet admission webhook "
                   "(request uid 3f1c2b7e-0000-4000-8000-000000000001)"}
    err = capsys.readouterr().err
    assert "SECRET-VALUE-IN-EXCEPTION" not in err and "SECRET-VALUE-IN-EXCEPTION" not in resp.get_data(as_text=True)
    line = [json.loads(x) for x in err.splitlines() if '"event":"admission"' in x][-1]
    assert line["exception"].startswith("KeyError at ") and line["exception"].endswith(" in broken")
    assert line["allowed"] is False and line["code"] == 500


def test_unpaired_surrogate_escapes_become_replacement_characters_as_in_go(client) -> None:
    raw = body(VALID).replace(b'"name": "config"', b'"name": "PH\\ud800"').replace(
        b'"greeting": "hello"', b'"greeting": "\\ud83d\\ude00 \\udfff"')
    parsed = review.parse(raw, review.COS).request.object
    assert parsed["spec"]["phases"][0]["name"] == "PH\ufffd"
    assert parsed["spec"]["phases"][0]["objects"][0]["object"]["data"]["greeting"] == "\U0001f600 \ufffd"
    answer = client.post("/validate/clusterobjectsets", data=raw, content_type="application/json").get_json()
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["reason"] == "Invalid"
    assert 'spec.phases[0].name: Invalid value: "PH\ufffd"' in answer["response"]["status"]["message"]

"""Property: whatever a valid ClusterObjectSet (or object-data Secret) is mutated into, the webhook answers
with a well-formed AdmissionReview or a plain 400: never a 5xx, an internal-error denial, a traceback or a
hang; warnings stay under 256 bytes; a mutation patch applies and mutating its result again is a no-op.

Strategies draw only from Hypothesis (replayable, shrinkable): no clock, no global ``random``. Hypothesis checks
the global ``random`` state around every draw and warns ("Do not use the `random` module inside strategies")
when it moved, whoever moved it: background threads of earlier tests retrying with jitter from the global
generator did (the last test here keeps them from doing so again). pyproject's filterwarnings makes that
warning an error.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import random
from typing import Any

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.cluster.backoff import Backoff
from common.cluster.connection import ClientOptions
from common.cluster.kube import KubeCluster
from common.contract.admission import Config
from common.runtime.cache import Informer, InformerKey
from tests.webhook.support import admission_review, valid_cos
from webhook.app import create_app

CLIENT = create_app(Config(), max_body_bytes=4 * 1024 * 1024).test_client()

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=80),
    st.sampled_from(["", "Active", "Archived", "Prevent", "None", "GroupKind", "Label", "ConditionEqual",
                     "FieldValue", "deploy", "-bad", "a" * 64, "a" * 254, "v1", "apps/v1", "a/b/c", "Secret"]),
)
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=12)


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        candidates = paths(doc)
        path = draw(st.sampled_from(candidates))
        if not path:
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "delete", "insert", "duplicate"]))
        key = path[-1]
        if action == "replace":
            parent[key] = draw(json_values)
        elif action == "delete":
            del parent[key]
        elif action == "insert" and isinstance(parent, dict):
            parent[draw(st.text(max_size=12))] = draw(json_values)
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    return doc


def check(path: str, review: dict[str, Any]) -> dict[str, Any] | None:
    resp = CLIENT.post(path, data=json.dumps(review).encode(), content_type="application/json")
    text = resp.get_data(as_text=True)
    assert resp.status_code in (200, 400), text
    assert "Traceback" not in text
    if resp.status_code == 400:
        return None
    answer = resp.get_json()["response"]
    assert answer["uid"] == review["request"]["uid"]
    assert isinstance(answer["allowed"], bool)
    for warning in answer.get("warnings", []):
        assert len(warning.encode()) < 256
    if not answer["allowed"]:
        status = answer["status"]
        assert status["reason"] != "InternalError", status["message"]
        assert status["code"] in (400, 422)
        if status["code"] == 422:
            assert status["details"]["causes"], status
    return dict(answer)


def check_mutation_is_idempotent(route: str, obj: dict[str, Any]) -> None:
    answer = check(f"/mutate/{route}", admission_review(obj))
    if answer and "patch" in answer:
        patched = jsonpatch.apply_patch(copy.deepcopy(obj), json.loads(base64.b64decode(answer["patch"])))
        again = check(f"/mutate/{route}", admission_review(patched))
        assert again is not None and "patch" not in again, "mutating a mutated object must be a no-op"


PROPERTY = settings(max_examples=100, deadline=5000, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(st.data())
def test_mutated_cluster_object_sets_never_break_the_webhook(data: st.DataObject) -> None:
    new = data.draw(mutated(valid_cos()))
    check("/validate/clusterobjectsets", admission_review(new))
    check_mutation_is_idempotent("clusterobjectsets", new)
    old = data.draw(st.one_of(st.just(valid_cos()), mutated(valid_cos())))
    check("/validate/clusterobjectsets", admission_review(new, operation="UPDATE", old=old))


def object_data_secret(values: dict[str, bytes]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "olm.operatorframework.io/object-data",
            "metadata": {"name": "objects", "namespace": "olmv1-system",
                         "labels": {"olm.operatorframework.io/revision-name": "podinfo-1"}},
            "immutable": True, "data": {k: base64.b64encode(v).decode() for k, v in values.items()}}


secret_values = st.one_of(
    st.binary(max_size=64),
    json_values.map(lambda v: json.dumps(v).encode()),
    json_values.map(lambda v: gzip.compress(json.dumps(v).encode(), mtime=0)),  # not the clock: replayable
    st.binary(max_size=64).map(lambda b: b"\x1f\x8b" + b),
    st.just(json.dumps({"apiVersion": "v1", "kind": "ConfigMap"}).encode()),
)


@settings(max_examples=60, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.from_regex(r"[-._a-zA-Z0-9]{1,50}", fullmatch=True), secret_values, max_size=4),
       st.data())
def test_mutated_object_data_secrets_never_break_the_webhook(values: dict[str, bytes], data: st.DataObject) -> None:
    secret = data.draw(st.one_of(st.just(object_data_secret(values)), mutated(object_data_secret(values))))
    check("/validate/secrets", admission_review(secret))
    check_mutation_is_idempotent("secrets", secret)
    check("/validate/secrets", admission_review(secret, operation="UPDATE", old=object_data_secret(values)))


def test_retry_jitter_of_the_cluster_client_and_informers_leaves_the_global_random_state_alone() -> None:
    """The cause of this file's HypothesisDeprecationWarning: threads left running by earlier tests (a leader
    election releasing its Lease, informers whose fake API server had gone) drew retry jitter from the global
    generator during a draw here."""
    cluster = KubeCluster(object(), ClientOptions(backoff=Backoff(0.2, 10.0, jitter=0.5)))
    informer = Informer(cluster, InformerKey("v1", "ConfigMap"), backoff=Backoff(0.1, 30.0, jitter=0.5))
    before = random.getstate()
    delays = [cluster.options.backoff.delay(attempt) for attempt in range(1, 8)]
    waits = [informer.backoff.delay(failures) for failures in range(1, 8)]
    assert random.getstate() == before
    assert [0.5 * min(10.0, 0.2 * 2 ** (n - 1)) <= d <= min(10.0, 0.2 * 2 ** (n - 1))
            for n, d in enumerate(delays, start=1)] == [True] * 7
    assert [0.5 * min(30.0, 0.1 * 2 ** (n - 1)) <= w <= min(30.0, 0.1 * 2 ** (n - 1))
            for n, w in enumerate(waits, start=1)] == [True] * 7

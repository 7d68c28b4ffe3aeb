"""End-to-end: objects referenced from Secrets on a real cluster (spec section 2, steps 1 to 3).

Plain and gzip content, the system namespace as the default, the retryable resolve errors with the API
server's own NotFound text, a mutable Secret (Blocked until it is made immutable), and content tampered
with by deleting and re-creating the immutable Secret (Blocked, then recovered when the original returns).
Referenced Secrets are watched, so each fix is picked up without touching the COS.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest

from reconciler.digest import phase_digest
from tests.e2e.conftest import CM, cm, cos_name, exists, make_cos, wait_brief, wait_for, wait_succeeded

pytestmark = pytest.mark.e2e


def _secret(ns: str, name: str, data: dict[str, bytes], immutable: bool | None = True) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
                           "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
    if immutable is not None:
        obj["immutable"] = immutable
    return obj


def _json(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode()


def _ref(name: str, key: str, namespace: str = "") -> dict[str, Any]:
    ref = {"name": name, "key": key}
    if namespace:
        ref["namespace"] = namespace
    return {"ref": ref}


def test_plain_and_gzip_refs_roll_out(env: dict[str, Any]) -> None:
    ns, sys_ns, kube = env["ns"], env["system_ns"], env["kube"]
    kube.create(_secret(sys_ns, "refs-ok", {"plain": _json(cm(ns, "from-plain", v="p")),
                                            "zipped": gzip.compress(_json(cm(ns, "from-gzip", v="g")))}))
    kube.create(_secret(ns, "refs-here", {"k": _json(cm(ns, "from-explicit-ns"))}))
    name = cos_name(env, "refs")
    make_cos(env, "refs", 1, [{"name": "one", "objects": [_ref("refs-ok", "plain"), _ref("refs-ok", "zipped"),
                                                          _ref("refs-here", "k", ns)]}])
    wait_succeeded(env, name)
    assert kube.get("v1", "ConfigMap", "from-plain", ns)["data"] == {"v": "p"}
    assert kube.get("v1", "ConfigMap", "from-gzip", ns)["data"] == {"v": "g"}
    assert exists(env, CM, "from-explicit-ns", ns)


def test_missing_secret_then_missing_key_then_fixed(env: dict[str, Any]) -> None:
    ns, sys_ns, kube = env["ns"], env["system_ns"], env["kube"]
    name = cos_name(env, "ref-missing")
    make_cos(env, "ref-missing", 1, [{"name": "one", "objects": [_ref("late", "k")]}])
    wait_brief(env, name, ("True", "Retrying", f'getting Secret {sys_ns}/late: secrets "late" not found'))
    kube.create(_secret(sys_ns, "late", {"other": _json(cm(ns, "late-cm"))}))   # the Secret watch wakes us
    wait_brief(env, name, ("True", "Retrying", f'key "k" not found in Secret {sys_ns}/late'))
    kube.delete("v1", "Secret", "late", sys_ns)
    kube.create(_secret(sys_ns, "late", {"k": _json(cm(ns, "late-cm"))}))
    wait_succeeded(env, name)
    assert exists(env, CM, "late-cm", ns)


def test_mutable_secret_blocks_until_made_immutable(env: dict[str, Any]) -> None:
    ns, sys_ns, kube = env["ns"], env["system_ns"], env["kube"]
    kube.create(_secret(sys_ns, "mutable-a", {"k": _json(cm(ns, "mut-a"))}, immutable=None))
    kube.create(_secret(sys_ns, "mutable-b", {"k": _json(cm(ns, "mut-b"))}, immutable=False))
    name = cos_name(env, "ref-mutable")
    make_cos(env, "ref-mutable", 1, [{"name": "one", "objects": [_ref("mutable-a", "k"), _ref("mutable-b", "k")]}])
    wait_brief(env, name, ("False", "Blocked", "the following secrets are not immutable (referenced secrets must "
                                               f"have immutable set to true): {sys_ns}/mutable-a, {sys_ns}/mutable-b"))
    assert not exists(env, CM, "mut-a", ns)
    assert "finalizers" not in kube.get("olm.operatorframework.io/v1", "ClusterObjectSet", name)["metadata"]
    kube.merge_patch("v1", "Secret", "mutable-a", sys_ns, {"immutable": True})
    wait_brief(env, name, ("False", "Blocked", "the following secrets are not immutable (referenced secrets must "
                                               f"have immutable set to true): {sys_ns}/mutable-b"))
    kube.merge_patch("v1", "Secret", "mutable-b", sys_ns, {"immutable": True})
    wait_succeeded(env, name)
    assert exists(env, CM, "mut-a", ns) and exists(env, CM, "mut-b", ns)


def test_tampered_content_blocks_and_recovers_when_the_original_returns(env: dict[str, Any]) -> None:
    ns, sys_ns, kube = env["ns"], env["system_ns"], env["kube"]
    original = cm(ns, "tamper", v="original")
    kube.create(_secret(sys_ns, "tamper", {"k": gzip.compress(_json(original))}))
    name = cos_name(env, "ref-tamper")
    make_cos(env, "ref-tamper", 1, [{"name": "p", "objects": [_ref("tamper", "k")]}])
    wait_succeeded(env, name)
    observed = kube.get("olm.operatorframework.io/v1", "ClusterObjectSet", name)["status"]["observedPhases"]
    assert observed == [{"name": "p", "digest": phase_digest("p", [original])}]
    # immutable: the only way to change it is to delete and re-create it
    kube.delete("v1", "Secret", "tamper", sys_ns)
    tampered = cm(ns, "tamper", v="tampered")
    kube.create(_secret(sys_ns, "tamper", {"k": _json(tampered)}))
    wait_brief(env, name, (
        "False", "Blocked",
        f'resolved content of 1 phase(s) has changed: phase "p" (expected digest {observed[0]["digest"]}, got '
        f'{phase_digest("p", [tampered])}); a referenced object source may have been deleted and recreated with '
        "different content"))
    assert kube.get("v1", "ConfigMap", "tamper", ns)["data"] == {"v": "original"}
    kube.delete("v1", "Secret", "tamper", sys_ns)
    kube.create(_secret(sys_ns, "tamper", {"k": _json(original)}))   # same object, not gzipped: same digest
    wait_succeeded(env, name)
    wait_for(lambda: kube.get("v1", "ConfigMap", "tamper", ns)["data"] == {"v": "original"}, 30, "the original")

"""End-to-end: least privilege per revision on a real API server (issue 19).

- A COS naming a ServiceAccount that may only create, patch and delete ConfigMaps in one namespace rolls those
  out; its object in another namespace leaves it ``Retrying`` with the API server's 403 naming the
  ServiceAccount, and it completes, without a restart, once a RoleBinding grants the right. The API server's
  audit log (``COS_E2E_AUDIT_LOG``, else ``audit.log`` beside the kubeconfig; skipped when there is none, or when
  its policy does not record users) attributes every write to those objects to the ServiceAccount, and shows one
  TokenRequest for it.
- With ``--require-service-account`` a COS naming none carries OLM v1's message and is not rolled out; without
  the switch the same COS rolls out.
- ``cos-webhook --authorize-service-accounts`` (registered by URL with ``deploy/``'s configurations, as
  test_e2e_admission.py does) denies a user who may create COSs but not use the named ServiceAccount, through
  ``kubectl`` with that user's own token, also when they annotate an existing COS; and admits one who may.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.cluster.interface import AlreadyExists
from tests.e2e.conftest import (
    CM,
    COS_API,
    KIND,
    Reconciler,
    cm,
    cos_body,
    cos_name,
    exists,
    get_cos,
    gone,
    wait_brief,
    wait_for,
    wait_succeeded,
)
from tests.webhook.registration import by_url, register, shipped_configurations, unregister
from tests.webhook.support import CA, Server

pytestmark = pytest.mark.e2e

NAME_ANNOTATION = "olm.operatorframework.io/service-account-name"
NAMESPACE_ANNOTATION = "olm.operatorframework.io/service-account-namespace"
RBAC = "rbac.authorization.k8s.io/v1"


def _create(env: dict[str, Any], obj: dict[str, Any]) -> None:
    with contextlib.suppress(AlreadyExists):
        env["kube"].create(obj)


def _namespace(env: dict[str, Any], name: str) -> str:
    _create(env, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    env["namespaces"].append(name)
    return name


def _service_account(env: dict[str, Any], ns: str, name: str) -> None:
    _create(env, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}})


def _grant(env: dict[str, Any], ns: str, name: str, rules: list[dict[str, Any]], subject: tuple[str, str]) -> None:
    """A Role in ``ns`` with ``rules``, bound to ServiceAccount ``subject`` (namespace, name)."""
    _create(env, {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": rules})
    _create(env, {"apiVersion": RBAC, "kind": "RoleBinding", "metadata": {"name": name, "namespace": ns},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                  "subjects": [{"kind": "ServiceAccount", "name": subject[1], "namespace": subject[0]}]})


CONFIGMAP_WRITER = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch", "delete"]}]


@pytest.fixture(scope="module")
def accounts(env: dict[str, Any]) -> dict[str, str]:
    """The installer ServiceAccount (may write ConfigMaps in the work namespace only) and a second namespace."""
    run = env["run"]
    sa_ns = _namespace(env, f"cos-e2e-sa-{run}")
    other = _namespace(env, f"cos-e2e-other-{run}")
    _service_account(env, sa_ns, "installer")
    _grant(env, env["ns"], f"installer-{run}", CONFIGMAP_WRITER, (sa_ns, "installer"))
    return {"sa_ns": sa_ns, "other": other, "user": f"system:serviceaccount:{sa_ns}:installer"}


def _named(body: dict[str, Any], sa_ns: str, sa: str = "installer") -> dict[str, Any]:
    body["metadata"]["annotations"] = {NAME_ANNOTATION: sa, NAMESPACE_ANNOTATION: sa_ns}
    return body


def _audit_log(env: dict[str, Any]) -> Path | None:
    given = os.environ.get("COS_E2E_AUDIT_LOG")
    path = Path(given) if given else Path(env["kubeconfig"]).parent / "audit.log"
    return path if path.is_file() else None


def _audit_events(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if event.get("stage") == "ResponseComplete":
                    out.append(event)
    return out


def test_writes_go_as_the_service_account_a_403_waits_for_rbac(env: dict[str, Any],
                                                               accounts: dict[str, str]) -> None:
    run, ns, other, sa_ns = env["run"], env["ns"], accounts["other"], accounts["sa_ns"]
    pid = env["reconciler"].proc.pid if env["reconciler"].proc else None
    name = cos_name(env, "least")
    body = _named(cos_body(env, "least", 1, [
        {"name": "here", "objects": [{"object": cm(ns, "least-here")}]},
        {"name": "there", "objects": [{"object": cm(other, "least-there")}]},
        {"name": "last", "objects": [{"object": cm(ns, "least-last")}]},
    ]), sa_ns)
    env["cos"].append(name)
    env["kube"].create(body)
    forbidden = (f"creating Object ConfigMap.v1 {other}/least-there: configmaps is forbidden: User "
                 f'"{accounts["user"]}" cannot create resource "configmaps" in API group "" in the namespace '
                 f'"{other}"')
    wait_brief(env, name, ("True", "Retrying", forbidden))
    assert exists(env, CM, "least-here", ns)
    assert not exists(env, CM, "least-last", ns)   # a later phase waits
    # the admin grants the right; the process notices (no restart) and finishes
    _grant(env, other, f"installer-{run}", CONFIGMAP_WRITER, (sa_ns, "installer"))
    wait_succeeded(env, name)
    assert exists(env, CM, "least-there", other) and exists(env, CM, "least-last", ns)
    assert env["reconciler"].proc is not None and env["reconciler"].proc.pid == pid

    path = _audit_log(env)
    if path is None:
        pytest.skip("no audit log found (set COS_E2E_AUDIT_LOG): the audit-log half of this test is skipped")
    events = _audit_events(path)
    if not any((e.get("user") or {}).get("username") for e in events):
        pytest.skip(f"{path}: its policy records no users")
    ours = {(ns, "least-here"), (other, "least-there"), (ns, "least-last")}
    writes = [e for e in events
              if e.get("verb") not in ("get", "list", "watch")
              and (e.get("objectRef") or {}).get("resource") == "configmaps"
              and ((e["objectRef"].get("namespace"), e["objectRef"].get("name")) in ours
                   or (e["objectRef"].get("namespace") == other and not e["objectRef"].get("name")))]
    assert writes, "no write to the test's ConfigMaps in the audit log"
    assert {e["user"]["username"] for e in writes} == {accounts["user"]}
    assert {e["responseStatus"]["code"] for e in writes if e["verb"] == "create"} >= {201, 403}
    tokens = [e for e in events if (e.get("objectRef") or {}).get("subresource") == "token"
              and e["objectRef"].get("namespace") == sa_ns and e["objectRef"].get("name") == "installer"
              and e.get("verb") == "create"]
    assert len(tokens) == 1, [(e["requestReceivedTimestamp"], e["responseStatus"]["code"]) for e in tokens]
    assert tokens[0]["responseStatus"]["code"] == 201
    assert tokens[0]["userAgent"].startswith("cos-reconciler/")


def test_require_service_account_refuses_a_cos_naming_nobody(env: dict[str, Any],
                                                             accounts: dict[str, str]) -> None:
    session: Reconciler = env["reconciler"]
    name = cos_name(env, "nobody")
    session.stop()
    strict = Reconciler(session.kubeconfig, session.system_ns, session.log_path, "--require-service-account")
    try:
        strict.start()
        env["cos"].append(name)
        env["kube"].create(cos_body(env, "nobody", 1, [{"name": "one",
                                                         "objects": [{"object": cm(env["ns"], "nobody")}]}]))
        wait_brief(env, name, ("True", "Retrying", f'revision "{name}" is missing required annotations'))
        assert not get_cos(env, name)["metadata"].get("finalizers")
        assert not exists(env, CM, "nobody", env["ns"])
    finally:
        strict.stop()
        session.start()
    # without the switch it rolls out as before, with the reconciler's own rights
    wait_succeeded(env, name)
    assert exists(env, CM, "nobody", env["ns"])


# --- admission: two token users -------------------------------------------------------------------------------

def _token_kubeconfig(admin_path: str, token: str, path: Path) -> str:
    """A kubeconfig for the admin's cluster that authenticates with ``token`` alone (no client certificate)."""
    admin = yaml.safe_load(Path(admin_path).read_text())
    current = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])["context"]
    cluster = next(c for c in admin["clusters"] if c["name"] == current["cluster"])["cluster"]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "user",
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "user", "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


def _kubectl_as(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("kubectl")
    if exe is None:
        pytest.skip("kubectl not found on PATH")
    return subprocess.run([exe, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.fixture(scope="module")
def users(env: dict[str, Any], accounts: dict[str, str], tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[dict[str, str]]:
    """``alice`` and ``bob`` (ServiceAccounts used through their own tokens): both may create and patch COSs;
    only alice may create tokens for the installer ServiceAccount. ``cos-webhook --authorize-service-accounts``
    is registered for the module."""
    run, sa_ns, kube = env["run"], accounts["sa_ns"], env["kube"]
    role = f"cos-e2e-producer-{run}"
    _create(env, {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": role}, "rules": [
        {"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterobjectsets"],
         "verbs": ["create", "get", "patch"]}]})
    env["cleanup"].append((RBAC, "ClusterRole", role, None))
    directory = tmp_path_factory.mktemp("users")
    out = {}
    for user in ("alice", "bob"):
        _service_account(env, sa_ns, user)
        binding = f"{role}-{user}"
        _create(env, {"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": binding},
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                      "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": sa_ns}]})
        env["cleanup"].append((RBAC, "ClusterRoleBinding", binding, None))
        grant = kube.request_token(sa_ns, user, expiration_seconds=3600)
        out[user] = _token_kubeconfig(env["kubeconfig"], grant.token, directory / f"{user}.kubeconfig")
    _grant(env, sa_ns, f"use-installer-{run}", [{"apiGroups": [""], "resources": ["serviceaccounts/token"],
                                                 "resourceNames": ["installer"], "verbs": ["create"]}],
           (sa_ns, "alice"))

    ca = CA(tmp_path_factory.mktemp("ca"))
    server = Server(ca, tmp_path_factory.mktemp("webhook"),
                    args=["--workers", "2", "--authorize-service-accounts", "--kubeconfig", env["kubeconfig"]]).start()
    configs = by_url(shipped_configurations(), f"https://127.0.0.1:{server.port}", ca.ca_file.read_bytes())
    try:
        register(env["kubeconfig"], configs)
        probe = _named(cos_body(env, "probe", 1, []), sa_ns)
        # the API server picks configurations up asynchronously: wait until bob is refused
        wait_for(lambda: "may not use" in _kubectl_as(out["bob"], "create", "--dry-run=server", "-f", "-",
                                                      stdin=json.dumps(probe)).stderr, 60,
                 "the webhook to be called")
        yield out
    finally:
        unregister(env["kubeconfig"], configs)
        server.stop()


def _denial(user: str, sa_ns: str) -> str:
    return (f'metadata.annotations[olm.operatorframework.io/service-account-name]: Forbidden: user "{user}" may not '
            f'use ServiceAccount "installer" in namespace "{sa_ns}": it needs "create" on "serviceaccounts/token" or '
            '"impersonate" on "serviceaccounts" for it (the objects of a ClusterObjectSet are written with the '
            "rights of the ServiceAccount it names)")


def test_admission_denies_a_user_who_may_not_use_the_service_account(
        env: dict[str, Any], accounts: dict[str, str], users: dict[str, str]) -> None:
    sa_ns = accounts["sa_ns"]
    name = cos_name(env, "by-bob")
    body = _named(cos_body(env, "by-bob", 1, [{"name": "one", "objects": [{"object": cm(env["ns"], "by-bob")}]}]),
                  sa_ns)
    env["cos"].append(name)
    done = _kubectl_as(users["bob"], "create", "-f", "-", stdin=json.dumps(body))
    assert done.returncode == 1
    assert done.stderr.strip() == (f'The ClusterObjectSet "{name}" is invalid: '
                                   + _denial(f"system:serviceaccount:{sa_ns}:bob", sa_ns))
    assert gone(env["kube"], COS_API, KIND, name)

    # alice may: the same COS is admitted and rolled out with the installer's rights
    name = cos_name(env, "by-alice")
    body = _named(cos_body(env, "by-alice", 1, [{"name": "one",
                                                 "objects": [{"object": cm(env["ns"], "by-alice")}]}]), sa_ns)
    env["cos"].append(name)
    done = _kubectl_as(users["alice"], "create", "-f", "-", stdin=json.dumps(body))
    assert (done.returncode, done.stdout.strip()) == (0, f"clusterobjectset.olm.operatorframework.io/{name} created")
    wait_succeeded(env, name)
    assert exists(env, CM, "by-alice", env["ns"])

    # bob cannot make alice's COS name the installer's (or anyone's) rights either: a metadata-only UPDATE
    plain = cos_name(env, "plain")
    env["cos"].append(plain)
    env["kube"].create(cos_body(env, "plain", 1, []))
    done = _kubectl_as(users["bob"], "annotate", "clusterobjectset", plain, f"{NAME_ANNOTATION}=installer",
                       f"{NAMESPACE_ANNOTATION}={sa_ns}")
    assert done.returncode == 1
    assert done.stderr.strip() == (f'The ClusterObjectSet "{plain}" is invalid: '
                                   + _denial(f"system:serviceaccount:{sa_ns}:bob", sa_ns))
    done = _kubectl_as(users["alice"], "annotate", "clusterobjectset", plain, f"{NAME_ANNOTATION}=installer",
                       f"{NAMESPACE_ANNOTATION}={sa_ns}")
    assert done.returncode == 0, done.stderr
    # an unrelated annotation by bob is not judged (not even sent to the webhook)
    done = _kubectl_as(users["bob"], "annotate", "clusterobjectset", plain, "note=hello")
    assert done.returncode == 0, done.stderr

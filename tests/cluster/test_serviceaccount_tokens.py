"""ServiceAccount tokens (common.cluster.tokens) and KubeCluster views writing with one (with_bearer).

The cache: one TokenRequest per ServiceAccount per lifetime whatever the concurrency, renewed at 80% of the
lifetime the server *granted*, counted on our own clock; errors worded for the COS condition. The view: its
writes carry the ServiceAccount's token and no other credential (no client certificate, no token of ours), its
reads are the process's, and a 401 gets one new token.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from common.cluster.interface import Forbidden, NotFound, ServiceUnavailable
from common.cluster.kube import KubeCluster, TokenGrant
from common.cluster.tokens import ServiceAccountTokenError, ServiceAccountTokens
from common.contract.serviceaccount import ServiceAccountRef
from tests.support.fake_apiserver import FakeApiServer

SHOP = ServiceAccountRef("shop", "installer")
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", "namespace": "shop"}, "data": {"a": "1"}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Issuer:
    """Counts TokenRequests; grants ``lifetime`` seconds (the server may shorten what was asked)."""

    def __init__(self, lifetime: float | None = None, delay: float = 0.0) -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.lifetime = lifetime
        self.delay = delay
        self._lock = threading.Lock()

    def __call__(self, namespace: str, name: str, seconds: int) -> TokenGrant:
        time.sleep(self.delay)
        with self._lock:
            self.calls.append((namespace, name, seconds))
            n = len(self.calls)
        return TokenGrant(f"token-{name}-{n}", float(self.lifetime or seconds))


def test_a_token_is_reused_until_80_percent_of_its_lifetime_then_renewed() -> None:
    clock, issue = Clock(), Issuer()
    tokens = ServiceAccountTokens(issue, clock=clock)
    assert tokens.token(SHOP) == "token-installer-1"
    assert issue.calls == [("shop", "installer", 3600)]
    clock.now += 0.8 * 3600 - 1
    assert tokens.token(SHOP) == "token-installer-1"
    assert len(issue.calls) == 1
    clock.now += 1
    assert tokens.token(SHOP) == "token-installer-2"
    assert tokens.token(SHOP) == "token-installer-2"
    assert tokens.issued == {SHOP: 2}


def test_the_granted_lifetime_counts_not_the_one_asked_for() -> None:
    clock, issue = Clock(), Issuer(lifetime=1000)   # --service-account-max-token-expiration shortened it
    tokens = ServiceAccountTokens(issue, clock=clock)
    tokens.token(SHOP)
    clock.now += 800
    assert tokens.token(SHOP) == "token-installer-2"


def test_each_service_account_has_its_own_token() -> None:
    issue = Issuer()
    tokens = ServiceAccountTokens(issue, clock=Clock())
    other = ServiceAccountRef("shop", "other")
    assert tokens.token(SHOP) == "token-installer-1"
    assert tokens.token(other) == "token-other-2"
    assert tokens.token(SHOP) == "token-installer-1"
    assert tokens.issued == {SHOP: 1, other: 1}


def test_concurrent_writers_share_one_token_request() -> None:
    issue = Issuer(delay=0.05)
    tokens = ServiceAccountTokens(issue)
    got: list[str] = []
    threads = [threading.Thread(target=lambda: got.append(tokens.token(SHOP))) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == ["token-installer-1"] * 16
    assert len(issue.calls) == 1


def test_a_rejected_token_is_replaced_but_a_newer_one_is_kept() -> None:
    issue = Issuer()
    tokens = ServiceAccountTokens(issue, clock=Clock())
    first = tokens.token(SHOP)
    tokens.rejected(SHOP, first)
    second = tokens.token(SHOP)
    assert second == "token-installer-2"
    tokens.rejected(SHOP, first)   # a late 401 for the old token: the new one stays
    assert tokens.token(SHOP) == second


def test_errors_say_why_in_olm_v1_words_or_the_api_servers() -> None:
    def missing(namespace: str, name: str, seconds: int) -> TokenGrant:
        raise NotFound(f'serviceaccounts "{name}" not found')

    with pytest.raises(ServiceAccountTokenError) as exc:
        ServiceAccountTokens(missing).token(SHOP)
    assert str(exc.value) == ('service account "installer" not found in namespace "shop": unable to authenticate '
                              "with the Kubernetes cluster.")
    assert exc.value.missing and exc.value.ref == SHOP
    assert not isinstance(exc.value, NotFound)   # never read as "the object is gone" by a teardown

    def refused(namespace: str, name: str, seconds: int) -> TokenGrant:
        raise Forbidden('serviceaccounts "installer" is forbidden: User "system:serviceaccount:olmv1-system:'
                        'cos-reconciler" cannot create resource "serviceaccounts/token" in API group "" in the '
                        'namespace "shop"')

    with pytest.raises(ServiceAccountTokenError) as exc:
        ServiceAccountTokens(refused).token(SHOP)
    assert str(exc.value) == (
        'creating a token for ServiceAccount shop/installer: serviceaccounts "installer" is forbidden: User '
        '"system:serviceaccount:olmv1-system:cos-reconciler" cannot create resource "serviceaccounts/token" in '
        'API group "" in the namespace "shop"')
    assert not exc.value.missing and isinstance(exc.value.__cause__, Forbidden)


def test_settings_the_api_server_would_refuse_are_refused_here() -> None:
    with pytest.raises(ValueError, match="at least 600 seconds"):
        ServiceAccountTokens(Issuer(), expiration_seconds=599)
    with pytest.raises(ValueError, match="between 0 and 1"):
        ServiceAccountTokens(Issuer(), renew_after=1.0)


def test_a_grant_never_shows_its_token() -> None:
    assert "secret" not in repr(TokenGrant("secret", 600.0))


# --- over HTTP -------------------------------------------------------------------------------------------------

def _service_account(server: FakeApiServer) -> None:
    server.put_object({"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": "installer", "namespace": "shop"}})


def test_request_token_asks_the_token_request_api_for_the_default_audience(kube: KubeCluster,
                                                                           server: FakeApiServer) -> None:
    _service_account(server)
    server.max_token_seconds = 1200
    grant = kube.request_token("shop", "installer", expiration_seconds=3600)
    (req,) = [r for r in server.requests if r.method == "POST"]
    assert (req.path, req.body) == ("/api/v1/namespaces/shop/serviceaccounts/installer/token",
                                    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                     "spec": {"expirationSeconds": 3600}})   # no audiences: the server's own
    assert grant == TokenGrant("sa-token-shop-installer-1", 1200.0)
    with pytest.raises(NotFound, match='serviceaccounts "nobody" not found'):
        kube.request_token("shop", "nobody", expiration_seconds=3600)


def test_a_view_writes_with_the_token_alone_and_reads_as_the_process(server: FakeApiServer, tmp_path: Path) -> None:
    _service_account(server)
    base = KubeCluster.from_kubeconfig(server.write_kubeconfig(str(tmp_path / "kc"), token="process-token"),
                                       user_agent="cos-reconciler/test", request_timeout=7.0)
    # as the kubeconfig loader leaves it for an https server with a client certificate (the fake speaks http,
    # where a certificate would never be sent: only the configuration is looked at)
    own = base.api_client.configuration
    own.cert_file, own.key_file = str(tmp_path / "client.crt"), str(tmp_path / "client.key")
    own.refresh_api_key_hook = lambda cfg: None
    tokens = ServiceAccountTokens(lambda ns, n, s: base.request_token(ns, n, expiration_seconds=s))
    view = base.with_bearer(tokens.source(SHOP))
    try:
        # the credential-free client keeps the connection settings and drops every credential
        anon = view._writer_client.configuration
        assert own.cert_file and own.key_file and own.api_key
        assert (anon.cert_file, anon.key_file, anon.api_key, anon.refresh_api_key_hook) == (None, None, {}, None)
        assert (anon.host, anon.ssl_ca_cert, anon.verify_ssl) == (own.host, own.ssl_ca_cert, own.verify_ssl)
        assert view._writer_client.user_agent == "cos-reconciler/test"
        assert view.options.request_timeout == 7.0

        server.clear_requests()
        view.create(CM)
        view.apply({**CM, "data": {"a": "2"}}, field_manager="olm.operatorframework.io")
        view.merge_patch("v1", "ConfigMap", "cm1", "shop", {"data": {"b": "3"}})
        got = view.get("v1", "ConfigMap", "cm1", "shop")
        view.delete("v1", "ConfigMap", "cm1", "shop", uid=got["metadata"]["uid"])
        seen = [(r.method, r.path.rsplit("/", 1)[-1], server.user_of(r.token), r.user_agent)
                for r in server.requests if not r.path.endswith("/token") and r.verb != "discovery"]
        sa = "system:serviceaccount:shop:installer"
        assert seen == [("POST", "configmaps", sa, "cos-reconciler/test"),
                        ("PATCH", "cm1", sa, "cos-reconciler/test"),    # the apply
                        ("PATCH", "cm1", sa, "cos-reconciler/test"),    # the merge patch
                        ("GET", "cm1", "admin", "cos-reconciler/test"),
                        ("DELETE", "cm1", sa, "cos-reconciler/test")]
        assert all(r.token in ("process-token", "sa-token-shop-installer-1") for r in server.requests)
        assert len(server.issued) == 1   # one token for all of it
    finally:
        base.close()


def test_a_revoked_token_is_replaced_once(kube: KubeCluster, server: FakeApiServer) -> None:
    _service_account(server)
    tokens = ServiceAccountTokens(lambda ns, n, s: kube.request_token(ns, n, expiration_seconds=s))
    view = kube.with_bearer(tokens.source(SHOP))
    view.create(CM)
    server.revoke("sa-token-shop-installer-1")
    view.merge_patch("v1", "ConfigMap", "cm1", "shop", {"data": {"b": "3"}})
    assert [t for t, _, _ in server.issued] == ["sa-token-shop-installer-1", "sa-token-shop-installer-2"]
    patches = [(r.status, r.token) for r in server.requests if r.method == "PATCH"]
    assert patches == [(401, "sa-token-shop-installer-1"), (200, "sa-token-shop-installer-2")]
    # a token refused again is not renewed in a loop: the 401 is the answer
    server.revoke("sa-token-shop-installer-2")
    server.authorize = lambda user, verb, resource, ns, name: user != "system:serviceaccount:shop:installer"
    with pytest.raises(Forbidden, match='User "system:serviceaccount:shop:installer" cannot patch resource '
                                        '"configmaps" in API group "" in the namespace "shop"'):
        view.merge_patch("v1", "ConfigMap", "cm1", "shop", {"data": {"b": "4"}})
    assert len(server.issued) == 3


def test_no_token_no_request(kube: KubeCluster, server: FakeApiServer) -> None:
    """The ServiceAccount does not exist: the write is not sent at all, and the error is the token's."""
    tokens = ServiceAccountTokens(lambda ns, n, s: kube.request_token(ns, n, expiration_seconds=s))
    view = kube.with_bearer(tokens.source(SHOP))
    with pytest.raises(ServiceAccountTokenError, match='service account "installer" not found in namespace'):
        view.create(CM)
    assert [r.method for r in server.requests if "configmaps" in r.path] == []
    server.inject("POST", r"/api/v1/namespaces/shop/serviceaccounts/installer/token", 503, times=10)
    _service_account(server)
    with pytest.raises(ServiceAccountTokenError, match="creating a token for ServiceAccount shop/installer: "
                                                       "injected 503") as exc:
        view.create(CM)
    assert isinstance(exc.value.__cause__, ServiceUnavailable)

"""Fixtures: a fake API server per test and a KubeCluster talking to it over HTTP.

The ``conftest.py`` of each test package that talks HTTP to the fake API server imports them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from common.cluster.kube import KubeCluster
from tests.support.fake_apiserver import FakeApiServer


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as s:
        yield s


@pytest.fixture
def kubeconfig(server: FakeApiServer, tmp_path) -> str:
    return server.write_kubeconfig(str(tmp_path / "kubeconfig"))


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def kube(kubeconfig: str, sleeps: list[float]) -> Iterator[KubeCluster]:
    """The adapter, with sleeps recorded instead of slept so retry delays are asserted, not waited for."""
    k = KubeCluster.from_kubeconfig(kubeconfig, sleep=sleeps.append, discovery_refresh_interval=0.0)
    yield k
    k.close()

"""Fixtures the producer's HTTP-level tests share: the fake API server, and a kubeconfig pointing at it with
nothing else to fall back on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_apiserver import FakeApiServer


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as s:
        yield s


@pytest.fixture
def kubeconfig(server: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path: str = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config to fall back on
    return path

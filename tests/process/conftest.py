"""Fixtures shared with the other packages testing over HTTP (``tests/support/kube_fixtures.py``)."""

from tests.support.kube_fixtures import kube, kubeconfig, server, sleeps

__all__ = ["kube", "kubeconfig", "server", "sleeps"]

"""The webhook configurations of ``deploy/``, registered on a real API server by URL.

The e2e test and the cluster bench run ``cos-webhook`` on this machine and point the API server at it. They
must prove the *shipped* configuration, so the configurations are rendered from ``deploy/`` (by the real
``kubectl kustomize``, tests/deploy/kustomize.py) and only ``clientConfig`` is rewritten: rules, matchConditions,
failurePolicy, timeouts and names stay as shipped.
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.deploy.kustomize import render

ROOT = Path(__file__).resolve().parents[2]
CONFIG_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def shipped_configurations(overlay: Path = ROOT / "deploy") -> list[dict[str, Any]]:
    """The (Mutating|Validating)WebhookConfigurations an overlay installs, as rendered."""
    return [obj for obj in render(overlay) if obj.get("kind") in CONFIG_KINDS]


def by_url(configs: list[dict[str, Any]], base_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """The same configurations calling ``base_url`` + each webhook's service path, trusting ``ca_pem``."""
    out = []
    for original in configs:
        config = copy.deepcopy(original)
        for hook in config["webhooks"]:
            path = hook["clientConfig"]["service"].get("path", "/")
            hook["clientConfig"] = {"url": base_url.rstrip("/") + path,
                                    "caBundle": base64.b64encode(ca_pem).decode()}
        out.append(config)
    return out


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None, check: bool = True,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True,
                          text=True, check=check, timeout=timeout)


def register(kubeconfig: str, configs: list[dict[str, Any]]) -> None:
    """Create or replace the configurations (``kubectl apply``, server-side so no annotation is stored)."""
    body = "\n".join(json.dumps(c) for c in configs)
    kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=body)


def unregister(kubeconfig: str, configs: list[dict[str, Any]]) -> None:
    for config in configs:
        kubectl(kubeconfig, "delete", config["kind"].lower(), config["metadata"]["name"], "--ignore-not-found",
                "--wait=true")

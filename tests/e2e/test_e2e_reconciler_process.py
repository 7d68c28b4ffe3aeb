"""End-to-end: the reconciler process surviving what happens to processes and servers, on a real cluster.

Leader failover: the session's reconciler is stopped (only one may act without a Lease), two replicas with
leader election start, the leader is killed with SIGKILL mid-rollout (no release: the standby must wait for the
lease to expire) and the standby takes over and finishes the rollout. API server restart: with
``COS_E2E_RESTART_CMD`` naming a command that restarts the cluster's API server (skipped when unset), a
rollout started before the restart finishes after it, and a COS created after it rolls out, by the same
process (its watches resume; nothing restarts it).
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest

from tests.e2e.conftest import (
    CM,
    Reconciler,
    cm,
    cos_name,
    exists,
    make_cos,
    wait_brief,
    wait_for,
    wait_succeeded,
)

pytestmark = pytest.mark.e2e
LEASE = ("coordination.k8s.io/v1", "Lease")


def _gated(env: dict[str, Any], case: str) -> str:
    """A COS stopped after phase one by a probe on a field only the test writes (``data.ready``)."""
    ns = env["ns"]
    name = cos_name(env, case)
    make_cos(env, case, 1, [{"name": "one", "objects": [{"object": cm(ns, f"{case}-gate", labels={"gate": case})}]},
                            {"name": "two", "objects": [{"object": cm(ns, f"{case}-two")}]}],
             progressionProbes=[{"selector": {"type": "Label", "label": {"matchLabels": {"gate": case}}},
                                 "assertions": [{"type": "FieldValue",
                                                 "fieldValue": {"fieldPath": "data.ready", "value": "yes"}}]}])
    wait_brief(env, name, ("False", "ProbeFailure",
                           f'Object ConfigMap.v1 {ns}/{case}-gate: missing key: "data.ready"'), ctype="Available")
    return name


def _open_gate(env: dict[str, Any], case: str) -> None:
    env["kube"].merge_patch("v1", "ConfigMap", f"{case}-gate", env["ns"], {"data": {"ready": "yes"}})


def _holder(env: dict[str, Any], lease: str) -> str:
    return str(env["kube"].get(*LEASE, lease, env["system_ns"])["spec"].get("holderIdentity") or "")


def test_leader_failover_after_sigkill(env: dict[str, Any]) -> None:
    session: Reconciler = env["reconciler"]
    session.stop()
    lease = f"cos-e2e-lease-{env['run']}"
    timings = ("--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1")
    replicas = {rid: Reconciler(session.kubeconfig, session.system_ns, session.log_path, "--leader-elect",
                                "--leader-election-name", lease, "--leader-election-id", rid, *timings)
                for rid in ("replica-a", "replica-b")}
    try:
        replicas["replica-a"].start()
        wait_for(lambda: _holder(env, lease) == "replica-a", 60, "replica-a to lead")
        replicas["replica-b"].start()
        name = _gated(env, "failover")
        assert _holder(env, lease) == "replica-a"
        assert replicas["replica-a"].stop(sig_kill=True) == -9
        _open_gate(env, "failover")   # only a new leader can see this and finish
        wait_for(lambda: _holder(env, lease) == "replica-b", 60, "replica-b to take the lease over")
        wait_succeeded(env, name)
        assert exists(env, CM, "failover-two", env["ns"])
        assert replicas["replica-b"].alive()
    finally:
        for r in replicas.values():
            r.stop()
        session.start()


def test_api_server_restart_mid_rollout(env: dict[str, Any]) -> None:
    command = os.environ.get("COS_E2E_RESTART_CMD")
    if not command:
        pytest.skip("set COS_E2E_RESTART_CMD to a command restarting the cluster's API server to run this test")
    session: Reconciler = env["reconciler"]
    assert session.proc is not None
    pid = session.proc.pid
    name = _gated(env, "restart")
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
    wait_for(lambda: env["kube"].get("v1", "Namespace", env["ns"]), 180, "the API server to answer again")
    _open_gate(env, "restart")
    wait_succeeded(env, name, timeout=300)
    assert exists(env, CM, "restart-two", env["ns"])
    after = cos_name(env, "after-restart")
    make_cos(env, "after-restart", 1, [{"name": "one", "objects": [{"object": cm(env["ns"], "after-restart")}]}])
    wait_succeeded(env, after, timeout=120)
    assert session.alive() and session.proc is not None and session.proc.pid == pid

"""``cos-reconciler`` refuses to start while OLM v1's operator-controller holds its leader Lease.

The process runs as a subprocess against the fake API server (HTTP level); the Leases are what
operator-controller's leader writes (``holderIdentity``, ``renewTime`` as MicroTime, ``leaseDurationSeconds``
137) or leaves behind (released: empty holder, 1 s).
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reconciler.olm_guard import HeldLease, held_lease, refusal_message
from tests.support.fake_apiserver import FakeApiServer

ROOT = Path(__file__).resolve().parents[2]
NAME = "9c4404e7.operatorframework.io"
LEASES = "/apis/coordination.k8s.io/v1/leases"
HOLDER = "operator-controller-controller-manager-657685dcdc-5q6tt_0b1e6c2a-6f6e-4a57-9d55-3a4f1f0b8a61"


def micro(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease(ns: str, *, holder: str = HOLDER, renewed: datetime | None = None, duration: int | None = 137,
          name: str = NAME) -> dict[str, Any]:
    spec: dict[str, Any] = {"holderIdentity": holder, "leaseTransitions": 0}
    if renewed is not None:
        spec["renewTime"] = spec["acquireTime"] = micro(renewed)
    if duration is not None:
        spec["leaseDurationSeconds"] = duration
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def run(kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("KUBECONFIG", None)
    return subprocess.run([sys.executable, "-m", "reconciler.cli", "--kubeconfig", kubeconfig, "--once",
                           "--once-timeout", "20", "--health-bind", "0", "--metrics-bind", "0", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def refusal(ns: str, renewed: datetime) -> str:
    """The message, spelled out here (not built by the code under test)."""
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%SZ")
    until = (renewed.replace(microsecond=0) + timedelta(seconds=137)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (f"refusing to start: OLM v1's operator-controller is running (Lease {ns}/{NAME} is held by "
            f"'{HOLDER}', last renewed at {stamp}, valid until {until}). It reconciles the same "
            "ClusterObjectSets, and two controllers would fight over every object. Stop it first (scale its "
            "Deployment to 0 or uninstall it), then start cos-reconciler: it takes over rolled-out "
            "ClusterObjectSets without rewriting their objects. A Lease left by an operator-controller that is "
            "gone stops counting at the time above; if this one runs without the BoxcutterRuntime feature gate "
            "(it then leaves ClusterObjectSets alone), start with --skip-operator-controller-check.")


def requests(server: FakeApiServer) -> list[tuple[str, str, str, int]]:
    return [(r.method, r.path, r.query.get("fieldSelector", ""), r.status) for r in server.requests]


LIST_ALL = ("GET", LEASES, f"metadata.name={NAME}")


# ------------------------------------------------------------------------------------------- the verdict
NOW = datetime(2026, 11, 23, 16, 28, 8, 979599, tzinfo=UTC)


def test_a_held_lease_renewed_within_its_duration_is_held_until_renewal_plus_duration() -> None:
    got = held_lease(lease("olmv1-system", renewed=NOW - timedelta(seconds=136)), NOW)
    assert got == HeldLease("olmv1-system", NAME, HOLDER, NOW - timedelta(seconds=136),
                            NOW + timedelta(seconds=1))


@pytest.mark.parametrize(("why", "obj"), [
    ("released on a clean stop", lease("ns", holder="", renewed=NOW, duration=1)),
    ("not renewed for its whole duration (the holder crashed or was removed)",
     lease("ns", renewed=NOW - timedelta(seconds=137))),
    ("no renewTime", lease("ns", renewed=None)),
    ("no leaseDurationSeconds", lease("ns", renewed=NOW, duration=None)),
    ("a duration of 0", lease("ns", renewed=NOW, duration=0)),
    ("an unreadable renewTime", {"metadata": {"name": NAME}, "spec": {"holderIdentity": "x", "renewTime": "soon",
                                                                      "leaseDurationSeconds": 137}}),
    ("no spec", {"metadata": {"name": NAME}}),
])
def test_a_lease_that_is_not_held_now_does_not_count(why: str, obj: dict[str, Any]) -> None:
    assert held_lease(obj, NOW) is None, why


def test_renew_time_without_fraction_is_read_too() -> None:
    obj = lease("ns", renewed=NOW)
    obj["spec"]["renewTime"] = "2026-11-23T16:28:08Z"
    got = held_lease(obj, NOW)
    assert got is not None and got.expires == datetime(2026, 11, 23, 16, 30, 25, tzinfo=UTC)


def test_the_refusal_message_names_the_lease_holder_times_and_both_ways_out() -> None:
    renewed = datetime(2026, 11, 23, 16, 30, 55, 123456, tzinfo=UTC)
    assert refusal_message(HeldLease("olmv1-system", NAME, HOLDER, renewed, renewed + timedelta(seconds=137))) \
        == refusal("olmv1-system", renewed)


# ------------------------------------------------------------------------------------- the process, over HTTP
def test_refuses_to_start_with_exit_3_while_operator_controller_holds_its_lease(
        server: FakeApiServer, kubeconfig: str) -> None:
    renewed = datetime.now(UTC) - timedelta(seconds=5)
    server.put_object(lease("olmv1-system", renewed=renewed))
    res = run(kubeconfig)
    assert res.returncode == 3, res.stderr
    assert res.stderr.endswith(f" ERROR cos-reconciler: {refusal('olmv1-system', renewed)}\n"), res.stderr
    assert res.stdout == ""
    # one list of that Lease name in all namespaces, and nothing else: no COS was even read
    assert requests(server) == [(*LIST_ALL, 200)]


def test_finds_the_lease_in_any_namespace(server: FakeApiServer, kubeconfig: str) -> None:
    renewed = datetime.now(UTC)
    server.put_object(lease("openshift-operator-controller", renewed=renewed))
    res = run(kubeconfig)
    assert res.returncode == 3, res.stderr
    assert refusal("openshift-operator-controller", renewed) in res.stderr


@pytest.mark.parametrize(("why", "obj"), [
    ("released by a clean stop", lease("olmv1-system", holder="", renewed=datetime.now(UTC), duration=1)),
    ("left by an operator-controller that crashed or was removed",
     lease("olmv1-system", renewed=datetime.now(UTC) - timedelta(minutes=10))),
])
def test_starts_when_the_lease_is_not_held(why: str, obj: dict[str, Any], server: FakeApiServer,
                                           kubeconfig: str) -> None:
    server.put_object(obj)
    res = run(kubeconfig)
    assert res.returncode == 0, (why, res.stderr)
    assert "refusing" not in res.stderr
    assert [r for r in requests(server) if r[1].startswith("/apis/coordination")] == [(*LIST_ALL, 200)]
    assert ("GET", "/apis/olm.operatorframework.io/v1/clusterobjectsets", "", 200) in requests(server)


def test_other_leases_do_not_count_even_when_the_server_ignores_the_field_selector(
        server: FakeApiServer, kubeconfig: str) -> None:
    """The fake API server ignores ``fieldSelector`` (returns every Lease): names are checked again here."""
    now = datetime.now(UTC)
    server.put_object(lease("olmv1-system", renewed=now, name="cos-reconciler", duration=15))
    server.put_object(lease("kube-node-lease", renewed=now, name="node-1", duration=40))
    res = run(kubeconfig)
    assert res.returncode == 0, res.stderr


def test_the_skip_flag_starts_anyway_with_a_warning_and_looks_for_nothing(
        server: FakeApiServer, kubeconfig: str) -> None:
    server.put_object(lease("olmv1-system", renewed=datetime.now(UTC)))
    res = run(kubeconfig, "--skip-operator-controller-check")
    assert res.returncode == 0, res.stderr
    assert (" WARNING cos-reconciler: --skip-operator-controller-check: not checking whether OLM v1's "
            "operator-controller is running; if it reconciles ClusterObjectSets too, both controllers will fight "
            "over every object\n") in res.stderr
    assert not [r for r in requests(server) if r[1].startswith("/apis/coordination")]


def test_when_listing_all_namespaces_is_forbidden_it_reads_the_lease_in_the_system_namespace(
        server: FakeApiServer, kubeconfig: str) -> None:
    renewed = datetime.now(UTC)
    server.put_object(lease("cos-sys", renewed=renewed))
    server.inject("GET", LEASES, 403)
    res = run(kubeconfig, "--system-namespace", "cos-sys")
    assert res.returncode == 3, res.stderr
    assert refusal("cos-sys", renewed) in res.stderr
    assert requests(server) == [(*LIST_ALL, 403),
                                ("GET", f"/apis/coordination.k8s.io/v1/namespaces/cos-sys/leases/{NAME}", "", 200)]


def test_when_the_system_namespace_has_no_such_lease_it_starts(server: FakeApiServer, kubeconfig: str) -> None:
    server.put_object(lease("elsewhere", renewed=datetime.now(UTC)))   # out of sight without the list right
    server.inject("GET", LEASES, 403)
    res = run(kubeconfig)
    assert res.returncode == 0, res.stderr
    assert [r for r in requests(server) if r[1].startswith("/apis/coordination")] == [
        (*LIST_ALL, 403), ("GET", f"/apis/coordination.k8s.io/v1/namespaces/olmv1-system/leases/{NAME}", "", 404)]


def test_when_every_lease_read_is_forbidden_it_warns_and_starts(server: FakeApiServer, kubeconfig: str) -> None:
    server.inject("GET", LEASES, 403)
    server.inject("GET", f"/apis/coordination.k8s.io/v1/namespaces/olmv1-system/leases/{NAME}", 403)
    res = run(kubeconfig)
    assert res.returncode == 0, res.stderr
    assert (" WARNING cos-reconciler: cannot check whether OLM v1's operator-controller is running (reading "
            f"Lease olmv1-system/{NAME} is forbidden: injected 403 for GET "
            f"/apis/coordination.k8s.io/v1/namespaces/olmv1-system/leases/{NAME}); starting anyway\n") in res.stderr


def test_when_the_check_cannot_be_made_it_exits_1_and_names_the_way_out(
        server: FakeApiServer, kubeconfig: str) -> None:
    server.inject("GET", LEASES, 401)
    res = run(kubeconfig)
    assert res.returncode == 1, res.stderr
    assert res.stderr.endswith(
        " ERROR cos-reconciler: cannot check whether OLM v1's operator-controller is running: injected 401 for GET "
        f"{LEASES} (exiting; --skip-operator-controller-check skips the check)\n"), res.stderr
    assert "Traceback" not in res.stderr
    assert requests(server) == [(*LIST_ALL, 401)]

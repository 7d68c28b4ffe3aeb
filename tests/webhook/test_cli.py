"""``cos-webhook`` command line: usage errors exit 2 with a message naming the flag or file, ``certs`` is
dispatched, ``--self-signed`` serves (through ``make demo``'s script, which exercises all of it)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tests.webhook.support import ROOT
from webhook import cli


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "webhook.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


def test_certificate_flags_are_required() -> None:
    out = run("--bind", "127.0.0.1:9")
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1] == (
        "cos-webhook: error: --cert-file and --key-file are required (or --self-signed for local use)")


def test_self_signed_excludes_certificate_files() -> None:
    out = run("--self-signed", "--cert-file", "x.crt")
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1] == (
        "cos-webhook: error: --self-signed cannot be combined with --cert-file/--key-file")


def test_unreadable_certificate_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "tls.crt"
    out = run("--cert-file", str(missing), "--key-file", str(tmp_path / "tls.key"), "--bind", "127.0.0.1:9")
    assert out.returncode == 2
    assert out.stderr.strip() == f"cos-webhook: cannot read certificate files: No such file or directory: {missing}"
    assert "Traceback" not in out.stderr


def test_bad_bind_is_a_usage_error(tmp_path: Path) -> None:
    out = run("--self-signed", "--bind", "localhost")
    assert out.returncode == 2
    assert out.stderr.strip().endswith("--bind must be HOST:PORT, got 'localhost'")


def test_workers_must_be_positive() -> None:
    out = run("--self-signed", "--workers", "0")
    assert out.returncode == 2
    assert "argument --workers: expected a positive integer, got '0'" in out.stderr


def test_certs_subcommand_is_dispatched_with_its_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    fake = types.ModuleType("webhook.certs")
    fake.main = lambda argv: seen.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "webhook.certs", fake)
    import webhook
    monkeypatch.setattr(webhook, "certs", fake, raising=False)
    assert cli.main(["certs", "--namespace", "olmv1-system", "--check"]) == 7
    assert seen == [["--namespace", "olmv1-system", "--check"]]


def test_certs_help_is_the_certs_commands_own() -> None:
    out = run("certs", "--help")
    assert out.returncode == 0
    assert out.stdout.startswith("usage: cos-webhook certs")


def test_make_demo_script_runs_every_example_through_a_self_signed_server() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("KUBECONFIG", None)
    out = subprocess.run([sys.executable, "examples/demo.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("# cos-webhook listening on https://127.0.0.1:")
    assert "clusterobjectset.olm.operatorframework.io/podinfo-1 created" in lines
    assert "secret/podinfo-2-objects created" in lines
    assert 'Warning: spec.lifecycleState was not set; defaulted to "Active"' in lines
    # kubectl's text, captured from `kubectl apply` on a Kubernetes 1.36 API server with the CRD and webhooks
    text = out.stdout
    assert ("$ kubectl apply -f examples/12-bad-revision-zero.yaml\n"
            'The ClusterObjectSet "zero-0" is invalid: spec.revision: Invalid value: 0: spec.revision in body '
            "should be greater than or equal to 1\n") in text
    assert ("$ kubectl apply -f examples/14-bad-duplicate-object.yaml\n"
            'The ClusterObjectSet "dup-1" is invalid: spec.phases[1].objects[0]: Duplicate value: '
            '{"group":"","kind":"ConfigMap","name":"settings","namespace":"default"}: the same object is already '
            "at spec.phases[0].objects[0]\n") in text
    assert ("$ kubectl apply -f examples/15-bad-many-mistakes.yaml\n"
            'The ClusterObjectSet "many-1" is invalid: \n'
            '* spec.lifecycleState: Unsupported value: "Paused": supported values: "Active", "Archived"\n'
            "* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
            "correct the existing errors to complete validation\n") in text
    assert ("$ kubectl apply -f examples/13-bad-unarchive.yaml\n"
            'The ClusterObjectSet "unarchive-1" is invalid: \n'
            '* spec.lifecycleState: Invalid value: "Active": cannot un-archive\n') in text
    assert "admission webhook" not in text
    assert lines[-3].endswith("examples answered as expected; cos-webhook stopped")
    assert lines[-2:] == [
        "# Reconciler: skipped. Set KUBECONFIG to a cluster you may create objects in (kind or minikube",
        "# will do) and run `make demo` again to roll the good examples out with cos-reconciler.",
    ]
    ca_dir = Path(lines[0].split("(CA: ", 1)[1].rstrip(")")).parent
    assert not ca_dir.exists()  # the temporary certificates are removed when the server stops


def test_make_demo_with_an_unusable_cluster_says_why_and_fails(tmp_path: Path) -> None:
    missing = tmp_path / "kubeconfig"
    env = dict(os.environ, PYTHONPATH=str(ROOT), KUBECONFIG=str(missing))
    out = subprocess.run([sys.executable, "examples/demo.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1
    assert out.stdout.splitlines()[-1].endswith("examples answered as expected; cos-webhook stopped")
    assert out.stderr.splitlines()[-1] == f"demo: cannot run the reconciler: KUBECONFIG={missing}: no such file"

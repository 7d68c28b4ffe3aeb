"""What ``cosctl validate`` and ``cosctl pack`` make of inputs that are no bundle (issue 17): nothing at all,
a ClusterObjectSet, pack's own Secrets; and the warnings of the YAML reader."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from common.cosctl import main
from tests.registryv1.bundles import write_bundle

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\ndata: {a: b}\n"
COS = ("apiVersion: olm.operatorframework.io/v1\nkind: ClusterObjectSet\nmetadata: {name: shop-1}\n"
       "spec:\n  revision: 1\n  lifecycleState: Active\n  collisionProtection: Prevent\n  phases:\n"
       "  - name: configuration\n    objects:\n    - object:\n        apiVersion: v1\n        kind: ConfigMap\n"
       "        metadata: {name: cfg, namespace: shop}\n")


def cosctl(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str,
           stdin: str = "") -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def empty_inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """(arguments, the problem cosctl names) for each kind of input that holds no manifest."""
    empty_file = tmp_path / "empty.yaml"
    empty_file.write_text("# nothing yet\n")
    empty_dir = tmp_path / "manifests"
    empty_dir.mkdir()
    return {
        "file": ([str(empty_file)], f"{empty_file}: no manifest found: the file is empty or holds only comments"),
        "directory": ([str(empty_dir)],
                      f"{empty_dir}: no manifest found: the directory holds no .yaml, .yml or .json file"),
        "stdin": (["-"], "<stdin>: no manifest found: standard input is empty or holds only comments"),
    }


@pytest.mark.parametrize("kind", ["file", "directory", "stdin"])
def test_validate_of_no_manifest_says_so_and_exits_2(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2, validate's code for unusable input (1 would say a ClusterObjectSet was denied)."""
    argv, problem = empty_inputs(tmp_path)[kind]
    assert cosctl(capsys, monkeypatch, "validate", *argv) == (2, "", f"cosctl validate: {problem}\n")


@pytest.mark.parametrize("kind", ["file", "directory", "stdin"])
def test_pack_of_no_manifest_says_so_and_exits_1(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    argv, problem = empty_inputs(tmp_path)[kind]
    assert cosctl(capsys, monkeypatch, "pack", *argv, "--name", "x") == (
        1, "", f"cosctl pack: {problem}\ncosctl pack: 1 problem(s) in the manifests; nothing was done\n")


def test_an_empty_file_beside_good_ones_still_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "good.yaml").write_text(CONFIGMAP)
    (tmp_path / "empty.yaml").write_text("")
    code, out, err = cosctl(capsys, monkeypatch, "pack", str(tmp_path / "good.yaml"), str(tmp_path / "empty.yaml"),
                            "--name", "x")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == f"cosctl pack: {tmp_path / 'empty.yaml'}: no manifest found: the file is empty or " \
                                  "holds only comments"


def test_pack_refuses_a_cluster_object_set(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cos.yaml"
    path.write_text(CONFIGMAP + "---\n" + COS)
    assert cosctl(capsys, monkeypatch, "pack", str(path), "--name", "x") == (1, "", (
        f"cosctl pack: {path}:1 ClusterObjectSet/shop-1: a ClusterObjectSet cannot be packed into another one; to "
        f"create it as it is, use `kubectl apply -f {path}` (`cosctl validate {path}` checks it first)\n"
        "cosctl pack: 1 problem(s) in the manifests; nothing was done\n"))
    code, out, err = cosctl(capsys, monkeypatch, "pack", "-", "--name", "x", stdin=COS)
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == ("cosctl pack: <stdin>:0 ClusterObjectSet/shop-1: a ClusterObjectSet cannot be "
                                   "packed into another one; to create it as it is, use `kubectl apply -f -` "
                                   "(`cosctl validate -` checks it first)")
    assert cosctl(capsys, monkeypatch, "validate", str(path))[0] == 0  # what the user most likely wanted


def test_pack_refuses_its_own_output(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Packing the output of pack again: its ClusterObjectSet and its object-data Secrets are named."""
    (tmp_path / "in.yaml").write_text(CONFIGMAP)
    rendered = tmp_path / "rendered"
    assert cosctl(capsys, monkeypatch, "pack", str(tmp_path / "in.yaml"), "--name", "shop-1", "-o",
                  str(rendered))[0] == 0
    secret_file, cos_file = sorted(rendered.iterdir(), key=lambda p: p.name.startswith("clusterobjectset"))
    secret = secret_file.name.removeprefix("secret-").removesuffix(".yaml")
    code, out, err = cosctl(capsys, monkeypatch, "pack", str(rendered), "--name", "x")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"cosctl pack: {cos_file}:0 ClusterObjectSet/shop-1: a ClusterObjectSet cannot be packed into another one; "
        f"to create it as it is, use `kubectl apply -f {cos_file}` (`cosctl validate {cos_file}` checks it first)",
        f"cosctl pack: {secret_file}:0 Secret/{secret}: an object-data Secret "
        "(olm.operatorframework.io/object-data) is what `cosctl pack` writes, not a manifest to pack: pack the "
        "manifests it came from (or apply it with its ClusterObjectSet as it is)",
        "cosctl pack: 2 problem(s) in the manifests; nothing was done",
    ]


def test_publish_refuses_them_before_contacting_the_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cos.yaml"
    path.write_text(COS)
    monkeypatch.setattr("common.cosctl._producer.connect", lambda args: pytest.fail("the cluster was contacted"))
    code, out, err = cosctl(capsys, monkeypatch, "publish", str(path), "--owner", "shop")
    assert (code, out) == (1, "")
    assert err.startswith(f"cosctl publish: {path}:0 ClusterObjectSet/shop-1: a ClusterObjectSet cannot be packed")


def test_a_repeated_key_is_a_warning_for_pack_and_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text(CONFIGMAP + "data: {a: c}\n")
    warning = (f'warning: {path}:0: key "data" at line 5 repeats an earlier key of the same mapping: its last value '
               "is used, as kubectl does\n")
    code, out, err = cosctl(capsys, monkeypatch, "pack", str(path), "--name", "x", "--inline")
    assert (code, err) == (0, f"cosctl pack: {warning}")
    assert "data: {a: c}" in out or "a: c" in out
    assert cosctl(capsys, monkeypatch, "validate", str(path)) == (
        0, f"{path}:0 ConfigMap/cfg: skipped: cosctl validate checks ClusterObjectSets and Secrets of type "
           "olm.operatorframework.io/object-data\n", f"cosctl validate: {warning}")


def test_validate_says_a_bundle_is_checked_by_rendering_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Its documents would all be 'skipped' and the exit code say 'allowed' of nothing judged."""
    bundle = write_bundle(tmp_path / "b")
    assert cosctl(capsys, monkeypatch, "validate", str(bundle)) == (2, "", (
        f"cosctl validate: {bundle}: a registry+v1 bundle: validate judges ClusterObjectSets and object-data "
        f"Secrets, as the webhook does; check a bundle with its configuration by rendering it (cosctl render {bundle} "
        "-n NS --config FILE), or validate what pack writes from it\n"))


def test_an_unknown_flag_is_reported_with_the_subcommands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse reports it with `usage: cosctl [-h] COMMAND ...`, which says nothing of what render takes."""
    with pytest.raises(SystemExit) as exited:
        main(["render", "bundle", "-n", "x", "--create-namespace"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: cosctl render [-h] [-n NS] [--config FILE]")
    assert err.endswith("\ncosctl render: error: unrecognized arguments: --create-namespace\n")

"""``cosctl validate``: output lines, JSON records, --old, exit codes, unreadable input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import yaml

from common.cosctl.validate import run
from tests.admission.helpers import base_cos

ROOT = Path(__file__).resolve().parents[2]


def cosctl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "common.cosctl", *args], cwd=ROOT, input=stdin,
                          capture_output=True, text=True, timeout=60)


def write(tmp_path: Path, name: str, *docs: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


def test_allowed_denied_skipped_and_exit_1(tmp_path: Path) -> None:
    good = base_cos()
    del good["spec"]["lifecycleState"]
    bad = base_cos(revision=0)
    bad["metadata"]["name"] = "bad"
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    path = write(tmp_path, "cos.yaml", good, bad, other)
    result = cosctl("validate", path)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        'Warning: spec.lifecycleState was not set; defaulted to "Active"',
        f"{path}:0 ClusterObjectSet/demo: allowed",
        f'{path}:1 ClusterObjectSet/bad: The ClusterObjectSet "bad" is invalid: '
        "spec.revision: Invalid value: 0: spec.revision in body should be greater than or equal to 1",
        f"{path}:2 ConfigMap/x: skipped: cosctl validate checks ClusterObjectSets and Secrets of type "
        "olm.operatorframework.io/object-data",
    ]
    assert result.stderr == ""


def test_all_allowed_exit_0_from_stdin() -> None:
    result = cosctl("validate", "-", stdin=json.dumps(base_cos()))
    assert result.returncode == 0
    assert result.stdout == "<stdin>:0 ClusterObjectSet/demo: allowed\n"


def test_multiple_causes_listed_as_kubectl_lists_them_in_the_api_servers_order(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", base_cos(revision=0, lifecycleState="Paused"))
    out = io.StringIO()
    assert run([path], out=out) == 1
    # kubectl's MultilineError: the prefix ends in ": " and a newline, then one "* " line per cause;
    # lifecycleState before revision (property names), whatever the manifest's order
    assert out.getvalue() == (
        f'{path}:0 ClusterObjectSet/demo: The ClusterObjectSet "demo" is invalid: \n'
        '* spec.lifecycleState: Unsupported value: "Paused": supported values: "Active", "Archived"\n'
        "* spec.revision: Invalid value: 0: spec.revision in body should be greater than or equal to 1\n")


def test_json_output_fields(tmp_path: Path) -> None:
    obj = base_cos(revision=0)
    path = write(tmp_path, "x.yaml", obj)
    out = io.StringIO()
    assert run([path], output="json", out=out) == 1
    (record,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert record == {
        "file": path, "index": 0, "kind": "ClusterObjectSet", "name": "demo", "allowed": False, "code": 422,
        "message": 'ClusterObjectSet.olm.operatorframework.io "demo" is invalid: spec.revision: Invalid value: 0: '
                   "spec.revision in body should be greater than or equal to 1",
        "causes": [{"reason": "FieldValueInvalid", "field": "spec.revision",
                    "message": "Invalid value: 0: spec.revision in body should be greater than or equal to 1"}],
        "warnings": [], "patch": [],
    }


def test_old_file_makes_an_update(tmp_path: Path) -> None:
    old = base_cos(lifecycleState="Archived")
    new = base_cos(lifecycleState="Active")
    old_path, new_path = write(tmp_path, "old.yaml", old), write(tmp_path, "new.yaml", new)
    result = cosctl("validate", "--old", old_path, new_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f'{new_path}:0 ClusterObjectSet/demo: The ClusterObjectSet "demo" is invalid: '
        'spec.lifecycleState: Invalid value: "Active": cannot un-archive']
    assert cosctl("validate", new_path).returncode == 0  # the same document is a valid CREATE


def test_unreadable_input_exit_2_names_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("spec: [unclosed\n")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xff\x00")
    result = cosctl("validate", str(broken), str(binary), str(tmp_path / "missing.yaml"))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"cosctl validate: {broken}:0: invalid YAML: while parsing a flow sequence, did not find expected ',' or "
        "']' at line 2 column 1",
        f"cosctl validate: {binary}: not UTF-8 text",
        f"cosctl validate: {tmp_path / 'missing.yaml'}: no such file or directory",
    ]
    assert "Traceback" not in result.stderr


def test_non_object_document_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    out, err = io.StringIO(), io.StringIO()
    assert run([str(path)], out=out, err=err) == 2
    assert err.getvalue() == f"cosctl validate: {path}:0: not a Kubernetes object (a YAML/JSON list)\n"


def test_usage_error_exit_2() -> None:
    result = cosctl("validate")
    assert result.returncode == 2
    assert "the following arguments are required: PATH" in result.stderr


def test_list_items_and_secrets(tmp_path: Path) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "olm.operatorframework.io/object-data",
              "metadata": {"name": "s", "namespace": "olmv1-system"}, "data": {}}
    path = write(tmp_path, "list.yaml", {"apiVersion": "v1", "kind": "List", "items": [base_cos(), secret]})
    result = cosctl("validate", path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{path}:0 items[0] ClusterObjectSet/demo: allowed",
        f'{path}:0 items[1] Secret/s: The Secret "s" is invalid: '
        "metadata.labels[olm.operatorframework.io/revision-name]: Required value: the name of the ClusterObjectSet "
        "revision this Secret belongs to",
    ]


def test_long_warnings_are_bounded_exactly_as_the_webhook_sends_them(tmp_path: Path) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s" * 250, "namespace": "n" * 60}}
    obj = base_cos(phases=[{"name": "p", "objects": [{"object": secret}]}])
    out = io.StringIO()
    assert run([write(tmp_path, "x.yaml", obj)], output="json", out=out) == 0
    (warning,) = json.loads(out.getvalue())["warnings"]
    assert len(warning.encode()) == 255 and warning.endswith("...")
    assert warning.startswith('spec.phases[0].objects[0].object: inline Secret "nnn')


def test_cluster_object_set_with_a_wrong_api_version_is_not_skipped(tmp_path: Path) -> None:
    obj = base_cos(revision=0)
    del obj["apiVersion"]
    path = write(tmp_path, "x.yaml", obj)
    out, err = io.StringIO(), io.StringIO()
    assert run([path], out=out, err=err) == 2
    assert err.getvalue() == (f"cosctl validate: {path}:0 ClusterObjectSet/demo: apiVersion must be "
                              "olm.operatorframework.io/v1, got none\n")


def test_inputs_that_cannot_be_json_exit_2_without_a_traceback(tmp_path: Path) -> None:
    """What kubectl refuses is unreadable; what it reads (a number too large for a float stays a string,
    !!binary is decoded into one) is judged as kubectl would send it (tests/producer/test_k8syaml.py)."""
    big_json = tmp_path / "big.json"
    big_json.write_text('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"n":' + "9" * 5000 + "}")
    big_yaml = tmp_path / "big.yaml"
    big_yaml.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nn: " + "9" * 5000 + "\n")
    binary = tmp_path / "binary.yaml"
    binary.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ndata: !!binary aGVsbG8=\n")
    laughs = tmp_path / "laughs.yaml"
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join(['*a' + str(i - 1)] * 10)}]" for i in range(1, 8)]
    laughs.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n"
                      + "".join(f"  {line}\n" for line in levels))
    nan = tmp_path / "nan.yaml"
    nan.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: .nan}\n")
    result = cosctl("validate", str(big_json), str(big_yaml), str(binary), str(laughs), str(nan))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"cosctl validate: {big_json}:0: invalid JSON: a number is too large",
        f"cosctl validate: {laughs}:0: invalid YAML: data.a3[3][2][9][6]: the document contains excessive aliasing "
        "at line 5 column 30",
        f"cosctl validate: {nan}:0: invalid YAML: data.a: not a finite number (.nan or .inf): JSON cannot hold it "
        "at line 4 column 11",
    ]
    skipped = ("skipped: cosctl validate checks ClusterObjectSets and Secrets of type "
               "olm.operatorframework.io/object-data")
    assert result.stdout.splitlines() == [f"{big_yaml}:0 ConfigMap/x: {skipped}", f"{binary}:0 Secret/x: {skipped}"]


def test_an_inline_cos_the_api_server_cannot_store_is_an_error_not_a_warning(tmp_path: Path) -> None:
    """Issue 17: a 29.6 MiB inline COS was "allowed" with a warning that it was close to the 1.5 MiB limit."""
    cos = base_cos()
    blob = cos["spec"]["phases"][0]["objects"][0]["object"]["data"] = {"blob": ""}
    blob["blob"] = "x" * (31037194 - len(json.dumps(cos, separators=(",", ":"))))
    path = tmp_path / "inline.json"
    path.write_text(json.dumps(cos))
    out, err = io.StringIO(), io.StringIO()
    assert run([str(path)], out=out, err=err) == 1
    assert out.getvalue() == (
        f'{path}:0 ClusterObjectSet/demo: The ClusterObjectSet "demo" is invalid: spec.phases: Too long: this '
        "ClusterObjectSet is 31037194 bytes serialized (29.60 MiB), over the 3145728 bytes (3 MiB) the API server "
        "reads in a request, so it can never be stored: move objects into object-data Secrets and reference them "
        "with ref (cosctl pack does this)\n")
    assert err.getvalue() == ""

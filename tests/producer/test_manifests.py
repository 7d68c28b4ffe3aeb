"""Loading manifests: files, directories, Lists, and every problem reported with its file and index."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from common.bundle.manifests import ManifestError, load


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def names(manifests) -> list[str]:
    return [m.obj["metadata"]["name"] for m in manifests]


def test_multi_document_yaml_skips_empty_documents_and_keeps_indexes(tmp_path):
    f = write(tmp_path / "a.yaml", "---\n"
              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\n"
              "# only a comment\n---\n"
              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\n")
    got = load([f])
    assert names(got) == ["one", "two"]
    assert [str(m.source) for m in got] == [f"{f}:0", f"{f}:2"]


def test_json_file_and_list_kinds_are_flattened(tmp_path):
    f = write(tmp_path / "l.json", json.dumps({
        "apiVersion": "v1", "kind": "List",
        "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
                  {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b"}}]}))
    g = write(tmp_path / "m.yaml", "apiVersion: v1\nkind: ConfigMapList\nitems:\n"
              "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n")
    got = load([f, g])
    assert names(got) == ["a", "b", "c"]
    assert str(got[1].source) == f"{f}:0 items[1]"


def test_directories_are_walked_recursively_in_sorted_order_skipping_hidden_and_other_files(tmp_path):
    for rel, name in [("b/z.yaml", "bz"), ("a.yml", "a"), ("b/a/x.json", "bax"), ("c.yaml", "c"),
                      (".git/h.yaml", "hidden"), ("notes.txt", "txt")]:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
        write(tmp_path / rel, json.dumps(body))
    assert names(load([tmp_path])) == ["a", "bax", "bz", "c"]


def test_stdin_and_timestamps_stay_strings(tmp_path):
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata: {when: 2024-01-01}\n"
    got = load(["-"], stdin=io.StringIO(text))
    assert got[0].obj["data"]["when"] == "2024-01-01"
    assert str(got[0].source) == "<stdin>:0"


def test_every_problem_is_reported_with_file_and_document_index(tmp_path):
    good = write(tmp_path / "1-good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n")
    bad = write(tmp_path / "2-bad.yaml",
                "apiVersion: v1\nmetadata: {name: nokind}\n---\n"
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: x}\n---\n"
                "- just\n- a list\n---\n"
                "kind: Service\nmetadata: {name: s}\n---\n"
                "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap}\n")
    broken = write(tmp_path / "3-broken.yaml",
                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n---\n"
                   "apiVersion: v1\nkind: Secret\nstringData: {password: 'hunter2\n")
    with pytest.raises(ManifestError) as e:
        load([tmp_path])
    assert e.value.problems == [  # unreadable documents first, then unusable ones
        f"{broken}:1: invalid YAML: while scanning a quoted scalar, found unexpected end of stream "
        "at line 8 column 1",  # lines count from the top of the file
        f"{bad}:0: missing kind",
        f"{bad}:1 ConfigMap: missing metadata.name",
        f"{bad}:2: not a mapping (a manifest must be an object, got a list)",
        f"{bad}:3 Service/s: missing apiVersion",
        f"{bad}:4 items[0] ConfigMap: missing metadata.name",
    ]
    assert "hunter2" not in str(e.value)
    assert good  # the good file alone still loads
    assert names(load([good])) == ["ok"]


def test_invalid_json_file(tmp_path):
    f = write(tmp_path / "x.json", '{"apiVersion": "v1",')
    with pytest.raises(ManifestError) as e:
        load([f])
    assert e.value.problems == [f"{f}:0: invalid JSON: Expecting property name enclosed in double quotes "
                                "at line 1 column 21"]


def test_missing_path_non_utf8_and_values_json_cannot_hold(tmp_path):
    raw = tmp_path / "bin.yaml"
    raw.write_bytes(b"\xff\xfe")
    nan = write(tmp_path / "nan.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}\ndata: {x: .nan}\n")
    binary = write(tmp_path / "bin2.yaml",
                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\nbinaryData: {x: !!binary aGk=}\n")
    with pytest.raises(ManifestError) as e:
        load([tmp_path / "nope", raw, nan, binary])
    assert e.value.problems == [
        f"{tmp_path / 'nope'}: no such file or directory",
        f"{raw}: not UTF-8 text",
        f"{nan}:0 ConfigMap/n: data.x: nan is not a valid JSON number",
        f"{binary}:0 ConfigMap/b: binaryData.x: a bytes value cannot be represented in JSON",
    ]


def test_duplicate_objects_name_both_places(tmp_path):
    f = write(tmp_path / "d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w, namespace: n}\n"
              "---\napiVersion: apps/v2\nkind: Deployment\nmetadata: {name: w, namespace: n}\n")
    with pytest.raises(ManifestError) as e:
        load([f])
    assert e.value.problems == [f"{f}:1: duplicate object Deployment.apps n/w (first defined at {f}:0)"]


def test_no_inputs():
    with pytest.raises(ManifestError) as e:
        load([])
    assert e.value.problems == ["no input files or directories given"]

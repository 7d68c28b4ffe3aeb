"""Loading manifests: files, directories, Lists, and every problem reported with its file and index."""

from __future__ import annotations

import codecs
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
    raw.write_bytes(b"\xff\xff")
    nan = write(tmp_path / "nan.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}\ndata: {x: .nan}\n")
    with pytest.raises(ManifestError) as e:
        load([tmp_path / "nope", raw, nan])
    assert e.value.problems == [
        f"{tmp_path / 'nope'}: no such file or directory",
        f"{raw}: not UTF-8 text",
        f"{nan}:0: invalid YAML: data.x: not a finite number (.nan or .inf): JSON cannot hold it at line 4 column 11",
    ]


@pytest.mark.parametrize(("data", "value"), [
    # a UTF-8 byte order mark is dropped before kubectl sniffs JSON: "\\/" is JSON's escape, 1e3 JSON's 1000
    (codecs.BOM_UTF8 + b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": "\\/"}}',
     "/"),
    # UTF-16 with its byte order mark, either order, as Windows editors save "Unicode"
    (codecs.BOM_UTF16_LE + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: h\u00e9\U0001f600}\n"
     .encode("utf-16-le"), "h\u00e9\U0001f600"),
    (codecs.BOM_UTF16_BE + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: x}\n".encode("utf-16-be"),
     "x"),
])
def test_files_are_decoded_as_kubectl_decodes_them(tmp_path, data, value):
    """kubectl reads a file through golang.org/x/text's BOMOverride (checked with kubectl 1.37 on these bytes)."""
    f = tmp_path / "m.yaml"
    f.write_bytes(data)
    (manifest,) = load([f])
    assert manifest.obj["data"] == {"k": value}


def test_utf16_that_is_not_is_refused(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_bytes(codecs.BOM_UTF16_LE + b"a\x00\x00\xd8")   # an unpaired surrogate
    with pytest.raises(ManifestError) as e:
        load([f])
    assert e.value.problems == [f"{f}: not UTF-16 text, though it starts with UTF-16's byte order mark"]


def test_values_are_read_as_kubectl_reads_them(tmp_path):
    """Issue 15: prometheus-operator's own bundle.yaml has an unquoted "=" in an enum of its
    AlertmanagerConfig CRD; PyYAML's YAML 1.1 resolvers made it a !!value tag with no constructor. kubectl reads
    the string "=", and so do we; the rest of tests/producer/test_k8syaml.py proves the rules against kubectl."""
    f = write(tmp_path / "crd.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
              "metadata: {name: alertmanagerconfigs.monitoring.coreos.com}\n"
              "spec:\n  matchType:\n    enum:\n    - '!='\n    - =\n    - =~\n    - '!~'\n"
              "  when: 2024-01-01\n  on: yes\n  mode: 0777\n  ratio: 1.0\n  blob: !!binary aGk=\n")
    (manifest,) = load([f])
    assert manifest.obj["spec"] == {"matchType": {"enum": ["!=", "=", "=~", "!~"]}, "when": "2024-01-01",
                                    "true": True, "mode": 511, "ratio": 1, "blob": "hi"}
    assert type(manifest.obj["spec"]["ratio"]) is int  # kubectl sends 1, not 1.0


def test_a_key_written_twice_keeps_its_last_value_and_is_reported(tmp_path):
    f = write(tmp_path / "d.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n"
              "data:\n  a: one\n  a: two\n")
    warnings: list[str] = []
    (manifest,) = load([f], warnings=warnings)
    assert manifest.obj["data"] == {"a": "two"}
    assert warnings == [f'{f}:0: key "a" at line 6 repeats an earlier key of the same mapping: its last value is '
                        "used, as kubectl does"]
    assert load([f])[0].obj == manifest.obj  # nobody listening: the same manifest


def test_an_input_without_any_manifest_is_a_problem(tmp_path):
    """An empty file, a directory without manifests and an empty standard input: each named, none silent."""
    good = write(tmp_path / "good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n")
    empty = write(tmp_path / "empty.yaml", "")
    comments = write(tmp_path / "comments.yaml", "# nothing here yet\n---\n---\n")
    no_files = tmp_path / "nothing"
    write(no_files / "README.md", "# notes\n")
    only_empty = tmp_path / "blank"
    write(only_empty / "a.yaml", "\n")
    write(only_empty / "b.json", "  ")
    with pytest.raises(ManifestError) as e:
        load([good, empty, comments, no_files, only_empty, "-"], stdin=io.StringIO("# just a comment\n"))
    assert e.value.problems == [
        f"{empty}: no manifest found: the file is empty or holds only comments",
        f"{comments}: no manifest found: the file is empty or holds only comments",
        f"{no_files}: no manifest found: the directory holds no .yaml, .yml or .json file",
        f"{only_empty}: no manifest found: the directory's 2 manifest file(s) are empty or hold only comments",
        "<stdin>: no manifest found: standard input is empty or holds only comments",
    ]
    assert names(load([tmp_path / "good.yaml"])) == ["ok"]


def test_a_directory_with_some_empty_files_is_fine(tmp_path):
    write(tmp_path / "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    write(tmp_path / "b.yaml", "# placeholder\n")
    assert names(load([tmp_path])) == ["a"]


def test_duplicate_objects_name_both_places(tmp_path):
    f = write(tmp_path / "d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w, namespace: ns}\n"
              "---\napiVersion: apps/v2\nkind: Deployment\nmetadata: {name: w, namespace: ns}\n")
    with pytest.raises(ManifestError) as e:
        load([f])
    assert e.value.problems == [f"{f}:1: duplicate object Deployment.apps ns/w (first defined at {f}:0)"]


def test_no_inputs():
    with pytest.raises(ManifestError) as e:
        load([])
    assert e.value.problems == ["no input files or directories given"]

"""The YAML cosctl writes (render, pack, diff) is read back by kubectl as the same objects.

PyYAML quotes a string only where its own YAML 1.1 resolver would read it as something else; kubectl's go-yaml v2
reads more plain scalars as booleans and numbers (``y``, ``N``, ``1e3``, ``+1E5``, ``0o17``, ``08``). Found by a
differential run against OLM v1's renderer: a deploymentConfig nodeSelector value ``"1e3"`` was printed as
``1e3``, which ``kubectl apply -f`` sends as the number 1000. Each expectation here is checked against our reader
(proven against kubectl in test_k8syaml.py) and, in one run, against the real kubectl.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.bundle import k8syaml
from common.bundle.diff import diff
from common.bundle.phasing import Phase
from common.cosctl._producer import to_yaml
from tests.producer.helpers import cosctl
from tests.producer.test_cli_bundles import demo_bundle
from tests.producer.test_k8syaml import SCALAR
from tests.support import kubectl

# Strings PyYAML alone wrote plain, and what kubectl made of them.
KUBECTL_WOULD_CHANGE = {"y": True, "Y": True, "n": False, "N": False, "1e3": 1000, "+1E5": 100000,
                        "-1e-3": -0.001, "0o17": 15, "08": 8, "1e+3": 1000, "9e9": 9000000000}
# Strings that must stay plain (quoting them would be noise in every rendered manifest).
PLAIN = ["demo-operator", "quay.io/demo/operator:1.0.0", "1e", "+", "a b", "yEs", "t", "f", "ü", "x:y", "=", "v1"]


def config_map(name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def read_back(text: str) -> list[Any]:
    return [d.value for d in k8syaml.read_stream(text).documents if d.value is not None]


@pytest.mark.parametrize(("text", "kubectl_reads_plain"), sorted(KUBECTL_WOULD_CHANGE.items()))
def test_strings_kubectl_reads_as_other_values_are_quoted(text: str, kubectl_reads_plain: Any) -> None:
    assert k8syaml.load(f"v: {text}") == {"v": kubectl_reads_plain}  # why quoting is needed
    written = to_yaml([config_map("w", {text: text})])
    assert f"  '{text}': '{text}'\n" in written
    assert read_back(written) == [config_map("w", {text: text})]


@pytest.mark.parametrize("text", PLAIN)
def test_strings_kubectl_reads_back_unchanged_stay_plain(text: str) -> None:
    written = to_yaml([config_map("w", {"k": text})])
    if text in ("=",):  # PyYAML's own resolver still quotes these (harmless)
        assert "  k: '='\n" in written
    else:
        assert f"  k: {text}\n" in written
    assert read_back(written) == [config_map("w", {"k": text})]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(SCALAR, SCALAR, max_size=8))
def test_any_string_is_read_back_as_written(data: dict[str, str]) -> None:
    obj = config_map("w", data)
    assert read_back(to_yaml([obj])) == [obj]


@pytest.mark.skipif(kubectl.binary() is None, reason=kubectl.MISSING)
def test_kubectl_reads_back_what_we_write() -> None:
    """The real kubectl, one run: every string of the tables, as keys and values, arrives unchanged."""
    strings = [*KUBECTL_WOULD_CHANGE, *PLAIN, "0x1F", "0777", "~", "null", "yes", "Off", "2001-12-14", ".5"]
    objects = [config_map(f"w{i:03d}", {s: s, "v": s}) for i, s in enumerate(strings)]
    files = {f"w{i:03d}.yaml": to_yaml([obj]) for i, obj in enumerate(objects)}
    reads = kubectl.read_files(files)
    got = {name: (read.error, [o["data"] for o in read.objects]) for name, read in reads.items()}
    assert got == {name: (None, [obj["data"]]) for name, obj in zip(files, objects, strict=True)}


def test_render_prints_a_string_value_kubectl_would_read_as_a_number_quoted(tmp_path: Path) -> None:
    """The case OLM v1's renderer caught: deploymentConfig.nodeSelector {"disk": "1e3", "ssd": "y"}."""
    bundle = demo_bundle(tmp_path / "b")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"deploymentConfig": {"nodeSelector": {"disk": "1e3", "ssd": "y"}}}))
    code, out, err = cosctl("render", str(bundle), "-n", "ns", "--config", str(config))
    assert (code, err) == (0, "")
    assert "        disk: '1e3'\n        ssd: 'y'\n" in out
    (deployment,) = [d for d in read_back(out) if d["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "1e3", "ssd": "y"}


def test_diff_shows_quoted_strings_as_kubectl_would_read_them() -> None:
    old = [Phase("configuration", [config_map("w", {"flag": "n"})])]
    new = [Phase("configuration", [config_map("w", {"flag": "y"})])]
    (change,) = diff(old, new).changes
    assert "-  flag: 'n'\n" in change.diff and "+  flag: 'y'\n" in change.diff


def test_render_prints_numbers_beyond_what_yaml_or_json_keeps_exactly_as_olm_v1_does(tmp_path: Path) -> None:
    """A whole number above int64 in a YAML manifest, a float of 2**53 or more in a JSON one: printed with the digits
    OLM v1 prints for the float64 it holds (a YAML manifest's uint64 used to stop ``cosctl render`` with an internal
    error, RepresenterError), and read back by kubectl as the same number."""
    bundle = demo_bundle(tmp_path / "b")
    (bundle / "manifests" / "big.yaml").write_text(
        "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: big\n"
        "spec:\n  groups:\n  - name: g\n    interval: 18446744073709551615\n")
    (bundle / "manifests" / "float.json").write_text(
        '{"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {"name": "float"}, '
        '"spec": {"groups": [{"name": "g", "interval": 4.611686018427388e+18}]}}')
    code, out, err = cosctl("render", str(bundle), "-n", "ns")
    assert (code, err) == (0, "")
    assert "    interval: 18446744073709552000\n" in out
    assert "    interval: 4611686018427388000\n" in out
    rules = {d["metadata"]["name"]: d for d in read_back(out) if d["kind"] == "PrometheusRule"}
    assert [rules[n]["spec"]["groups"][0]["interval"] for n in ("big", "float")] == [18446744073709552000,
                                                                                     4611686018427388000]

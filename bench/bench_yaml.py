"""Reading manifests as kubectl does (common/bundle/k8syaml.py) against the PyYAML loader it replaced, as JSON.

For each input, the best-of-N wall time of:
- ``before``: PyYAML's C loader (libyaml) with its YAML 1.1 resolvers minus timestamps, ``load_all``: what
  ``common/bundle/manifests.py`` used before it read YAML as kubectl does;
- ``after``: ``k8syaml.read_stream``, the reader ``cosctl`` uses now (libyaml's composer, go-yaml's rules);
and the ratio after/before. Inputs: the 900-manifest bundle of tests/support/big_bundle as one multi-document
YAML file (about 3 MiB), one large CRD shaped like the big ones operators ship (a deep schema, about 1 MiB),
and any files given on the command line (say, a real operator's CRDs).

Run: python bench/bench_yaml.py [--repeat N] [FILE ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml

from common.bundle import k8syaml
from tests.support import big_bundle


class _Before(yaml.CSafeLoader):  # type: ignore[misc]
    """The loader manifests.py had: safe YAML 1.1 without timestamp resolution."""


_Before.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _schema(depth: int, width: int, seed: str) -> dict[str, Any]:
    """An OpenAPI schema as big CRDs have them: nested objects, long descriptions, enums, formats, bounds."""
    if depth == 0:
        return {"type": "string", "description": big_bundle._text(seed, 30), "maxLength": 253,
                "enum": ["Always", "IfNotPresent", "Never"], "format": "int-or-string"}
    return {"type": "object", "description": big_bundle._text(seed, 40),
            "properties": {f"field{seed}{i}": _schema(depth - 1, width, f"{seed}{i}") for i in range(width)},
            "required": [f"field{seed}0"], "x-kubernetes-preserve-unknown-fields": depth % 2 == 0}


def big_crd() -> str:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "bigs.example.com", "annotations": {"controller-gen.kubebuilder.io/version": "v0.16"}},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "bigs", "singular": "big", "kind": "Big", "listKind": "BigList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": _schema(4, 7, "")}}]}}
    return yaml.dump(crd, Dumper=yaml.CSafeDumper, sort_keys=False)


def best_of(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """The fastest run of each, taken in turns so that other load on the machine weighs on all alike."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, runs in zip(fns, times, strict=True):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
    return [min(runs) for runs in times]


def measure(name: str, text: str, repeat: int) -> dict[str, Any]:
    before, after = best_of([lambda: list(yaml.load_all(text, Loader=_Before)),
                             lambda: k8syaml.read_stream(text)], repeat)
    documents = [d for d in k8syaml.read_stream(text).documents if d.value is not None]
    return {"input": name, "bytes": len(text.encode()), "documents": len(documents),
            "before_ms": round(before * 1000, 1), "after_ms": round(after * 1000, 1),
            "after_over_before": round(after / before, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    inputs = {"big_bundle (900 manifests)": yaml.dump_all(big_bundle.manifests(), Dumper=yaml.CSafeDumper,
                                                          sort_keys=False),
              "one large CRD": big_crd()}
    inputs.update({str(f): f.read_text(encoding="utf-8") for f in args.files})
    results = [measure(name, text, args.repeat) for name, text in inputs.items()]
    print(json.dumps({"libyaml": yaml.__with_libyaml__, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

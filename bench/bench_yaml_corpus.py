"""Every YAML/JSON file under a directory read by k8syaml and by kubectl: how many agree, as JSON.

For a corpus of real manifests (say a checkout of operator-framework/community-operators), each file is read
by ``common/bundle/k8syaml.py`` and, in batches, by the pinned kubectl (``kubectl label --local -f ... -o
json``, the decoder of ``kubectl apply -f``; tests/support/kubectl.py). Files whose documents kubectl can turn
into objects are compared object by object as JSON; files we refuse are run through kubectl one by one to see
that it refuses them too. Prints the counts, our reading time, and every disagreement. Nothing is written.

Run: python bench/bench_yaml_corpus.py DIR [--batch N]   (without DIR it says so and exits 0, for `make bench`)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common.bundle import k8syaml
from tests.support import kubectl


def comparable(value: Any) -> bool:
    """A document kubectl's decoder turns into one object (not a List, with metadata it can decode)."""
    if not isinstance(value, dict) or "items" in value:
        return False
    if not all(isinstance(value.get(f), str) and value.get(f) for f in ("apiVersion", "kind")):
        return False
    meta = value.get("metadata", {})
    if not isinstance(meta, dict):
        return False
    for field in ("labels", "annotations"):
        entries = meta.get(field) or {}
        if not isinstance(entries, dict) or not all(isinstance(v, str) for v in entries.values()):
            return False
    return all(isinstance(meta[f], str) for f in ("name", "namespace", "generateName", "uid") if f in meta)


def kubectl_objects(paths: list[Path]) -> tuple[list[dict[str, Any]], str]:
    args = ["label", "--local", "-o", "json", f"{kubectl.PROBE_LABEL}=x"]
    for path in paths:
        args += ["-f", str(path)]
    proc = kubectl.run(args, timeout=600)
    objects, decoder, at, out = [], json.JSONDecoder(), 0, proc.stdout
    while True:
        while at < len(out) and out[at].isspace():
            at += 1
        if at >= len(out):
            break
        obj, at = decoder.raw_decode(out, at)
        labels = obj["metadata"].get("labels", {})
        labels.pop(kubectl.PROBE_LABEL, None)
        if not labels:
            obj["metadata"].pop("labels", None)
        objects.append(obj)
    return objects, proc.stderr.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, nargs="?", help="the corpus (without one, says so and exits 0)")
    parser.add_argument("--batch", type=int, default=400)
    args = parser.parse_args()
    if args.directory is None or kubectl.binary() is None:
        print(json.dumps({"skipped": "no corpus directory given" if args.directory is None else kubectl.MISSING}))
        return 0
    files = sorted(p for p in args.directory.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    expected: dict[Path, list[Any]] = {}
    refused: list[Path] = []
    other = 0
    seconds = 0.0
    size = 0
    for path in files:
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            other += 1
            continue
        size += len(text)
        start = time.perf_counter()
        stream = k8syaml.read_stream(text)
        seconds += time.perf_counter() - start
        if any(d.error for d in stream.documents):
            refused.append(path)
            continue
        values = [d.value for d in stream.documents if d.value is not None]
        if values and all(comparable(v) for v in values):
            expected[path] = values
        else:
            other += 1
    disagreements = []
    batch_paths = list(expected)
    for i in range(0, len(batch_paths), args.batch):
        batch = batch_paths[i:i + args.batch]
        objects, stderr = kubectl_objects(batch)
        if stderr:
            disagreements.append({"batch": i, "kubectl": stderr[:500]})
            continue
        at = 0
        for path in batch:
            ours = expected[path]
            theirs = objects[at:at + len(ours)]
            at += len(ours)
            if json.dumps(ours, sort_keys=True) != json.dumps(theirs, sort_keys=True):
                disagreements.append({"file": str(path), "why": "different objects"})
    refused_by_kubectl = 0
    for path in refused:
        objects, stderr = kubectl_objects([path])
        if stderr:
            refused_by_kubectl += 1
        else:
            disagreements.append({"file": str(path), "why": "we refuse it, kubectl reads it"})
    print(json.dumps({
        "files": len(files), "compared": len(expected), "refused_by_us": len(refused),
        "refused_by_kubectl_too": refused_by_kubectl, "not_comparable": other,
        "our_reading_seconds": round(seconds, 2), "megabytes": round(size / 1e6, 1),
        "disagreements": disagreements}, indent=2))
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())

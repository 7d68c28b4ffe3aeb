"""Packing speed and memory, as JSON, for the 900-manifest bundle (about 3 MiB, 200 CRDs; tests/support/big_bundle).

(a) pack: phasing + cleaning + packing into Secrets, from manifests in memory (what ``cosctl pack`` and
    ``cosctl publish`` do after reading files): best-of-N wall time, and the ratio to a baseline measured in the
    same run, a bare ``json.dumps(sort_keys=True)`` of every manifest (the serialization packing cannot avoid);
(b) peak memory of (a): Python allocations traced by ``tracemalloc`` (timed separately, tracing slows code);
(c) the whole ``cosctl pack`` command from nine YAML files to YAML on stdout: wall time and the process's peak
    RSS (it includes the interpreter and imported libraries);
(d) diff: what ``cosctl diff DIR --owner`` computes once the Secrets are read, the packed revision (its refs
    resolved from the Secrets) against the bundle with every tenth object changed: best-of-N wall time.

Targets (2-core machine): pack under 1 s, peak memory under 200 MiB.
Run: python bench/bench_pack.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml

from common.bundle.contents import documents_reader, resolve_phases
from common.bundle.diff import diff
from common.bundle.packing import pack, to_json
from common.bundle.phasing import sort_into_phases
from tests.support import big_bundle

TARGET_SECONDS = 1.0
TARGET_MIB = 200.0


def _pack(manifests: list[dict]) -> object:
    return pack(sort_into_phases(manifests), name="big-1", owner="big")


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` timed calls of ``fn`` (GC left on, as in real use); other benches use it too."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    manifests = big_bundle.manifests()
    input_bytes = sum(len(to_json(m)) for m in manifests)
    packed = _pack(manifests)
    baseline_s = best_of(lambda: [to_json(m) for m in manifests], args.repeat)
    pack_s = best_of(lambda: _pack(manifests), args.repeat)

    tracemalloc.start()
    _pack(manifests)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    with tempfile.TemporaryDirectory() as tmp:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        for f in range(9):
            Path(tmp, f"part-{f}.yaml").write_text(yaml.dump_all(manifests[f * 100:(f + 1) * 100], Dumper=dumper))
        script = ("import resource, sys; from common.cosctl import main; code = main(sys.argv[1:]); "
                  "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", script, "pack", tmp, "--owner", "big"], cwd=ROOT,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        cli_s = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        cli_rss_mib = int(proc.stderr.strip().splitlines()[-1]) / 1024  # ru_maxrss is KiB on Linux

    changed = [dict(m, metadata={**m["metadata"], "annotations": {"bench/changed": "yes"}}) if i % 10 == 0 else m
               for i, m in enumerate(manifests)]

    def _diff() -> object:
        live = resolve_phases(packed.cos, documents_reader(packed.documents()))
        return diff(live, sort_into_phases(changed), a_name="big-1", b_name="changed")

    difference = _diff()
    diff_s = best_of(_diff, args.repeat)

    phases = packed.cos["spec"]["phases"]
    result = {
        "bundle": {"manifests": len(manifests), "json_mib": round(input_bytes / 2**20, 2),
                   "crds": big_bundle.COUNTS["CustomResourceDefinition"], "phases": len(phases),
                   "secrets": len(packed.secrets)},
        "pack_seconds": round(pack_s, 4),
        "baseline_json_dumps_seconds": round(baseline_s, 4),
        "pack_to_baseline_ratio": round(pack_s / baseline_s, 2),
        "pack_peak_traced_mib": round(peak / 2**20, 1),
        "cli_pack_seconds": round(cli_s, 3),
        "cli_pack_peak_rss_mib": round(cli_rss_mib, 1),
        "diff_seconds": round(diff_s, 4),
        "diff_summary": difference.summary(),
        "bench_process_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "targets": {"pack_seconds": TARGET_SECONDS, "peak_mib": TARGET_MIB},
        "meets_targets": pack_s < TARGET_SECONDS and peak / 2**20 < TARGET_MIB and cli_rss_mib < TARGET_MIB,
    }
    print(json.dumps(result, indent=2))
    return 0 if result["meets_targets"] else 1


if __name__ == "__main__":
    sys.exit(main())

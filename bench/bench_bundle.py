"""Rendering and packing a large registry+v1 bundle: speed and memory, as JSON (issue 15's target).

For each bundle (the synthetic one of tests/support/big_registryv1, 150 CRDs and 12 Deployments with webhooks,
and any real bundle directories given with --bundle):

(a) in process, best of N: load the bundle (read and parse every manifest, as kubectl reads YAML), render it
    as OLM v1 does (cert-manager as certificate provider where the bundle has webhooks), sort into phases and
    pack into object-data Secrets; next to it the baseline measured in the same run, only reading and parsing
    the manifests (what any tool must do), and the ratio; and each of the four stages alone (best of N), to
    show where the time goes;
(b) the whole ``cosctl pack BUNDLE -n NS`` command as a child process, YAML on stdout: wall time (best of N)
    and the child's peak RSS (interpreter and libraries included).

Target (2-core machine): (b) under 1 s and 150 MiB for a bundle of 100+ objects.
Run: python bench/bench_bundle.py [--repeat N] [--bundle DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common.bundle.manifests import documents
from common.bundle.packing import pack
from common.bundle.phasing import sort_into_phases
from common.bundle.registryv1.install import InstallOptions, render_bundle
from common.bundle.registryv1.source import load_bundle
from tests.support import big_registryv1

sys.path.insert(0, str(ROOT / "bench"))
from bench_pack import best_of

TARGET_SECONDS = 1.0
TARGET_MIB = 150.0


def _options(path: Path) -> InstallOptions:
    bundle = load_bundle(path)
    webhooks = bool((bundle.csv.get("spec") or {}).get("webhookdefinitions"))
    return InstallOptions(f"{bundle.package_name[:40]}-system", None, "cert-manager" if webhooks else "none")


def _command(path: Path, options: InstallOptions) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one ``cosctl pack`` child process."""
    argv = [sys.executable, "-m", "common.cosctl", "pack", str(path), "-n", options.namespace,
            "--cert-provider", options.cert_provider]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"cosctl pack {path} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return elapsed, usage.ru_maxrss / 1024


def measure(path: Path, repeat: int) -> dict[str, Any]:
    options = _options(path)
    files = sorted(str(p) for p in (path / "manifests").iterdir())
    objects = render_bundle(load_bundle(path), options)

    def whole() -> None:
        rendered = render_bundle(load_bundle(path), options)
        pack(sort_into_phases(rendered), name="big-1", owner="big")

    def baseline() -> None:
        found, problems = documents(files)
        assert found and not problems

    in_process = best_of(whole, repeat)
    floor = best_of(baseline, repeat)
    bundle = load_bundle(path)
    phases = sort_into_phases(objects)
    stages = {
        "load": best_of(lambda: load_bundle(path), repeat),
        "render": best_of(lambda: render_bundle(bundle, options), repeat),
        "phases": best_of(lambda: sort_into_phases(objects), repeat),
        "pack": best_of(lambda: pack(phases, name="big-1", owner="big"), repeat),
    }
    runs = [_command(path, options) for _ in range(repeat)]
    wall = min(r[0] for r in runs)
    rss = max(r[1] for r in runs)
    return {
        "bundle": str(path),
        "manifest_files": len(files),
        "manifest_bytes": sum(os.path.getsize(f) for f in files),
        "rendered_objects": len(objects),
        "cert_provider": options.cert_provider,
        "load_render_pack_seconds": round(in_process, 4),
        "stage_seconds": {stage: round(seconds, 4) for stage, seconds in stages.items()},
        "baseline_read_manifests_seconds": round(floor, 4),
        "ratio_to_baseline": round(in_process / floor, 2) if floor else None,
        "cosctl_pack_command_seconds": round(wall, 3),
        "cosctl_pack_peak_rss_mib": round(rss, 1),
        "within_target": wall < TARGET_SECONDS and rss < TARGET_MIB,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bundle", action="append", default=[], metavar="DIR",
                        help="also measure this bundle directory (repeatable)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bundles = [big_registryv1.write(Path(tmp) / "big-operator"), *(Path(b) for b in args.bundle)]
        results = [measure(b, args.repeat) for b in bundles]
    print(json.dumps({"target": {"seconds": TARGET_SECONDS, "peak_rss_mib": TARGET_MIB}, "bundles": results},
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

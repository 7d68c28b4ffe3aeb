"""``cosctl pack``: render a bundle as a ClusterObjectSet and its object-data Secrets, for GitOps.

Nothing touches a cluster: the output is YAML on stdout (Secrets first, then the COS) or one file per object
under ``-o DIR``. The same input always renders the same bytes, so committing the output gives clean diffs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from common.bundle.packing import PackingError, pack, to_json
from common.contract.objects import Obj
from common.cosctl._inputs import add_input_arguments, bundle_input, load_inputs, system_namespace
from common.cosctl._producer import EXIT_OK, add_bundle_arguments, load_probes, run, to_yaml

INLINE_WARNING_BYTES = 1024 * 1024  # the webhook warns from here too


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "pack", help="render manifests as a ClusterObjectSet and its Secrets (YAML)",
        description="Sort manifests into phases and render a ClusterObjectSet with its objects packed into "
                    "content-addressed immutable Secrets (or inline with --inline). Same input, same output. "
                    "Apply the output with kubectl apply --server-side (or kubectl create): a client-side apply "
                    "copies each object into an annotation the API server limits to 256 KiB, so a Secret of up "
                    "to 900 KiB fails there.")
    add_bundle_arguments(parser)
    add_input_arguments(parser)
    parser.add_argument("--name", default=None,
                        help="ClusterObjectSet name (default <owner>-<revision> when there is an owner)")
    parser.add_argument("--revision", type=int, default=1, metavar="N", help="spec.revision (default 1)")
    parser.add_argument("--owner", default=None, help="owner name: sets the owner-name/owner-kind labels "
                        "(default for a registry+v1 bundle: its package name)")
    parser.add_argument("--inline", action="store_true", help="keep objects inline instead of in Secrets")
    parser.add_argument("-o", "--output-dir", default=None, metavar="DIR",
                        help="write one YAML file per object into DIR instead of stdout")
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    return run("pack", lambda: _pack(args))


def _pack(args: argparse.Namespace) -> int:
    if not args.name and not args.owner and bundle_input(args.paths) is None:
        raise PackingError("--name is required when no --owner is given")
    inputs = load_inputs(args, command="pack")
    owner = args.owner or inputs.default_owner
    name = args.name or f"{owner}-{args.revision}"
    packed = pack(inputs.phases, name=name, revision=args.revision,
                  system_namespace=system_namespace(args, bundle=inputs.bundle is not None),
                  owner=owner, owner_kind=args.owner_kind, inline=args.inline,
                  collision_protection=args.collision_protection,
                  progress_deadline_minutes=args.progress_deadline_minutes, bundle_version=args.bundle_version,
                  progression_probes=load_probes(args.progression_probes), annotations=inputs.annotations)
    documents = packed.documents()
    size = len(to_json(packed.cos))
    if size > INLINE_WARNING_BYTES:
        print(f"cosctl pack: warning: the ClusterObjectSet is {size} bytes as JSON; etcd refuses objects over "
              "1.5 MiB (1572864 bytes): pack without --inline to move objects into Secrets", file=sys.stderr)
    if args.output_dir is None:
        sys.stdout.write(to_yaml(documents))
        return EXIT_OK
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    for doc in documents:
        _write_atomically(out / file_name(doc), to_yaml([doc]))
    print(f"wrote {len(documents)} file(s) to {out}", file=sys.stderr)
    return EXIT_OK


def file_name(doc: Obj) -> str:
    """``secret-<name>.yaml`` / ``clusterobjectset-<name>.yaml``: stable names, so re-packing overwrites."""
    return f"{doc['kind'].lower()}-{doc['metadata']['name']}.yaml"


def _write_atomically(path: Path, text: str) -> None:
    """A reader (or a crash) never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise

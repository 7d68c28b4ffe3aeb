"""``cosctl validate``: the webhook's verdict on manifests, without a cluster.

Authors see the exact rejection ``kubectl apply`` would show while they write manifests, and CI pipelines
check bundles before they reach a cluster. Each document goes through the same mutation and validation as
the admission webhook (``common.contract.admission.review``), and a denial prints as ``kubectl apply`` prints
it (``common.contract.kubectl``), but with every violation at once: on a cluster the API server stops at the
first failing stage (a structural error hides the CEL rules and the webhook's checks). With ``--old`` a
document whose kind, namespace and name match one in the old file is judged as an UPDATE of it.

Exit codes: 0 every document is allowed, 1 at least one is denied, 2 input could not be read (or holds no
manifest at all) or the command line is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from common.bundle.manifests import Source, documents
from common.bundle.registryv1.source import is_bundle
from common.contract import api, kubectl
from common.contract.admission import Config, Decision, Request, review

EXIT_ALLOWED, EXIT_DENIED, EXIT_UNREADABLE = 0, 1, 2
SKIP_REASON = f"skipped: cosctl validate checks ClusterObjectSets and Secrets of type {api.SECRET_TYPE}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One document's result, as printed."""

    source: Source
    kind: str
    name: str
    decision: Decision | None  # None: skipped (not a kind the webhook judges)
    update: bool = False

    def as_json(self) -> dict[str, Any]:
        d = self.decision
        out: dict[str, Any] = {
            "file": self.source.path,
            "index": self.source.index,
            "kind": self.kind,
            "name": self.name,
            "allowed": None if d is None else d.allowed,
            "code": None if d is None or d.allowed else (d.status or {}).get("code"),
            "message": SKIP_REASON if d is None else d.message,
            "causes": [] if d is None else list(((d.status or {}).get("details") or {}).get("causes", [])),
            "warnings": [] if d is None else list(d.warnings),
            "patch": [] if d is None else list(d.patch),
        }
        if self.source.item is not None:
            out["item"] = self.source.item
        return out

    def as_text(self) -> list[str]:
        head = f"{self.source} {self.kind}/{self.name}"
        d = self.decision
        if d is None:
            return [f"{head}: {SKIP_REASON}"]
        lines = [f"Warning: {w}" for w in d.warnings]
        if d.allowed:
            lines.append(f"{head}: allowed")
        else:
            verb = "patching" if self.update else "creating"
            text = kubectl.error_text(d.status or {}, verb=verb, source=self.source.path)
            lines.extend(f"{head}: {text}".split("\n"))
        return lines


def _identity(doc: dict[str, Any]) -> tuple[str, str, str]:
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    return str(doc.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _judged_kind(doc: dict[str, Any]) -> str | None:
    """The admission kind of a document the webhook would see, or None for anything else."""
    if doc.get("kind") == api.KIND:
        return api.KIND
    if doc.get("kind") == "Secret" and doc.get("apiVersion") == "v1" and doc.get("type") == api.SECRET_TYPE:
        return "Secret"
    return None


def judge(docs: list[tuple[Source, Any]], old_docs: list[tuple[Source, Any]], config: Config,
          problems: list[str]) -> list[Verdict]:
    """A verdict per document; documents that are not Kubernetes objects become problems."""
    olds = {_identity(doc): doc for _, doc in old_docs if isinstance(doc, dict)}
    verdicts = []
    for source, doc in docs:
        if not isinstance(doc, dict):
            problems.append(f"{source}: not a Kubernetes object (a YAML/JSON {type(doc).__name__})")
            continue
        kind, namespace, name = _identity(doc)
        if kind == api.KIND and doc.get("apiVersion") != api.API_VERSION:
            # kubectl refuses to send it at all: not a denial, an unusable document
            got = doc.get("apiVersion")
            problems.append(f"{source} {kind}/{name}: apiVersion must be {api.API_VERSION}, got "
                            f"{json.dumps(got) if got else 'none'}")
            continue
        judged = _judged_kind(doc)
        if judged is None:
            verdicts.append(Verdict(source, kind or "<no kind>", name, None))
            continue
        old = olds.get((kind, namespace, name))
        request = Request(kind=judged, operation="UPDATE" if old is not None else "CREATE", object=doc,
                          old_object=old, name=name, namespace=namespace)
        verdicts.append(Verdict(source, kind, name, review(request, config), update=old is not None))
    return verdicts


def run(paths: list[str], *, old: str | None = None, output: str = "text",
        system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE, stdin: TextIO | None = None,
        out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout  # at call time: a default bound at import outlives its stream
    err = err if err is not None else sys.stderr
    bundles = [p for p in [*paths, *([old] if old else [])] if p != "-" and is_bundle(p)]
    if bundles:  # its documents would all be "skipped", and the exit code say "allowed" of nothing judged
        print(f"cosctl validate: {bundles[0]}: a registry+v1 bundle: validate judges ClusterObjectSets and "
              "object-data Secrets, as the webhook does; check a bundle with its configuration by rendering it "
              f"(cosctl render {bundles[0]} -n NS --config FILE), or validate what pack writes from it", file=err)
        return EXIT_UNREADABLE
    warnings: list[str] = []
    docs, problems = documents(paths, stdin=stdin, warnings=warnings)
    old_docs: list[tuple[Source, Any]] = []
    if old is not None:
        old_docs, old_problems = documents([old], stdin=stdin, warnings=warnings)
        problems.extend(old_problems)
    for warning in warnings:
        print(f"cosctl validate: warning: {warning}", file=err)
    verdicts = judge(docs, old_docs, Config(system_namespace=system_namespace), problems)
    for verdict in verdicts:
        if output == "json":
            print(json.dumps(verdict.as_json(), separators=(",", ":"), ensure_ascii=False), file=out)
        else:
            for line in verdict.as_text():
                print(line, file=out)
    for problem in problems:
        print(f"cosctl validate: {problem}", file=err)
    if problems:
        return EXIT_UNREADABLE
    if any(v.decision is not None and not v.decision.allowed for v in verdicts):
        return EXIT_DENIED
    return EXIT_ALLOWED


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check ClusterObjectSets and object-data Secrets as the admission webhook would",
        description=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[-1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="YAML (multi-document) or JSON files, directories, or - for standard input")
    parser.add_argument("--old", metavar="FILE",
                        help="the objects as they are now: matching documents are checked as an UPDATE")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text",
                        help="text (default) or json: one JSON object per document and line")
    parser.add_argument("--system-namespace", default=api.DEFAULT_SYSTEM_NAMESPACE,
                        help="namespace refs without one default to (default: %(default)s)")
    parser.set_defaults(func=lambda args: run(args.paths, old=args.old, output=args.output,
                                              system_namespace=args.system_namespace))

"""Generate the ClusterObjectSet CustomResourceDefinition from the rule table.

``python -m common.contract.crd`` rewrites ``deploy/crd/olm.operatorframework.io_clusterobjectsets.yaml``;
``python -m common.contract.crd --check`` exits 1 when the committed file differs from what the table generates (the
test suite runs the same comparison), so the CRD can never drift from what the webhook enforces.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from common.contract import api, schema

CRD_PATH = Path(__file__).resolve().parents[2] / "deploy" / "crd" / f"{api.GROUP}_{api.PLURAL}.yaml"
HEADER = ("# Generated from common/contract/schema.py by `python -m common.contract.crd`. Do not edit by hand:\n"
          "# change the rule table and regenerate (a test fails when this file is stale).\n")


def crd() -> dict[str, Any]:
    """The CRD object: cluster-scoped, status subresource, printer columns, the table as its schema."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": api.CRD_NAME,
            "labels": {"app.kubernetes.io/name": "cluster-object-set", "app.kubernetes.io/component": "crd"},
        },
        "spec": {
            "group": api.GROUP,
            "names": {
                "kind": api.KIND,
                "listKind": api.LIST_KIND,
                "plural": api.PLURAL,
                "singular": api.SINGULAR,
            },
            "scope": "Cluster",
            "versions": [{
                "name": api.VERSION,
                "served": True,
                "storage": True,
                "additionalPrinterColumns": schema.PRINTER_COLUMNS,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": schema.openapi_schema()},
            }],
        },
    }


def render() -> str:
    return HEADER + yaml.safe_dump(crd(), sort_keys=False, width=120, allow_unicode=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m common.contract.crd", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed CRD is stale")
    parser.add_argument("--output", type=Path, default=CRD_PATH, help="where to write (default: %(default)s)")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run `python -m common.contract.crd`", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

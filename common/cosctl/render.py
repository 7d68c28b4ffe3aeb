"""``cosctl render``: a registry+v1 bundle as the objects OLM v1 would apply, or the schema of its configuration.

What a ClusterExtension does with the same bundle, install namespace, configuration and certificate provider,
object for object, refusals word for word (shared/spec/bundles.md); nothing touches a cluster. ``pack`` and
``publish`` take the same bundle and options to make a revision of it; ``render`` is for reading the result, for
diffs in review and for GitOps repositories that apply plain manifests.

Exit codes (spec §4): 0 rendered, 1 the configuration or the bundle is refused (OLM v1's message on stderr),
2 unusable input (not a bundle, unreadable, bad arguments).
"""

from __future__ import annotations

import argparse
import json
import sys

from common.bundle.registryv1.config import config_schema
from common.bundle.registryv1.install import CERT_PROVIDERS, InstallOptions, render_bundle
from common.bundle.registryv1.render import NO_PROVIDER
from common.bundle.registryv1.source import load_bundle
from common.bundle.registryv1.typed import decode
from common.cosctl._inputs import load_config
from common.cosctl._producer import EXIT_OK, EXIT_USAGE, reporter, run, to_yaml

EXAMPLE = """\
examples:
  cosctl render ./argocd-operator.v0.6.0 --namespace argocd-system > argocd.yaml
  cosctl render ./argocd-operator.v0.6.0 --config-schema           # what --config may hold
  cosctl render ./bundle.tar -n ops --config config.yaml --cert-provider cert-manager
exit codes: 0 rendered, 1 refused (OLM v1's message), 2 unusable input"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "render", help="render a registry+v1 bundle as OLM v1 does (YAML), or print its configuration schema",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        description="Render an OperatorHub registry+v1 bundle (a directory, an OCI image layout directory or "
                    "tar of a bundle image, or the bundle image pulled from its registry: docker://REF) into the "
                    "objects OLM v1 applies for the install namespace, configuration and certificate provider "
                    "given, as multi-document YAML in OLM v1's order.")
    parser.add_argument("bundle", metavar="BUNDLE", help="bundle directory, OCI image layout (directory or tar), or "
                        "docker://REGISTRY/REPO[:TAG][@DIGEST] to pull")
    parser.add_argument("-n", "--namespace", default=None, metavar="NS",
                        help="install namespace (OLM v1's ClusterExtension spec.namespace); required to render")
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="configuration (watchNamespace, deploymentConfig) as YAML or JSON")
    parser.add_argument("--cert-provider", default=NO_PROVIDER, choices=CERT_PROVIDERS,
                        help=f"certificates for the bundle's webhooks (default {NO_PROVIDER})")
    parser.add_argument("--config-schema", action="store_true",
                        help="print the JSON Schema the configuration must satisfy, and render nothing")
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    return run("render", lambda: _render(args))


def _render(args: argparse.Namespace) -> int:
    bundle = load_bundle(args.bundle, reporter("render"))
    if args.config_schema:
        # OLM v1 derives the schema from the bundle it decoded: a CSV it cannot decode has no schema to print
        # (without this, a CSV with `installModes: x` printed a schema that asks for nothing)
        decode(bundle)
        json.dump(config_schema(bundle), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    if not args.namespace:
        print("cosctl render: -n/--namespace NS is required: the namespace to install the bundle in",
              file=sys.stderr)
        return EXIT_USAGE
    options = InstallOptions(args.namespace, load_config(args.config, "render") if args.config else None,
                             args.cert_provider)
    sys.stdout.write(to_yaml(render_bundle(bundle, options)))
    return EXIT_OK


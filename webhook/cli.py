"""``cos-webhook``: serve the admission webhook over TLS, or manage its certificates (``cos-webhook certs``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common.contract import api
from webhook.argtypes import positive_int, positive_seconds
from webhook.review import DEFAULT_MAX_BODY_BYTES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cos-webhook",
        description="Validating and mutating admission webhook for ClusterObjectSets and object-data Secrets. "
                    "Serves POST /validate/clusterobjectsets, /mutate/clusterobjectsets, /validate/secrets, "
                    "/mutate/secrets and GET /healthz, /readyz, /metrics over HTTPS. "
                    "`cos-webhook certs --help` manages the serving certificate in a cluster.",
    )
    parser.add_argument("--cert-file", metavar="FILE",
                        help="PEM serving certificate (chain); reloaded when the file changes")
    parser.add_argument("--key-file", metavar="FILE", help="PEM private key of --cert-file")
    parser.add_argument("--self-signed", action="store_true",
                        help="generate a CA and a serving certificate for localhost into a temporary directory "
                             "(printed at start) instead of --cert-file/--key-file; for local use")
    parser.add_argument("--bind", default="0.0.0.0:9443", metavar="HOST:PORT",
                        help="address to listen on (default: %(default)s)")
    parser.add_argument("--workers", type=positive_int, default=2, metavar="N",
                        help="worker processes (default: %(default)s)")
    # Each keep-alive connection the API server opens belongs to one worker, and only that worker's threads
    # can answer it: a worker needs as many threads as concurrent reviews may land on it, or a small review
    # queues behind a large one being judged (docs/admin.md, "Sizing the webhook").
    parser.add_argument("--threads", type=positive_int, default=8, metavar="N",
                        help="threads per worker, for concurrent keep-alive connections (default: %(default)s)")
    parser.add_argument("--system-namespace", default=api.DEFAULT_SYSTEM_NAMESPACE, metavar="NS",
                        help="namespace the mutating webhook sets on refs without one (default: %(default)s)")
    parser.add_argument("--max-body-bytes", type=positive_int, default=DEFAULT_MAX_BODY_BYTES, metavar="N",
                        help="larger request bodies get a 400 (default: %(default)s)")
    parser.add_argument("--body-timeout", type=positive_seconds, default=10.0, metavar="SECONDS",
                        help="a request body that has not fully arrived after this long gets a 400 "
                             "(default: %(default)s)")
    parser.add_argument("--authorize-service-accounts", action="store_true",
                        help="deny a ClusterObjectSet that names a ServiceAccount (annotations "
                             f"{api.ANNOTATION_SERVICE_ACCOUNT_NAME}/-namespace) unless the requesting user may "
                             "create tokens for it or impersonate it (SubjectAccessReviews to the API server; "
                             "needs a token and create on subjectaccessreviews)")
    parser.add_argument("--kubeconfig", default=None, metavar="FILE",
                        help="API server for --authorize-service-accounts (default: the pod's ServiceAccount)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    # The bench's baseline: the same server answering every review "allowed" without judging it.
    parser.add_argument("--noop-handler", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else list(argv)
    if args_in[:1] == ["certs"]:
        from webhook import certs  # in-cluster certificate management; imported only when asked for

        return int(certs.main(args_in[1:]))
    parser = build_parser()
    args = parser.parse_args(args_in)
    from webhook import server

    cleanup: list[Path] = []
    if args.self_signed:
        if args.cert_file or args.key_file:
            parser.error("--self-signed cannot be combined with --cert-file/--key-file")
        try:
            cert_file, key_file, ca_file = server.self_signed(args.bind, cleanup)
        except server.ServerError as exc:
            parser.error(str(exc))
        print(f"cos-webhook: self-signed CA certificate: {ca_file}", flush=True)
    elif not (args.cert_file and args.key_file):
        parser.error("--cert-file and --key-file are required (or --self-signed for local use)")
    else:
        cert_file, key_file = args.cert_file, args.key_file
    options = server.Options(cert_file=cert_file, key_file=key_file, bind=args.bind, workers=args.workers,
                             threads=args.threads, system_namespace=args.system_namespace,
                             max_body_bytes=args.max_body_bytes, body_timeout=args.body_timeout,
                             log_level=args.log_level,
                             noop=args.noop_handler, authorize_service_accounts=args.authorize_service_accounts,
                             kubeconfig=args.kubeconfig, cleanup=cleanup)
    return server.run(options)


if __name__ == "__main__":
    sys.exit(main())

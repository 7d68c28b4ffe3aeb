"""Shared helpers of the producer tests."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
from typing import Any

SUBCOMMANDS = ("render", "pack", "diff", "publish", "rollback", "status", "history", "owners", "gc", "upgrade",
               "search", "resolve", "rbac", "uninstall")
RBAC = "rbac.authorization.k8s.io/v1"


def grant(cluster: Any, subject: dict[str, str], rules: list[dict[str, Any]], *, name: str = "granted",
          namespace: str | None = None) -> None:
    """Bind ``subject`` to a role of ``rules``: a ClusterRole and ClusterRoleBinding, or a Role and RoleBinding in
    ``namespace``, as an admin would write them (what the permission preflight reads)."""
    role, binding = ("Role", "RoleBinding") if namespace else ("ClusterRole", "ClusterRoleBinding")
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    cluster.put({"apiVersion": RBAC, "kind": role, "metadata": dict(meta), "rules": rules})
    cluster.put({"apiVersion": RBAC, "kind": binding, "metadata": dict(meta),
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": name},
                 "subjects": [subject]})


def allow_service_accounts(cluster: Any, *accounts: str) -> None:
    """``accounts`` (``NS/NAME``) exist and every ServiceAccount may do everything (cluster-admin for the group
    ``system:serviceaccounts``): for tests of what a revision naming a ServiceAccount carries, not of what it may
    do."""
    for account in accounts:
        namespace, name = account.split("/")
        cluster.put({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}})
    grant(cluster, {"kind": "Group", "name": "system:serviceaccounts"},
          [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}],
          name="service-accounts-admin")


def cosctl(*argv: str, cluster: Any = None, **defaults: Any) -> tuple[int, str, str]:
    """Run a producer subcommand in-process against ``cluster``; returns (exit code, stdout, stderr)."""
    parser = argparse.ArgumentParser(prog="cosctl")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"common.cosctl.{name}").register(sub)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        args = parser.parse_args(list(argv))
        if cluster is not None:
            args.connect = lambda _args: cluster
        for key, value in defaults.items():
            setattr(args, key, value)
        code = args.func(args)
    return code, out.getvalue(), err.getvalue()

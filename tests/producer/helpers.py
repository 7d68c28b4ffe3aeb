"""Shared helpers of the producer tests."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
from typing import Any

SUBCOMMANDS = ("render", "pack", "diff", "publish", "rollback", "status", "history", "gc", "resolve")


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

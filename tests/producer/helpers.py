"""Shared helpers of the producer tests."""

from __future__ import annotations

import argparse
import contextlib
import io

import importlib

SUBCOMMANDS = ("pack",)


def cosctl(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    """Run a producer subcommand in-process; returns (exit code, stdout, stderr)."""
    parser = argparse.ArgumentParser(prog="cosctl")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"common.cli.{name}").register(sub)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        args = parser.parse_args(list(argv))
        code = args.func(args)
    return code, out.getvalue(), err.getvalue()

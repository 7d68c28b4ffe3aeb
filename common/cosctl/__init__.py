"""``cosctl``: the command line for manifest authors and release pipelines.

Each subcommand lives in its own module exposing ``register(subparsers)``, which adds its parser and sets
``func`` to a callable taking the parsed arguments and returning the exit code.

The top layer of ``common``: may import :mod:`common.contract`, :mod:`common.cluster` and
:mod:`common.bundle`; never ``webhook``, ``reconciler`` or a test double.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Module names under common.cosctl, in the order `cosctl --help` lists them.
COMMANDS = ("validate", "pack", "publish", "status", "history", "gc")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cosctl",
        description="Validate, pack, publish and inspect ClusterObjectSets.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"common.cosctl.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Manifests may hold text a terminal cannot encode (a lone surrogate from a YAML escape): print it
    # escaped rather than die half-way through a report.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("cosctl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, not a traceback that may quote input
        if os.environ.get("COSCTL_DEBUG"):
            raise
        print(f"cosctl: internal error ({type(exc).__name__}); please report it (COSCTL_DEBUG=1 shows the "
              "traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

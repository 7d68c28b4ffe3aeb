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

# Module names under common.cosctl, in the order `cosctl --help` lists them (each module registers its command:
# `owners` registers `list`, a name no module may take, since it would shadow the builtin in this package).
COMMANDS = ("validate", "render", "pack", "diff", "publish", "rollback", "status", "history", "owners", "gc",
            "upgrade", "search", "resolve", "rbac", "uninstall")


# kubectl's global flags that name the cluster or namespace: accepted before the subcommand as well (kubectl
# passes a plugin everything after its name, so ``kubectl cos --context prod status x`` arrives like that).
GLOBAL_FLAGS = ("--kubeconfig", "--context", "-n", "--namespace")


def hoist_global_flags(argv: list[str]) -> list[str]:
    """Move kubectl-style global flags given before the subcommand to just after it, where the subcommand's
    parser reads them (``-n``/``--namespace`` mean ``--system-namespace``)."""
    moved: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in GLOBAL_FLAGS:
            takes_next = "=" not in arg and i + 1 < len(argv)
            moved.extend(argv[i:i + 2] if takes_next else [arg])
            i += 2 if takes_next else 1
        elif arg.startswith("-n") and len(arg) > 2 and not arg.startswith("--"):
            moved.append(arg)  # -nNAMESPACE
            i += 1
        else:
            break
    if not moved or i >= len(argv):
        return argv
    return [*argv[i:i + 1], *moved, *argv[i + 1:]]


def build_parser(prog: str = "cosctl") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Validate, render, pack, diff, publish, roll back and inspect ClusterObjectSets. Also installed as "
                    "the kubectl plugin kubectl-cos: `kubectl cos status shop-3 --context prod`.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"common.cosctl.{name}").register(sub)
    return parser


def command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``command`` (``parser`` itself if it has none by that name)."""
    for action in parser._actions:  # argparse keeps its subparsers only there
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            found: argparse.ArgumentParser = action.choices[command]
            return found
    return parser


def kubectl_main(argv: list[str] | None = None) -> int:
    """The kubectl plugin ``kubectl-cos``: the same commands, help spelled ``kubectl cos``."""
    return main(argv, prog="kubectl cos")


def main(argv: list[str] | None = None, *, prog: str = "cosctl") -> int:
    # Manifests may hold text a terminal cannot encode (a lone surrogate from a YAML escape): print it
    # escaped rather than die half-way through a report.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser(prog)
    args, extra = parser.parse_known_args(hoist_global_flags(list(sys.argv[1:] if argv is None else argv)))
    if extra:  # argparse reports these with the top-level usage; the subcommand's says what it does take
        command_parser(parser, args.command).error("unrecognized arguments: " + " ".join(extra))
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

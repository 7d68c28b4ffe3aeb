"""How this project's programs name themselves in the User-Agent of their requests.

Why: an API server's audit log and request metrics, and a registry's logs, name each client by it. The generated
Kubernetes client's default (``OpenAPI-Generator/<version>/python``) is the same for every program written with it;
``cos-reconciler/0.1.0`` or ``cosctl/0.1.0`` tells the reconciler's writes from an admin's or a CronJob's.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version


@cache
def user_agent(program: str) -> str:
    """``PROGRAM/<version>`` (the installed distribution's version; ``dev`` when run from a source tree that was
    never installed)."""
    try:
        return f"{program}/{version('cluster-object-set')}"
    except PackageNotFoundError:
        return f"{program}/dev"

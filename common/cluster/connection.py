"""Where the API server is and how a client talks to it: configuration loaded in one order, options given once.

Every program finds its API server the same way (:func:`load_configuration`): an explicit kubeconfig (or context)
when one is named, else the pod's ServiceAccount when running in a pod, else ``$KUBECONFIG`` or
``~/.kube/config``. And every client's settings are :class:`ClientOptions`, given when the client is made
(:func:`connect`): retries and their backoff, timeouts, the connection pool's size, 429 jitter, the User-Agent and
the request observer. Nothing is changed on a client afterwards; a component that needs other settings makes a
client of its own from the same configuration (``KubeCluster.with_options``).

The ``kubernetes`` client is imported only here and in :mod:`.kube`, and only when a program really connects.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urllib3

from common.cluster.backoff import Backoff

# Called once per HTTP request with (verb, HTTP code or 0 for a connection failure): feeds the
# "API requests by verb and code" metric without this package knowing about Prometheus.
RequestObserver = Callable[[str, int], None]

# urllib3 would otherwise retry 429/503 answers and connection errors on its own, out of sight of our policy,
# metrics and tests: every retry happens in KubeCluster.request.
NO_URLLIB3_RETRIES = urllib3.Retry(total=0, redirect=0, raise_on_status=False, respect_retry_after_header=False)


@dataclass(frozen=True)
class ClientOptions:
    """How a client talks to the API server; fixed when the client is made."""

    max_retries: int = 5                  # of a request answered 429/5xx or not answered at all
    backoff: Backoff = Backoff(0.2, 10.0, jitter=0.5)   # between those retries (a Retry-After overrides it)
    retry_after_cap: float = 60.0         # the longest Retry-After honoured
    # A 429 waits Retry-After plus up to this fraction of it at random: many threads throttled together then do
    # not all retry in the same instant (the reconciler sets it: it writes concurrently).
    retry_jitter: float = 0.0
    request_timeout: float = 30.0         # seconds, per request (a watch has its own)
    discovery_refresh_interval: float = 5.0   # a kind discovery missed is looked up again after this long
    pool_size: int | None = None          # connections kept per host (None: the kubernetes client's default)
    # What the API server's audit log names the client by (None: the generated client's default,
    # "OpenAPI-Generator/<version>/python", the same for everyone).
    user_agent: str | None = None
    observer: RequestObserver | None = None
    sleep: Callable[[float], None] = time.sleep   # how retries wait (tests record instead)


class ConfigError(Exception):
    """No usable Kubernetes client configuration: the kubeconfig is missing or broken, or no pod's ServiceAccount
    was found. ``str()`` says why, in the ``kubernetes`` client's words."""


def load_configuration(kubeconfig: str | None = None, *, context: str | None = None) -> Any:
    """The ``kubernetes.client.Configuration`` to connect with, found in the one order: ``kubeconfig`` or
    ``context`` when given, else in-cluster, else ``$KUBECONFIG`` or ``~/.kube/config``."""
    from kubernetes.config import ConfigException

    if kubeconfig or context:
        return kubeconfig_configuration(kubeconfig, context=context)
    try:
        return in_cluster_configuration(strict=True)
    except ConfigException:
        return kubeconfig_configuration(None)


def kubeconfig_configuration(path: str | None = None, *, context: str | None = None) -> Any:
    """The configuration a kubeconfig file names (``None``: ``$KUBECONFIG`` or ``~/.kube/config``)."""
    from kubernetes import client, config

    cfg = client.Configuration()
    # The client reads $KUBECONFIG once, at import; read it now so a caller's environment counts.
    given = path
    path = path or os.environ.get("KUBECONFIG") or None
    # The client's words name no file ("Invalid kube-config file. No configuration found."): say which was read.
    where = f"{path} (from $KUBECONFIG)" if path and not given else path or "~/.kube/config (the default)"
    files = [f for f in (path.split(os.pathsep) if path else ["~/.kube/config"]) if f]
    if not any(os.path.exists(os.path.expanduser(f)) for f in files):
        raise ConfigError(f"kubeconfig {where}: " + ("no such file" if len(files) <= 1 else
                                                    "none of these files exists"))
    try:
        config.load_kube_config(config_file=path, context=context, client_configuration=cfg, persist_config=False)
    except (config.ConfigException, OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"kubeconfig {where}: {exc}") from exc
    return cfg


def in_cluster_configuration(*, strict: bool = False) -> Any:
    """The pod's ServiceAccount configuration. ``strict``: let ``kubernetes.config.ConfigException`` through
    (outside a pod), so a caller can fall back; otherwise every failure is a :class:`ConfigError`."""
    from kubernetes import client, config

    cfg = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=cfg)
    except config.ConfigException as exc:
        if strict:
            raise
        raise ConfigError(str(exc)) from exc
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(str(exc)) from exc
    return cfg


def connect(configuration: Any, options: ClientOptions) -> Any:
    """A ``kubernetes.client.ApiClient`` over ``configuration`` (which it takes over) made for ``options``: no
    retries of urllib3's own, the pool size and User-Agent asked for."""
    from kubernetes import client

    configuration.retries = NO_URLLIB3_RETRIES
    if options.pool_size is not None:
        configuration.connection_pool_maxsize = options.pool_size
    api_client = client.ApiClient(configuration)
    if options.user_agent:
        api_client.user_agent = options.user_agent
    return api_client


__all__ = ["NO_URLLIB3_RETRIES", "ClientOptions", "ConfigError", "RequestObserver", "connect",
           "in_cluster_configuration", "kubeconfig_configuration", "load_configuration"]

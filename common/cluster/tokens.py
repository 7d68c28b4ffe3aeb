"""ServiceAccount tokens from the TokenRequest API, cached per ServiceAccount and renewed before they expire.

The reconciler writes a ClusterObjectSet's objects with a token of the ServiceAccount the COS names
(:mod:`common.contract.serviceaccount`). Asking the API server for a token on every write would double the
requests of a rollout and fill the audit log with TokenRequests, so each ServiceAccount's token is kept and
handed out until ``renew_after`` (80%) of the lifetime the server granted has passed: at most one
TokenRequest per ServiceAccount per token lifetime, however many workers write at once (one request is in
flight per ServiceAccount; the others wait for its answer). A token is asked for only when a write needs it,
so a steady state that writes nothing asks for none.

Lifetimes are counted on this process's monotonic clock from the moment the answer arrived, using the
lifetime the server granted (``spec.expirationSeconds`` of its answer), never its ``expirationTimestamp``:
a clock that differs from the server's by hours must not make every token look expired (a request per
write) or valid forever (401s).

Tokens are credentials: no message, log line or ``repr`` here ever contains one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from common.cluster.interface import ApiError, NotFound
from common.cluster.kube import TokenGrant
from common.contract.gotext import go_quote
from common.contract.serviceaccount import ServiceAccountRef

DEFAULT_EXPIRATION_SECONDS = 3600
"""What the reconciler asks for: one hour, a projected ServiceAccount token's usual lifetime (the API server
refuses less than 10 minutes and may grant less than asked)."""

RENEW_AFTER = 0.8
"""A token is replaced once this fraction of its granted lifetime has passed (kubelet renews projected tokens
at 80% too), so a write never goes out with a token about to expire."""

# issue(namespace, name, expiration_seconds) -> TokenGrant: KubeCluster.request_token, or a test's double
Issuer = Callable[[str, str, int], TokenGrant]


class ServiceAccountTokenError(ApiError):
    """No token could be issued for a ServiceAccount. ``str()`` is what the COS's ``Retrying`` condition shows:
    for a ServiceAccount that does not exist, OLM v1's own words; otherwise the API server's, naming the
    ServiceAccount. ``status`` is the Status the API server answered the TokenRequest with.

    Deliberately not a ``NotFound``: code that reads a 404 from a write as "the object is gone" (teardown)
    must never read "no token" that way."""

    reason = "ServiceAccountTokenUnavailable"

    def __init__(self, ref: ServiceAccountRef, cause: ApiError) -> None:
        self.ref = ref
        self.missing = isinstance(cause, NotFound)
        if self.missing:
            # OLM v1's operator-controller words it this way (its ServiceAccountNotFoundError)
            message = (f"service account {go_quote(ref.name)} not found in namespace {go_quote(ref.namespace)}: "
                       "unable to authenticate with the Kubernetes cluster.")
        else:
            message = f"creating a token for ServiceAccount {ref}: {cause.message}"
        super().__init__(message, status=cause.status, retry_after=cause.retry_after)
        self.__cause__ = cause


@dataclass
class _Entry:
    token: str
    renew_at: float
    expires_at: float


class ServiceAccountTokens:
    """Tokens per ServiceAccount, renewed at ``renew_after`` of their lifetime. Thread-safe."""

    def __init__(self, issue: Issuer, *, expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
                 renew_after: float = RENEW_AFTER, clock: Callable[[], float] = time.monotonic) -> None:
        if expiration_seconds < 600:
            raise ValueError(f"token expiration must be at least 600 seconds (the API server's minimum), "
                             f"got {expiration_seconds}")
        if not 0 < renew_after < 1:
            raise ValueError(f"renew_after must be between 0 and 1, got {renew_after}")
        self._issue = issue
        self.expiration_seconds = expiration_seconds
        self.renew_after = renew_after
        self._clock = clock
        self._entries: dict[ServiceAccountRef, _Entry] = {}
        self._locks: dict[ServiceAccountRef, threading.Lock] = {}
        self._lock = threading.Lock()
        self.issued: dict[ServiceAccountRef, int] = {}   # TokenRequests answered with a token, per account

    def token(self, ref: ServiceAccountRef) -> str:
        """A token of ``ref`` valid for a while yet: the cached one, or a new one from the TokenRequest API
        (raises :class:`ServiceAccountTokenError` when it cannot be issued)."""
        entry = self._current(ref)
        if entry is not None:
            return entry.token
        with self._lock_of(ref):   # one TokenRequest in flight per ServiceAccount
            entry = self._current(ref)   # another thread may have renewed it meanwhile
            if entry is not None:
                return entry.token
            try:
                grant = self._issue(ref.namespace, ref.name, self.expiration_seconds)
            except ServiceAccountTokenError:
                raise
            except ApiError as exc:
                raise ServiceAccountTokenError(ref, exc) from exc
            now = self._clock()
            entry = _Entry(grant.token, now + grant.lifetime * self.renew_after, now + grant.lifetime)
            with self._lock:
                self._entries[ref] = entry
                self.issued[ref] = self.issued.get(ref, 0) + 1
                for other in [r for r, e in self._entries.items() if e.expires_at <= now]:
                    del self._entries[other]   # a ServiceAccount no longer written as
            return entry.token

    def rejected(self, ref: ServiceAccountRef, token: str) -> None:
        """The server refused ``token`` (401: revoked, its ServiceAccount made again): forget it, so the next
        write asks for a new one. A token already replaced meanwhile is left alone."""
        with self._lock:
            entry = self._entries.get(ref)
            if entry is not None and entry.token == token:
                del self._entries[ref]

    def source(self, ref: ServiceAccountRef) -> TokenSource:
        """The :class:`~common.cluster.kube.BearerSource` of one ServiceAccount, for ``KubeCluster.with_bearer``."""
        return TokenSource(self, ref)

    def _current(self, ref: ServiceAccountRef) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(ref)
        return entry if entry is not None and self._clock() < entry.renew_at else None

    def _lock_of(self, ref: ServiceAccountRef) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(ref, threading.Lock())


@dataclass(frozen=True)
class TokenSource:
    """One ServiceAccount's tokens, as a :class:`~common.cluster.kube.BearerSource`."""

    tokens: ServiceAccountTokens
    ref: ServiceAccountRef

    def token(self) -> str:
        return self.tokens.token(self.ref)

    def rejected(self, token: str) -> None:
        self.tokens.rejected(self.ref, token)


__all__ = ["DEFAULT_EXPIRATION_SECONDS", "RENEW_AFTER", "ServiceAccountTokenError", "ServiceAccountTokens",
           "TokenSource"]

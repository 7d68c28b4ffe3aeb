"""The webhook's one API call: SubjectAccessReviews for the ServiceAccount check (``--authorize-service-accounts``).

``common.contract.admission`` decides *which* reviews to ask and what a refusal says; this module only sends
them to the API server and reads ``status.allowed``. It is built in each gunicorn worker on its first use
(after the fork: a connection pool must not be shared across processes), from ``--kubeconfig`` or, in a pod,
the webhook's own ServiceAccount, which needs nothing but ``create`` on ``subjectaccessreviews``
(``deploy/components/service-account-admission``).

The API server gives a webhook at most ``timeoutSeconds`` (10 s in ``deploy/``) and, with
``failurePolicy: Fail``, refuses the write when that passes, so requests here get a short timeout and one
retry; when no answer comes, the check fails closed with a message that says so (never a 500, never content
of the reviewed object).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from common.cluster.interface import ApiError
from common.cluster.kube import KubeCluster
from common.contract.admission import AccessCheckFailed
from common.contract.objects import Obj

log = logging.getLogger("cos_webhook.access")

REQUEST_TIMEOUT = 3.0   # seconds per attempt; two attempts and two reviews stay under the API server's 10 s


class SubjectAccessReviewer:
    """``admission.AccessReview`` over a real API server: ``reviewer(sar) -> allowed``. Thread-safe."""

    def __init__(self, connect: Callable[[], KubeCluster]) -> None:
        self._connect = connect
        self._kube: KubeCluster | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None) -> SubjectAccessReviewer:
        """Connect (lazily) with ``kubeconfig``, or, without one, with the pod's ServiceAccount."""
        def connect() -> KubeCluster:
            if kubeconfig:
                return KubeCluster.from_kubeconfig(kubeconfig, max_retries=1, request_timeout=REQUEST_TIMEOUT,
                                                   user_agent="cos-webhook")
            return KubeCluster.in_cluster(max_retries=1, request_timeout=REQUEST_TIMEOUT, user_agent="cos-webhook")
        return cls(connect)

    def _cluster(self) -> KubeCluster:
        with self._lock:
            if self._kube is None:
                try:
                    self._kube = self._connect()
                except Exception as exc:   # kubernetes.config raises several types for a missing or bad config
                    raise AccessCheckFailed(
                        f"cannot check who may use the ServiceAccount: no API server configuration ({exc})") from None
            return self._kube

    def __call__(self, review: Obj) -> bool:
        try:
            answer = self._cluster().create(review)
        except ApiError as exc:
            log.warning("SubjectAccessReview failed", extra={"fields": {"event": "access_review",
                                                                        "code": exc.code}})
            raise AccessCheckFailed("cannot check who may use the ServiceAccount the ClusterObjectSet names: "
                                    f"SubjectAccessReview failed: {exc.message}") from None
        return (answer.get("status") or {}).get("allowed") is True


__all__ = ["REQUEST_TIMEOUT", "SubjectAccessReviewer"]

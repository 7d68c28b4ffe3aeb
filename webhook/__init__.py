"""``cos-webhook``: the admission webhook's HTTPS adapter and its certificate management.

Owns the AdmissionReview v1 wire format (:mod:`.review`), the Flask app (:mod:`.app`), running it under
gunicorn with TLS that follows rotation (:mod:`.server`, :mod:`.tls`), metrics and JSON logs, and
``cos-webhook certs`` (:mod:`.certs`). It judges nothing itself: every decision is
:mod:`common.contract.admission`'s, the code ``cosctl validate`` runs offline.

May import: :mod:`common.contract`, :mod:`common.cluster` (``certs`` writes Secrets and webhook
configurations). Never ``reconciler`` (an import-linter contract) and never a test double.
"""

"""``cos-webhook``: the admission webhook's HTTPS adapter and its certificate management.

Owns the AdmissionReview v1 wire format (:mod:`.review`), the Flask app (:mod:`.app`), running it under
gunicorn with TLS that follows rotation (:mod:`.server`, :mod:`.tls`), metrics and JSON logs,
``cos-webhook certs`` (:mod:`.certs`), and, with ``--authorize-service-accounts``, the SubjectAccessReviews that
ask whether a requester may use the ServiceAccount a COS names (:mod:`.access`). It judges nothing itself:
every decision is :mod:`common.contract.admission`'s, the code ``cosctl validate`` runs offline.

May import: :mod:`common.contract`, :mod:`common.cluster` (``certs`` writes Secrets and webhook
configurations; ``access`` creates SubjectAccessReviews). Never ``reconciler`` (an import-linter contract) and
never a test double.
"""

"""The ClusterObjectSet API contract: what a COS is, what is valid, what the webhook defaults, what "ready" means.

Owns the API names (:mod:`.api`), the CRD rule table (:mod:`.schema`) and its rendering (:mod:`.crd`),
validation with the API server's field-error formatting (:mod:`.validation`, one module per job: structural
schema, CEL rules, embedded metadata, the COS as a whole, object-data Secrets; with :mod:`.cel`, :mod:`.names`,
:mod:`.fielderrors`), defaults (:mod:`.mutation`), admission decisions as plain data (:mod:`.admission`),
denials as kubectl prints them (:mod:`.kubectl`), object-data decoding and content addresses
(:mod:`.objectdata`), the status conditions: their vocabulary, the table that sets them and what they say
(:mod:`.conditions`), label selectors (:mod:`.labels`), readiness probes (:mod:`.probes`), the ServiceAccount a
COS is written as (:mod:`.serviceaccount`), the object model (:mod:`.objects`), resource quantities as the API
machinery parses and prints them (:mod:`.quantity`), realistic sample COSs (:mod:`.samples`) and how the project's
programs name themselves in a User-Agent (:mod:`.useragent`).

May import: the standard library and pure libraries (jsonschema, cel-expr-python, orjson, PyYAML). Never
cluster access (:mod:`common.cluster`, the ``kubernetes`` client), never the layers above it, never a test
double. Spec: ``shared/spec/api-and-admission.md`` and sections 3 (probes) and 4 (conditions) of
``shared/spec/reconciler.md``.
"""

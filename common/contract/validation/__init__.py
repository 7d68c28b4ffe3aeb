"""Validation of ClusterObjectSets and object-data Secrets: every violation at once, in the API server's words.

One module per job, each reading the rule table in ``common.contract.schema``:

1. :mod:`.structure`: the structural schema (jsonschema, each failure as the API server words it), the fields
   it does not declare, the ``null`` values the server prunes;
2. :mod:`.cel_rules`: every ``x-kubernetes-validations`` rule with Kubernetes semantics, on every part whose type
   is right;
3. :mod:`.metadata`: an embedded manifest's identity and the ObjectMeta it may carry;
4. :mod:`.cos`: the COS as a whole, in the API server's order (``crd_errors``), and what only the webhook adds:
   duplicates across phases, selector operators, removal of phases, sizes, warnings (``validate_cos``);
5. :mod:`.secrets`: object-data Secrets (``validate_secret``).

Functions return ``(errors, warnings)`` or error lists and never raise on bad input: any JSON value is judged.
The names below are what the rest of the project uses.
"""

from common.contract.validation.cel_rules import cel_errors
from common.contract.validation.cos import crd_errors, serialized_size, validate_cos
from common.contract.validation.secrets import validate_secret
from common.contract.validation.structure import prune_nulls, structural_errors, unknown_fields

__all__ = ["cel_errors", "crd_errors", "prune_nulls", "serialized_size", "structural_errors", "unknown_fields",
           "validate_cos", "validate_secret"]

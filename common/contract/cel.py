"""CEL rule evaluation with the semantics of Kubernetes ``x-kubernetes-validations``.

Rules are compiled once per process (the table is fixed) with Google's C++ CEL runtime
(``cel-expr-python``), and evaluated with ``self`` (and ``oldSelf`` for transition rules) bound to plain
JSON data. Kubernetes semantics reproduced here:

- a rule that mentions ``oldSelf`` is a transition rule: it runs only on UPDATE, and only when the field
  exists in both the old and the new object (the caller decides existence; ``is_transition`` tells it);
- a rule passes only when it evaluates to ``true``: ``false``, an error value (a missing key, a type
  mismatch) or any non-bool result is a failure, never a pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from cel_expr_python import cel

_OLD_SELF = re.compile(r"\boldSelf\b")


class RuleCompileError(ValueError):
    """A rule of the table does not compile: a programming error caught at import/test time."""


@dataclass(frozen=True, slots=True)
class CompiledRule:
    expression: str
    message: str
    is_transition: bool
    program: Any

    def holds(self, value: Any, old_value: Any = None) -> bool:
        """Whether the rule evaluates to ``true`` for ``self=value`` (and ``oldSelf=old_value``)."""
        data = {"self": value, "oldSelf": old_value} if self.is_transition else {"self": value}
        try:
            result = self.program.eval(data=data)
        except Exception:  # the runtime raises plain exceptions for evaluation failures
            return False
        return result.type() == cel.Type.BOOL and result.value() is True


@lru_cache(maxsize=1)
def _env() -> Any:
    return cel.NewEnv(variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN})


@cache
def compile_rule(expression: str, message: str) -> CompiledRule:
    """Compile a rule once; later calls with the same text reuse the program."""
    try:
        program = _env().compile(expression)
    except Exception as exc:
        raise RuleCompileError(f"rule {expression!r} does not compile: {exc}") from None
    return CompiledRule(expression, message, bool(_OLD_SELF.search(expression)), program)

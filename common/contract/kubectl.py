"""What ``kubectl apply`` prints for an API error, byte for byte (kubectl 1.32, ``cmdutil.CheckErr``).

kubectl does not print a 422's ``message``: it rebuilds the text from ``details.causes``, one cause on the
line, several as a ``* field: message`` list, and this holds whether the API server or a validating webhook
denied the request. ``make demo`` and ``cosctl validate`` print denials with this module, so authors see the
text their terminal will show.
"""

from __future__ import annotations

from typing import Any


def error_text(status: dict[str, Any], *, verb: str = "creating", source: str = "STDIN") -> str:
    """kubectl's lines (without the final newline) for an error ``Status`` from ``kubectl apply -f source``.

    ``verb`` is ``creating`` or ``patching``, as kubectl words the request that failed."""
    raw = status.get("details")
    details: dict[str, Any] = raw if isinstance(raw, dict) else {}
    causes = [c for c in details.get("causes") or [] if isinstance(c, dict)]
    if status.get("reason") == "Invalid" and causes:
        prefix = f'The {details.get("kind", "")} "{details.get("name", "")}" is invalid: '
        lines = [f'{c.get("field", "")}: {c.get("message", "")}' for c in causes]
        if len(lines) == 1:
            return prefix + lines[0]
        return prefix + "\n" + "\n".join(f"* {line}" for line in lines)
    reason = status.get("reason") or "Unknown"
    message = status.get("message") or ""
    return f'Error from server ({reason}): error when {verb} "{source}": {message}'

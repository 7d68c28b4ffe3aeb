"""What OLM v1 leaves unsaid about a configuration: keys it drops without a word, and where a refusal points.

OLM v1's messages are kept byte for byte (spec §2), and two of its behaviours leave an admin guessing:

- **Dropped keys.** The schema is strict only at the top and directly under ``deploymentConfig``; below that
  (inside a toleration, an env entry, a volume) it takes any key, and Go's ``json.Unmarshal`` then drops what no
  field of the Kubernetes type takes. ``tolerations: [{key: a, effects: NoSchedule}]`` renders a toleration of
  every effect, and OLM says nothing. :func:`dropped_keys` names each such key, with the field it most likely
  meant, for the caller to print as a warning. The rendered objects stay OLM's.
- **Refusals without a field.** A quantity that does not parse reads ``failed to unmarshal deploymentConfig:
  quantities must match ...``, naming neither field nor value; :func:`quantity_hints` gives both, for printing
  next to OLM's message. (What the schema's refusals leave unnamed, ``validation failed`` above all, is found
  in the error tree itself: :meth:`.configerrors._GoTree.unnamed_causes`.)

Both walk the configuration through the same Go types the decoder uses (:mod:`.gotypes`), with the decoder's own
key lookup and quantity parser (:mod:`.gounmarshal`), so a key is called dropped exactly when Go drops it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any, Final

from .deploymentconfig import DEPLOYMENT_CONFIG, DEPLOYMENT_CONFIG_TYPE
from .gotext import go_quote, json_type_name
from .gotypes import STRUCTS, GoStruct, GoType
from .gounmarshal import field_index, quantity_problem

_SHOWN_VALUE_MAX: Final = 40


def _walk(typ: GoType, value: Any, path: str) -> Iterator[tuple[str, str, Any, GoStruct | None]]:
    """(path, event, detail, struct) for every key Go drops (event ``dropped``, detail the key, struct the
    struct that has no such field) and every quantity it cannot parse (event ``quantity``, detail the value)."""
    while typ.kind == "ptr":
        assert typ.inner is not None
        typ = typ.inner
    if typ.kind == "struct" and isinstance(value, dict):
        struct = STRUCTS[typ.name]
        for key in value:
            index = field_index(struct, key)
            if index is None:
                yield path, "dropped", key, struct
            else:
                yield from _walk(struct.fields[index].type, value[key], f"{path}.{key}")
    elif typ.kind == "list" and isinstance(value, list):
        assert typ.inner is not None
        for i, item in enumerate(value):
            yield from _walk(typ.inner, item, f"{path}.{i}")
    elif typ.kind == "map" and isinstance(value, dict):
        assert typ.inner is not None
        for key, item in value.items():
            yield from _walk(typ.inner, item, f"{path}.{key}")
    elif typ.kind == "scalar" and typ.name == "q" and quantity_problem(value) is not None:
        yield path, "quantity", value, None


def _events(config: Any) -> Iterator[tuple[str, str, Any, GoStruct | None]]:
    if isinstance(config, dict) and isinstance(config.get(DEPLOYMENT_CONFIG), dict):
        yield from _walk(GoType("struct", DEPLOYMENT_CONFIG_TYPE), config[DEPLOYMENT_CONFIG], DEPLOYMENT_CONFIG)


def dropped_keys(config: Any) -> list[str]:
    """One warning per key of ``config``'s ``deploymentConfig`` that OLM v1 accepts and then drops (no field of
    the Kubernetes type takes it), with the field it most likely meant; paths as OLM's messages write them
    (``deploymentConfig.tolerations.0``). Keys directly under ``deploymentConfig`` are not here: the schema
    refuses those. Values are never shown (an env value may be a credential)."""
    out = []
    for path, event, key, struct in _events(config):
        if event != "dropped" or path == DEPLOYMENT_CONFIG or struct is None:
            continue
        known = [f.name for f in struct.fields]
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean {go_quote(close[0])}?)" if close else ""
        out.append(f"{path}: unknown field {go_quote(str(key))} is ignored: Kubernetes' {struct.short_name} has "
                   f"no such field, and OLM v1 drops it too{hint}")
    return out


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json_type_name(value) if isinstance(value, (dict, list)) \
        else str(value)
    return go_quote(text if len(text) <= _SHOWN_VALUE_MAX else text[:_SHOWN_VALUE_MAX] + "...")


def quantity_hints(config: Any) -> list[str]:
    """For a configuration whose decoding failed: each quantity in ``deploymentConfig`` that does not parse,
    with its field and value (OLM's message names neither)."""
    return [f"field {go_quote(path)}: {_shown(value)} is not a quantity"
            for path, event, value, _ in _events(config) if event == "quantity"]


__all__ = ["dropped_keys", "quantity_hints"]

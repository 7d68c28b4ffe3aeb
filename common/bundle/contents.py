"""A revision's content as plain phased manifests, wherever the revision lives.

``diff`` and ``rollback`` both need what a ClusterObjectSet *holds*, not how it is stored: its phases with every
``ref`` resolved to the manifest in the Secret key. A revision may live on the cluster (its Secrets read through
the :class:`~common.cluster.interface.Cluster` protocol) or in the output of ``cosctl pack`` (its Secrets among
the same documents). Either way every unresolvable ref is collected and reported at once, naming the Secret and
key that is missing, never any Secret content.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from common.bundle import refs
from common.bundle.phasing import Phase
from common.cluster.interface import Cluster, NotFound
from common.contract import api
from common.contract.objects import GVK, Obj

SecretReader = Callable[[refs.SecretKeyRef], Obj]


class ContentUnavailable(Exception):
    """Some objects of a revision cannot be read back; ``problems`` names each missing Secret or key."""

    def __init__(self, revision: str, problems: Sequence[str]) -> None:
        self.revision = revision
        self.problems = list(problems)
        super().__init__(f"the content of {revision} is not available: " + "; ".join(self.problems))


def is_cos(doc: Obj) -> bool:
    return GVK.of(doc).group == api.GROUP and doc.get("kind") == api.KIND


def resolve_phases(cos: Obj, read_secret: SecretReader, *,
                   system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE) -> list[Phase]:
    """The phases of ``cos`` with every entry resolved to its manifest; each Secret is read once. Raises
    :class:`ContentUnavailable` listing every ref that cannot be resolved."""
    name = f"ClusterObjectSet {(cos.get('metadata') or {}).get('name', '')}"
    secrets: dict[tuple[str, str], Obj | refs.RefError] = {}
    problems: list[str] = []
    phases: list[Phase] = []
    for phase in (cos.get("spec") or {}).get("phases") or []:
        objects: list[Obj] = []
        for index, entry in enumerate(phase.get("objects") or []):
            if isinstance(entry.get("object"), dict):
                objects.append(entry["object"])
                continue
            where = refs.SecretKeyRef.of(entry.get("ref") or {}, system_namespace)
            try:
                if where.secret not in secrets:
                    try:
                        secrets[where.secret] = read_secret(where)
                    except refs.RefError as exc:
                        secrets[where.secret] = exc
                secret = secrets[where.secret]
                if isinstance(secret, refs.RefError):
                    raise secret
                objects.append(refs.decode_value(refs.secret_value(secret, where), where))
            except refs.RefError as exc:
                problems.append(f"phase {phase.get('name')} object {index}: {_missing(exc, where)}")
        phases.append(Phase(str(phase.get("name")), objects))
    if problems:
        raise ContentUnavailable(name, problems)
    return phases


def _missing(exc: refs.RefError, where: refs.SecretKeyRef) -> str:
    if isinstance(exc, refs.SecretUnreadable) and exc.missing:
        return f"Secret {where} not found"
    return str(exc)


def cluster_reader(cluster: Cluster) -> SecretReader:
    """Read Secrets from the cluster (the reconciler's messages on failure)."""
    return lambda where: refs.read_secret(cluster, where)


def documents_reader(documents: Sequence[Obj]) -> SecretReader:
    """Read Secrets from rendered documents (``cosctl pack`` output), as if they were on a cluster."""
    by_name = {(str((d.get("metadata") or {}).get("namespace") or ""), str(d["metadata"]["name"])): d
               for d in documents if d.get("kind") == "Secret" and GVK.of(d).group == ""}

    def read(where: refs.SecretKeyRef) -> Obj:
        try:
            return by_name[where.secret]
        except KeyError:
            raise refs.SecretUnreadable(f"getting Secret {where}: not among the rendered documents", where,
                                        NotFound(f'secrets "{where.name}" not found')) from None
    return read

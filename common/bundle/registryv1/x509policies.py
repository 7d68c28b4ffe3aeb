"""Certificate policies of an X.509 chain as Go's crypto/x509 (1.26) validates them (``policiesValid``: RFC 5280
section 6.1 as RFC 9618 updates it, with the policy graph instead of the tree), for the signing certificates of
sigstore signatures (:mod:`.x509chain`).

Why: containers/image verifies with Go, which refuses a chain whose policies do not hold: a CA requiring explicit
policies that the certificates below it do not carry, or one mapping ``anyPolicy``. Such chains are rare (bridge
and government PKIs), but an organisation's own CA (a ``pki`` policy) may be one, and a chain podman refuses must be
refused here, and one it accepts accepted. Verification asks for no particular policy (Go's default: the initial
policy set is ``anyPolicy``, nothing inhibited).

Pure functions over ``cryptography`` certificates; imports :mod:`.x509names` alone (its extension reader).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from cryptography import x509
from cryptography.x509.oid import ExtensionOID

from .x509names import extension_value

ANY_POLICY: Final = "2.5.29.32.0"


class _Node:
    """A node of the policy graph: its valid policy, the policies it expects below it, and its edges."""

    __slots__ = ("children", "expected", "parents", "valid")

    def __init__(self, valid: str, parents: Sequence[_Node]) -> None:
        self.valid = valid
        self.expected = [valid]
        self.parents: set[_Node] = set()
        self.children: set[_Node] = set()
        for parent in parents:
            parent.children.add(self)
            self.parents.add(parent)


class _PolicyGraph:
    """Go's policyGraph: one stratum of nodes (by valid policy) per certificate processed."""

    def __init__(self) -> None:
        self.strata: list[dict[str, _Node]] = [{ANY_POLICY: _Node(ANY_POLICY, [])}]
        self.parent_index: dict[str, list[_Node]] = {}
        self.depth = 0

    def insert(self, node: _Node) -> None:
        self.strata[self.depth][node.valid] = node

    def parents_with_expected(self, expected: str) -> list[_Node]:
        return [] if self.depth == 0 else self.parent_index.get(expected, [])

    def parent_with_any_policy(self) -> _Node | None:
        return None if self.depth == 0 else self.strata[self.depth - 1].get(ANY_POLICY)

    def parents(self) -> list[_Node]:
        return [] if self.depth == 0 else list(self.strata[self.depth - 1].values())

    def leaves(self) -> dict[str, _Node]:
        return self.strata[self.depth]

    def delete_leaf(self, policy: str) -> None:
        node = self.strata[self.depth].pop(policy, None)
        if node is None:
            return
        for parent in node.parents:
            parent.children.discard(node)
        for child in node.children:
            child.parents.discard(node)

    def valid_policy_nodes(self) -> list[_Node]:
        return [node for stratum in reversed(self.strata) for node in stratum.values()
                if node.valid != ANY_POLICY and len(node.parents) == 1
                and next(iter(node.parents)).valid == ANY_POLICY]

    def prune(self) -> None:
        for depth in range(self.depth - 1, 0, -1):
            for policy, node in list(self.strata[depth].items()):
                if not node.children:
                    for parent in node.parents:
                        parent.children.discard(node)
                    del self.strata[depth][policy]

    def increase_depth(self) -> None:
        self.parent_index = {}
        for node in self.strata[self.depth].values():
            for expected in node.expected:
                self.parent_index.setdefault(expected, []).append(node)
        self.depth += 1
        self.strata.append({})


def policies_valid(chain: Sequence[x509.Certificate]) -> bool:
    """Whether the policies of ``chain`` (the leaf first, the root last) hold, as Go's policiesValid decides with its
    default options. A chain of one certificate holds."""
    if len(chain) == 1:
        return True
    n = len(chain) - 1
    graph: _PolicyGraph | None = _PolicyGraph()
    inhibit_any_policy = explicit_policy = policy_mapping = n + 1
    for i in range(n - 1, -1, -1):
        cert = chain[i]
        self_signed = cert.issuer.public_bytes() == cert.subject.public_bytes()
        policies = _policies(cert)
        if not policies:
            graph = None
        if explicit_policy == 0 and graph is None:
            return False
        if graph is not None:
            graph.increase_depth()
            for policy in policies:
                if policy == ANY_POLICY:
                    continue
                parents = graph.parents_with_expected(policy)
                if not parents and (any_parent := graph.parent_with_any_policy()) is not None:
                    parents = [any_parent]
                if parents:
                    graph.insert(_Node(policy, parents))
            if ANY_POLICY in policies and (inhibit_any_policy > 0 or (n - i < n and self_signed)):
                missing: dict[str, list[_Node]] = {}
                leaves = graph.leaves()
                for parent in graph.parents():
                    for expected in parent.expected:
                        if expected not in leaves:
                            missing.setdefault(expected, []).append(parent)
                for policy, parents in missing.items():
                    graph.insert(_Node(policy, parents))
            graph.prune()
            if i != 0 and (mappings := _policy_mappings(cert)):
                mapped: dict[str, list[str]] = {}
                for issuer_policy, subject_policy in mappings:
                    if policy_mapping > 0:
                        if ANY_POLICY in (issuer_policy, subject_policy):
                            return False
                        mapped.setdefault(issuer_policy, []).append(subject_policy)
                    else:
                        graph.delete_leaf(issuer_policy)
                graph.prune()
                for issuer_policy, subject_policies in mapped.items():
                    if (matching := graph.leaves().get(issuer_policy)) is not None:
                        matching.expected = subject_policies
                    elif (any_leaf := graph.leaves().get(ANY_POLICY)) is not None:
                        node = _Node(issuer_policy, [any_leaf])
                        node.expected = subject_policies
                        graph.insert(node)
        if i != 0:
            if not self_signed:
                explicit_policy = max(explicit_policy - 1, 0)
                policy_mapping = max(policy_mapping - 1, 0)
                inhibit_any_policy = max(inhibit_any_policy - 1, 0)
            require, inhibit_mapping = _policy_constraints(cert)
            if require is not None and require < explicit_policy:
                explicit_policy = require
            if inhibit_mapping is not None and inhibit_mapping < policy_mapping:
                policy_mapping = inhibit_mapping
            if (skip := _inhibit_any_policy(cert)) is not None and skip < inhibit_any_policy:
                inhibit_any_policy = skip
    explicit_policy = max(explicit_policy - 1, 0)
    if _policy_constraints(chain[0])[0] == 0:
        explicit_policy = 0
    valid: set[str] = set()
    if graph is not None:
        valid = {node.valid for node in graph.valid_policy_nodes()}
        if ANY_POLICY in graph.leaves():
            valid.add(ANY_POLICY)
    return not (explicit_policy == 0 and not valid)


def _policies(cert: x509.Certificate) -> list[str]:
    value = extension_value(cert, x509.CertificatePolicies)
    return [] if value is None else [info.policy_identifier.dotted_string for info in value]


def _policy_constraints(cert: x509.Certificate) -> tuple[int | None, int | None]:
    """(requireExplicitPolicy, inhibitPolicyMapping), each None when not given."""
    value = extension_value(cert, x509.PolicyConstraints)
    return (None, None) if value is None else (value.require_explicit_policy, value.inhibit_policy_mapping)


def _inhibit_any_policy(cert: x509.Certificate) -> int | None:
    value = extension_value(cert, x509.InhibitAnyPolicy)
    return None if value is None else value.skip_certs


_INT64_MAX: Final = (1 << 63) - 1


def policy_extensions_problem(cert: x509.Certificate) -> str | None:
    """Why Go's parser refuses ``cert``'s policy extensions where ``cryptography`` does not (in Go's words, after
    ``x509: ``), or None: policy mappings that do not read (``cryptography`` leaves them unparsed), a policy listed
    twice, an inhibitAnyPolicy beyond 64 bits."""
    if _policy_mappings(cert) is None:
        return "invalid policy mappings extension"
    policies = _policies(cert)
    if len(set(policies)) != len(policies):
        return "invalid certificate policies"
    if (skip := _inhibit_any_policy(cert)) is not None and skip > _INT64_MAX:
        return "invalid inhibit any policy extension"
    return None


def _policy_mappings(cert: x509.Certificate) -> list[tuple[str, str]] | None:
    """The (issuerDomainPolicy, subjectDomainPolicy) pairs of ``cert``'s policy mappings ([] without any), read as
    Go reads them (the first DER item a sequence, each of its items a sequence starting with two OIDs; what follows
    them is not read), None when they do not read so. An OID not minimally encoded is kept as its bytes, which no
    policy equals, as in Go."""
    try:
        value = cert.extensions.get_extension_for_oid(ExtensionOID.POLICY_MAPPINGS).value
    except x509.ExtensionNotFound:
        return []
    raw = value.value if isinstance(value, x509.UnrecognizedExtension) else value.public_bytes()
    outer = _der_items(raw, limit=1)
    if not outer or outer[0][0] != 0x30:
        return None
    mappings = _der_items(outer[0][1])
    if mappings is None:
        return None
    pairs = []
    for tag, mapping in mappings:
        items = _der_items(mapping, limit=2) if tag == 0x30 else None
        if items is None or len(items) < 2 or any(t != 0x06 for t, _ in items[:2]):
            return None
        pairs.append((_oid_key(items[0][1]), _oid_key(items[1][1])))
    return pairs


def _oid_key(content: bytes) -> str:
    text = _oid_text(content)
    return text if text is not None else "der:" + content.hex()


def _der_items(data: bytes, limit: int | None = None) -> list[tuple[int, bytes]] | None:
    """The (tag, content) items DER ``data`` holds one after the other; None when it is not such a sequence. With
    ``limit``, only that many items are read and what follows is ignored (cryptobyte's ReadASN1 on a prefix); fewer
    found is no error."""
    items: list[tuple[int, bytes]] = []
    i = 0
    while i < len(data) and (limit is None or len(items) < limit):
        if i + 2 > len(data):
            return None
        tag, length = data[i], data[i + 1]
        i += 2
        if length & 0x80:
            count = length & 0x7F
            if not 0 < count <= 4 or i + count > len(data):
                return None
            length, i = int.from_bytes(data[i:i + count], "big"), i + count
        if i + length > len(data):
            return None
        items.append((tag, data[i:i + length]))
        i += length
    return items


def _oid_text(content: bytes) -> str | None:
    """An OID's DER content in dotted form; None when it is not minimally encoded base-128 arcs."""
    arcs: list[int] = []
    value = 0
    started = False
    for byte in content:
        if not started and byte == 0x80:
            return None
        started = True
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value, started = 0, False
    if not arcs or started:
        return None
    first = arcs[0]
    head = [0, first] if first < 40 else [1, first - 40] if first < 80 else [2, first - 80]
    return ".".join(str(arc) for arc in [*head, *arcs[1:]])

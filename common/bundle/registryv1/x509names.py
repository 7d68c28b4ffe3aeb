"""Names in X.509 certificates as Go's crypto/x509 (1.26) reads and constrains them, for the signing certificates of
sigstore signatures (:mod:`.sigstore`): whether a certificate is valid for a host name (``VerifyHostname``), and
whether a CA's name constraints allow the names of the certificates below it (``checkChainConstraints``).

Why: containers/image verifies certificates with Go's crypto/x509, and a policy is only as good as its agreement with
podman's decisions: the same certificate must be accepted or refused by both. Messages are Go's. Pure functions over
``cryptography`` certificates; imports nothing of this package.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.parse
from collections.abc import Sequence
from typing import Any, Final

from cryptography import x509

# General name types Go's x509 understands in SANs and name constraints
GO_NAMES: Final = (x509.DNSName, x509.RFC822Name, x509.IPAddress, x509.UniformResourceIdentifier)


def hostname_problem(cert: x509.Certificate, host: str) -> str | None:
    """Why ``cert`` is not valid for ``host`` as Go's Certificate.VerifyHostname decides (an IP address, bracketed
    or not, against the IP SANs; a name against the DNS SANs without regard to ASCII case, a wildcard as a whole
    left-most label and a trailing dot allowed where both are valid hostnames), in its words; None when valid."""
    candidate_ip = host[1:-1] if len(host) >= 3 and host[0] == "[" and host[-1] == "]" else host
    ip = _go_ip(candidate_ip)
    if ip is not None:
        if any(_go_ip_equal(ip, san) for san in _ip_sans(cert)):
            return None
        return _hostname_error(cert, candidate_ip)
    name = _ascii_lower(host)
    valid_name = _valid_hostname(name, pattern=False)
    for match in _dns_sans(cert):
        if valid_name and _valid_hostname(match, pattern=True):
            if _match_hostnames(match, name):
                return None
        elif match not in ("", ".") and name not in ("", ".") and _ascii_lower(match) == name:
            return None
    return _hostname_error(cert, host)


def _hostname_error(cert: x509.Certificate, host: str) -> str:
    """Go's HostnameError.Error()."""
    try:
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        has_san = True
    except x509.ExtensionNotFound:
        has_san = False
    common = [a.value for a in cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)]
    if not has_san and _match_hostnames(str(common[-1]) if common else "", host):
        return "x509: certificate relies on legacy Common Name field, use SANs instead"
    if _go_ip(host) is not None:
        ips = _ip_sans(cert)
        if not ips:
            return f"x509: cannot validate certificate for {host} because it doesn't contain any IP SANs"
        if len(ips) >= 100:
            return f"x509: certificate is valid for {len(ips)} IP SANs, but none matched {host}"
        valid = ", ".join(_go_ip_text(ip) for ip in ips)
    else:
        names = _dns_sans(cert)
        if len(names) >= 100:
            return f"x509: certificate is valid for {len(names)} names, but none matched {host}"
        valid = ", ".join(names)
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {host}"
    return f"x509: certificate is valid for {valid}, not {host}"


def _dns_sans(cert: x509.Certificate) -> list[str]:
    try:
        return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName)
    except x509.ExtensionNotFound:
        return []


def _ip_sans(cert: x509.Certificate) -> list[Any]:
    try:
        return list(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.IPAddress))
    except x509.ExtensionNotFound:
        return []


def _go_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``text`` as Go's net.ParseIP reads it (dotted IPv4 without leading zeros, IPv6 without a zone), else None."""
    if "%" in text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _go_ip_equal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, san: Any) -> bool:
    """Go's IP.Equal: an IPv4 address equals its IPv4-mapped IPv6 form."""
    return bool(_v4_form(ip) == _v4_form(san))


def _v4_form(ip: Any) -> Any:
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped if mapped is not None else ip


def _go_ip_text(ip: Any) -> str:
    """An IP SAN as Go's IP.String writes it (an IPv4-mapped IPv6 address as the IPv4 one)."""
    return str(_v4_form(ip))


def _ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def _valid_hostname(host: str, *, pattern: bool) -> bool:
    """Go's validHostname: labels of ASCII letters, digits, '_' and inner '-'; a pattern may start with a whole
    '*' label; an input may end with a dot."""
    if not pattern:
        host = host.removesuffix(".")
    if not host or host == "*":
        return False
    for index, part in enumerate(host.split(".")):
        if not part:
            return False
        if pattern and index == 0 and part == "*":
            continue
        for position, char in enumerate(part):
            if not (char.isascii() and (char.isalnum() or char == "_" or (char == "-" and position != 0))):
                return False
    return True


def _match_hostnames(pattern: str, host: str) -> bool:
    """Go's matchHostnames: label by label, a left-most '*' matching any one label."""
    pattern, host = _ascii_lower(pattern), _ascii_lower(host.removesuffix("."))
    if not pattern or not host:
        return False
    pattern_parts, host_parts = pattern.split("."), host.split(".")
    if len(pattern_parts) != len(host_parts):
        return False
    return all((index == 0 and part == "*") or part == host_parts[index] for index, part in enumerate(pattern_parts))


_NOT_AUTHORIZED: Final = "x509: a root or intermediate certificate is not authorized to sign for this name: "


def name_problem(ca: x509.Certificate, below: Sequence[x509.Certificate]) -> str | None:
    """Why ``ca``'s name constraints forbid a name of a certificate ``below`` it, or None, as Go 1.26's
    checkChainConstraints decides: every IP address, DNS name, URI host and e-mail address of their SANs must be
    within a permitted subtree of its type (when the CA permits any of that type) and in no excluded one; DNS
    names, URI hosts and e-mail domains match a constraint naming the domain itself or a parent (``.domain``: the
    subdomains only), ignoring ASCII case; a wildcard name is excluded by a constraint on any name it may stand
    for; a name Go cannot read (a DNS name ending in a dot, a URI without a host or with an IP address) refuses
    the chain."""
    try:
        constraints = ca.extensions.get_extension_for_class(x509.NameConstraints).value
    except x509.ExtensionNotFound:
        return None
    permitted = list(constraints.permitted_subtrees or [])
    excluded = list(constraints.excluded_subtrees or [])

    def values(kind: type[x509.GeneralName], subtrees: list[x509.GeneralName]) -> list[Any]:
        return [c.value for c in subtrees if isinstance(c, kind)]

    ip_rules = (values(x509.IPAddress, permitted), values(x509.IPAddress, excluded))
    dns_rules = (values(x509.DNSName, permitted), values(x509.DNSName, excluded))
    uri_rules = (values(x509.UniformResourceIdentifier, permitted), values(x509.UniformResourceIdentifier, excluded))
    mail_rules = (values(x509.RFC822Name, permitted), values(x509.RFC822Name, excluded))
    for cert in below:
        try:
            names = list(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
        except x509.ExtensionNotFound:
            continue
        hosts: list[tuple[str, str]] = []
        for name in names:
            if isinstance(name, x509.UniformResourceIdentifier):
                host_or_problem = _uri_host(name.value)
                if host_or_problem[1]:
                    return _NOT_AUTHORIZED + host_or_problem[1]
                hosts.append((name.value, host_or_problem[0]))
        for name in names:
            if isinstance(name, x509.IPAddress) and (problem := _checked(
                    "IP address", _go_ip_text(name.value), ip_rules,
                    lambda network, ip=name.value: _ip_in(network, ip))):
                return problem
        for name in names:
            if isinstance(name, x509.DNSName):
                if not _domain_valid(name.value):
                    return f"{_NOT_AUTHORIZED}x509: cannot parse dnsName {json.dumps(name.value)}"
                if problem := _checked_domain("DNS name", name.value, name.value, dns_rules):
                    return problem
        for shown, host in hosts:
            if not _domain_valid(host):
                return f"{_NOT_AUTHORIZED}x509: internal error: URI SAN {json.dumps(shown)} failed to parse"
            if problem := _checked_domain("URI", host, shown, uri_rules):
                return problem
        for name in names:
            if isinstance(name, x509.RFC822Name):
                _local, at, domain = name.value.rpartition("@")
                if not at or not _domain_valid(domain):
                    return f"{_NOT_AUTHORIZED}x509: cannot parse rfc822Name {json.dumps(name.value)}"
                if problem := _checked("email address", name.value, mail_rules,
                                       lambda constraint, mail=name.value: _mail_matches(mail, constraint)):
                    return problem
    return None


def _checked(kind: str, shown: str, rules: tuple[list[Any], list[Any]], matches: Any) -> str | None:
    """Go's checkConstraints: not permitted when the CA permits names of this kind and none of them matches;
    excluded when one of its exclusions matches."""
    permitted, excluded = rules
    if permitted and not any(matches(c) for c in permitted):
        return f"{_NOT_AUTHORIZED}{kind} {json.dumps(shown)} is not permitted by any constraint"
    for constraint in excluded:
        if matches(constraint):
            return (f"{_NOT_AUTHORIZED}{kind} {json.dumps(shown)} is excluded by constraint "
                    f"{json.dumps(str(constraint))}")
    return None


def _checked_domain(kind: str, host: str, shown: str, rules: tuple[list[str], list[str]]) -> str | None:
    permitted, excluded = rules
    problem = _checked(kind, shown, (permitted, []), lambda c: _dns_has_suffix(c, host))
    if problem is None:
        wildcard_parent = _first_label_trimmed(_ascii_lower(host)) if host.startswith("*") else ""
        problem = _checked(kind, shown, ([], excluded), lambda c: _dns_has_suffix(c, host) or bool(
            wildcard_parent and _first_label_trimmed(_ascii_lower(c)) == wildcard_parent))
    return problem


def _dns_has_suffix(constraint: str, name: str) -> bool:
    """Go's dnsHasSuffix for a constraint: ``""`` matches everything; else the name ends with it, ignoring ASCII
    case, at a label boundary (or the constraint starts with a dot)."""
    if not constraint:
        return True
    if len(constraint) > len(name) or not _ascii_lower(name).endswith(_ascii_lower(constraint)):
        return False
    return constraint[0] == "." or len(name) == len(constraint) or name[len(name) - len(constraint) - 1] == "."


def _first_label_trimmed(name: str) -> str:
    """Go's trimFirstLabel: from the first dot on (``""`` for a single label)."""
    dot = name.find(".")
    return "" if dot < 0 else name[dot:]


def _domain_valid(name: str) -> bool:
    """Go 1.26's domainNameValid for a name (not a constraint): no trailing dot, no empty label, printable ASCII
    only (the empty name passes)."""
    if not name:
        return True
    if name.endswith("."):
        return False
    return all(label and all(33 <= ord(c) <= 126 for c in label) for label in name.split("."))


def _uri_host(uri: str) -> tuple[str, str]:
    """The host a URI SAN is held to constraints by (lower case, without a port), or ("", why Go refuses it)."""
    try:
        netloc = urllib.parse.urlsplit(uri).netloc
    except ValueError as exc:
        return "", f"cannot parse URI {json.dumps(uri)}: {exc}"
    host = netloc.rpartition("@")[2].lower()
    if not host:
        return "", f"URI with empty host ({json.dumps(uri)}) cannot be matched against constraints"
    if ":" in host and not host.endswith("]"):
        host, colon, _port = host.rpartition(":")
        if not colon or (":" in host and not host.startswith("[")):
            return "", f"cannot parse URI host {json.dumps(netloc)}: too many colons"
    if (host.startswith("[") and host.endswith("]")) or _parse_addr(host):
        return "", f"URI with IP ({json.dumps(uri)}) cannot be matched against constraints"
    return host, ""


def _parse_addr(text: str) -> bool:
    """Whether Go's netip.ParseAddr reads ``text`` (an IPv4 or IPv6 address, a zone allowed)."""
    try:
        ipaddress.ip_address(text.split("%", 1)[0] if ":" in text else text)
    except ValueError:
        return False
    return True


_V4_IN_V6: Final = bytes(10) + b"\xff\xff"


def _ip_in(network: Any, ip: Any) -> bool:
    """Go's IPNet.Contains, on the constraint sets Go keeps per address length: an address is held to networks
    written with as many bytes (4 or 16), then compared as IPv4 when both are (an IPv4-mapped IPv6 form is)."""
    if network.version != ip.version:
        return False
    address, number, mask = ip.packed, network.network_address.packed, network.netmask.packed
    if len(address) == 16 and address[:12] == _V4_IN_V6:
        address = address[12:]
    if len(number) == 16 and number[:12] == _V4_IN_V6:
        number, mask = number[12:], mask[12:]
    if len(address) != len(number):
        return False
    return all(a & m == n & m for a, n, m in zip(address, number, mask, strict=True))


def _mail_matches(mail: str, constraint: str) -> bool:
    """Go's e-mail constraints: a mailbox constraint matches the local part exactly and the domain without
    regard to case; a domain constraint matches as a DNS name constraint does (itself and its subdomains,
    ``.domain`` its subdomains only)."""
    local, _, host = mail.rpartition("@")
    if "@" in constraint:
        c_local, _, c_host = constraint.rpartition("@")
        return local == c_local and _ascii_lower(host) == _ascii_lower(c_host)
    return _dns_has_suffix(constraint, host)


def email_addresses(cert: x509.Certificate) -> list[str]:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(n) for n in names.get_values_for_type(x509.RFC822Name)]

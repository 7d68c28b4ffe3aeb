"""Names in X.509 certificates as Go's crypto/x509 (1.26) reads and constrains them, for the signing certificates of
sigstore signatures (:mod:`.sigstore`): whether a certificate is valid for a host name (``VerifyHostname``);
whether a CA's name constraints allow the names of the certificates below it (``checkChainConstraints``, with
RFC 2821 mailboxes and URI hosts as Go's ``net/url`` parses them); and which names or constraints make Go's parser
refuse a certificate outright.

Why: containers/image verifies certificates with Go's crypto/x509, and a policy is only as good as its agreement with
podman's decisions: the same certificate must be accepted or refused by both. Messages are Go's. Pure functions over
``cryptography`` certificates; imports :mod:`.gotext` and :mod:`.gourl` (Go's quoting and ``url.Parse``) alone.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from cryptography import x509

from .gotext import go_quote
from .gourl import go_url_host

# General name types Go's x509 understands in SANs and name constraints
GO_NAMES: Final = (x509.DNSName, x509.RFC822Name, x509.IPAddress, x509.UniformResourceIdentifier)

_Extension = TypeVar("_Extension", bound=x509.ExtensionType)


def extension_value(cert: x509.Certificate, kind: type[_Extension]) -> _Extension | None:
    """``cert``'s extension of type ``kind``, None without one (for every x509 module of this package)."""
    try:
        return cert.extensions.get_extension_for_class(kind).value
    except x509.ExtensionNotFound:
        return None


def _sans(cert: x509.Certificate, kind: type[x509.GeneralName]) -> list[Any]:
    """The values of ``cert``'s subject alternative names of type ``kind``."""
    names = extension_value(cert, x509.SubjectAlternativeName)
    return [] if names is None else [name.value for name in names if isinstance(name, kind)]


def hostname_problem(cert: x509.Certificate, host: str) -> str | None:
    """Why ``cert`` is not valid for ``host`` as Go's Certificate.VerifyHostname decides (an IP address, bracketed
    or not, against the IP SANs; a name against the DNS SANs without regard to ASCII case, a wildcard as a whole
    left-most label and a trailing dot allowed where both are valid hostnames), in its words; None when valid."""
    candidate_ip = host[1:-1] if len(host) >= 3 and host[0] == "[" and host[-1] == "]" else host
    ip = _go_ip(candidate_ip)
    if ip is not None:
        if any(_go_ip_equal(ip, san) for san in _sans(cert, x509.IPAddress)):
            return None
        return _hostname_error(cert, candidate_ip)
    name = _ascii_lower(host)
    valid_name = _valid_hostname(name, pattern=False)
    for match in _sans(cert, x509.DNSName):
        if valid_name and _valid_hostname(match, pattern=True):
            if _match_hostnames(match, name):
                return None
        elif match not in ("", ".") and name not in ("", ".") and _ascii_lower(match) == name:
            return None
    return _hostname_error(cert, host)


def _hostname_error(cert: x509.Certificate, host: str) -> str:
    """Go's HostnameError.Error()."""
    has_san = extension_value(cert, x509.SubjectAlternativeName) is not None
    common = [a.value for a in cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)]
    if not has_san and _match_hostnames(str(common[-1]) if common else "", host):
        return "x509: certificate relies on legacy Common Name field, use SANs instead"
    if _go_ip(host) is not None:
        ips = _sans(cert, x509.IPAddress)
        if not ips:
            return f"x509: cannot validate certificate for {host} because it doesn't contain any IP SANs"
        if len(ips) >= 100:
            return f"x509: certificate is valid for {len(ips)} IP SANs, but none matched {host}"
        valid = ", ".join(_go_ip_text(ip) for ip in ips)
    else:
        names = _sans(cert, x509.DNSName)
        if len(names) >= 100:
            return f"x509: certificate is valid for {len(names)} names, but none matched {host}"
        valid = ", ".join(names)
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {host}"
    return f"x509: certificate is valid for {valid}, not {host}"


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
    within a permitted subtree of its type (when the CA permits any of that type) and in no excluded one. Domains
    (DNS names, URI hosts, e-mail domains) match a constraint naming the domain itself or a parent (``.domain``:
    the subdomains only), ignoring ASCII case; a wildcard name is excluded by a constraint on any name it may stand
    for; e-mail addresses are read as RFC 2821 mailboxes; a name Go cannot read (a DNS name ending in a dot, a URI
    without a host or with an IP address, a malformed mailbox) refuses the chain. The constraints are searched as
    Go searches them (sorted, those within another dropped, the nearest lower one tried), quirks included."""
    constraints = extension_value(ca, x509.NameConstraints)
    if constraints is None:
        return None
    permitted = list(constraints.permitted_subtrees or [])
    excluded = list(constraints.excluded_subtrees or [])

    def values(kind: type[x509.GeneralName], subtrees: list[x509.GeneralName]) -> list[Any]:
        return [c.value for c in subtrees if isinstance(c, kind)]

    ips = (_IpConstraints.of(values(x509.IPAddress, permitted)), _IpConstraints.of(values(x509.IPAddress, excluded)))
    dns = (_DnsConstraints.of(values(x509.DNSName, permitted), permitted=True),
           _DnsConstraints.of(values(x509.DNSName, excluded), permitted=False))
    uris = (_DnsConstraints.of(values(x509.UniformResourceIdentifier, permitted), permitted=True),
            _DnsConstraints.of(values(x509.UniformResourceIdentifier, excluded), permitted=False))
    mails = (_EmailConstraints.of(values(x509.RFC822Name, permitted), permitted=True),
             _EmailConstraints.of(values(x509.RFC822Name, excluded), permitted=False))
    for cert in below:
        san = extension_value(cert, x509.SubjectAlternativeName)
        if san is None:
            continue
        names = list(san)
        uri_hosts: list[tuple[str, str]] = []
        for name in names:
            if isinstance(name, x509.UniformResourceIdentifier):
                host, why = _uri_host(name.value)
                if why:
                    return _NOT_AUTHORIZED + why
                uri_hosts.append((name.value, host))
        mailboxes: list[tuple[str, str]] = []
        for name in names:
            if isinstance(name, x509.RFC822Name):
                mailbox = parse_mailbox(name.value)
                if mailbox is None:
                    return f"{_NOT_AUTHORIZED}cannot parse rfc822Name {go_quote(name.value)}"
                mailboxes.append((mailbox[0], mailbox[1].lower()))
        for name in names:
            if isinstance(name, x509.IPAddress):
                address: ipaddress.IPv4Address | ipaddress.IPv6Address = name.value   # type: ignore[assignment]
                if problem := _checked("IP address", _go_ip_text(address), ips, address.packed):
                    return problem
        for name in names:
            if isinstance(name, x509.DNSName):
                if not domain_name_valid(name.value):
                    return f"{_NOT_AUTHORIZED}x509: cannot parse dnsName {go_quote(name.value)}"
                if problem := _checked("DNS name", name.value, dns, name.value):
                    return problem
        for shown, host in uri_hosts:
            if not domain_name_valid(host):
                return f"{_NOT_AUTHORIZED}x509: internal error: URI SAN {go_quote(shown)} failed to parse"
            if problem := _checked("URI", shown, uris, host):
                return problem
        for local, domain in mailboxes:
            if not domain_name_valid(domain):
                return f"{_NOT_AUTHORIZED}x509: cannot parse rfc822Name {go_quote(f'{local}@{domain}')}"
            if problem := _checked("email address", f"{local}@{domain}", mails, (local, domain)):
                return problem
    return None


def _checked(kind: str, shown: str, rules: tuple[Any, Any], target: Any) -> str | None:
    """Go's checkConstraints: not permitted when the CA permits names of this kind and none of them matches;
    excluded when one of its exclusions matches."""
    permitted, excluded = rules
    if permitted is not None and permitted.query(target) is None:
        return f"{_NOT_AUTHORIZED}{kind} {go_quote(shown)} is not permitted by any constraint"
    if excluded is not None and (constraint := excluded.query(target)) is not None:
        return f"{_NOT_AUTHORIZED}{kind} {go_quote(shown)} is excluded by constraint {go_quote(constraint)}"
    return None


def _pruned(items: list[Any], compare: Callable[[Any, Any], int], within: Callable[[Any, Any], bool]) -> list[Any]:
    """Go's nameConstraintsSet.sortAndPrune: sorted, and each item within the one kept before it dropped."""
    ordered = sorted(items, key=functools.cmp_to_key(compare))
    kept = ordered[:1]
    for item in ordered[1:]:
        if not within(kept[-1], item):
            kept.append(item)
    return kept


def _search(items: list[Any], target: Any, compare: Callable[[Any, Any], int],
            match: Callable[[Any, Any], bool]) -> Any | None:
    """Go's nameConstraintsSet.search: the item equal to ``target`` in the sort order, else the nearest lower one
    (the first when there is none) if it matches; None otherwise."""
    if not items:
        return None
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if compare(items[middle], target) < 0:
            low = middle + 1
        else:
            high = middle
    if low < len(items) and compare(items[low], target) == 0:
        return items[low]
    candidate = items[0] if low == 0 else items[low - 1]
    return candidate if match(candidate, target) else None


def _dns_byte(char: str) -> int:
    code = ord(char)
    return 0 if char == "." else code + 32 if 65 <= code <= 90 else code


def _dns_compare(a: str, b: str) -> int:
    """Go's dnsCompare: byte by byte from the end, ASCII case folded, a dot lowest; a suffix sorts first."""
    i, j = len(a) - 1, len(b) - 1
    while i >= 0 and j >= 0:
        x, y = _dns_byte(a[i]), _dns_byte(b[j])
        if x != y:
            return -1 if x < y else 1
        i, j = i - 1, j - 1
    return -1 if i < j else 1 if j < i else 0


class _DnsConstraints:
    """Go's dnsConstraints (for DNS names, URI hosts and e-mail domains): ``""`` among them matches everything."""

    def __init__(self, names: list[str], *, permitted: bool) -> None:
        self.all = "" in names
        self.permitted = permitted
        self.names = [] if self.all else _pruned(names, _dns_compare, _dns_has_suffix)
        self.parents: dict[str, str] = {}
        if not permitted:
            for name in self.names:
                lowered = name.lower()
                if parent := _first_label_trimmed(lowered):
                    self.parents[parent] = lowered

    @classmethod
    def of(cls, names: list[str], *, permitted: bool) -> _DnsConstraints | None:
        return cls(names, permitted=permitted) if names else None

    def query(self, name: str) -> str | None:
        if self.all:
            return ""
        found = _search(self.names, name, _dns_compare, _dns_has_suffix)
        if found is None and not self.permitted and name.startswith("*"):
            return self.parents.get(_first_label_trimmed(name.lower()))
        return found


class _EmailConstraints:
    """Go's emailConstraints: mailboxes matched exactly (the domain without case), domains as DNS constraints."""

    def __init__(self, constraints: list[str], *, permitted: bool) -> None:
        self.mailboxes: set[tuple[str, str]] = set()
        domains = []
        for constraint in constraints:
            if "@" not in constraint:
                domains.append(constraint)
            elif (mailbox := parse_mailbox(constraint)) is not None:
                self.mailboxes.add((mailbox[0], mailbox[1].lower()))
        self.domains = _DnsConstraints.of(domains, permitted=permitted)

    @classmethod
    def of(cls, constraints: list[str], *, permitted: bool) -> _EmailConstraints | None:
        return cls(constraints, permitted=permitted) if constraints else None

    def query(self, mailbox: tuple[str, str]) -> str | None:
        if mailbox in self.mailboxes:
            return f"{mailbox[0]}@{mailbox[1]}"
        return None if self.domains is None else self.domains.query(mailbox[1])


class _IpConstraints:
    """Go's ipConstraints: networks kept per address length (4 or 16 bytes, as the certificate wrote them), as
    raw (address, mask) pairs."""

    def __init__(self, networks: list[Any]) -> None:
        raw = [(n.network_address.packed, n.netmask.packed) for n in networks]
        self.sets = {size: _pruned([r for r in raw if len(r[0]) == size], _ip_compare, _ip_within)
                     for size in (4, 16)}

    @classmethod
    def of(cls, networks: list[Any]) -> _IpConstraints | None:
        return cls(networks) if networks else None

    def query(self, address: bytes) -> str | None:
        found = _search(self.sets[4 if len(address) == 4 else 16], address,
                        lambda network, target: _bytes_compare(network[0], target), _ip_contains)
        return None if found is None else _ip_network_text(found)


def _bytes_compare(a: bytes, b: bytes) -> int:
    return (a > b) - (a < b)


def _ip_compare(a: tuple[bytes, bytes], b: tuple[bytes, bytes]) -> int:
    return _bytes_compare(a[0], b[0]) or _bytes_compare(a[1], b[1])


def _ip_within(outer: tuple[bytes, bytes], inner: tuple[bytes, bytes]) -> bool:
    """Go's ipNetworkSubset: ``outer`` holds ``inner``'s first and last address."""
    last = bytes(x | (~m & 0xFF) for x, m in zip(inner[0], inner[1], strict=True))
    return _ip_contains(outer, inner[0]) and _ip_contains(outer, last)


_V4_IN_V6: Final = bytes(10) + b"\xff\xff"


def _to4(address: bytes) -> bytes | None:
    """Go's IP.To4: a 4-byte address, or the IPv4 one an IPv4-mapped 16-byte address holds."""
    if len(address) == 4:
        return address
    if len(address) == 16 and address[:12] == _V4_IN_V6:
        return address[12:]
    return None


def _network_number_and_mask(network: tuple[bytes, bytes]) -> tuple[bytes, bytes] | None:
    """Go's networkNumberAndMask: an IPv4-mapped network is an IPv4 one (its mask's last 4 bytes)."""
    number, mask = network
    v4 = _to4(number)
    if v4 is None and len(number) != 16:
        return None
    number = v4 if v4 is not None else number
    if len(mask) == 4:
        return (number, mask) if len(number) == 4 else None
    if len(mask) == 16:
        return (number, mask[12:]) if len(number) == 4 else (number, mask)
    return None


def _ip_contains(network: tuple[bytes, bytes], address: bytes) -> bool:
    """Go's IPNet.Contains."""
    normal = _network_number_and_mask(network)
    if normal is None:
        return False
    number, mask = normal
    address = _to4(address) or address
    if len(address) != len(number):
        return False
    return all(n & m == a & m for n, a, m in zip(number, address, mask, strict=True))


def _ip_network_text(network: tuple[bytes, bytes]) -> str:
    """Go's IPNet.String."""
    normal = _network_number_and_mask(network)
    if normal is None:
        return "<nil>"
    number, mask = normal
    ones = int.from_bytes(mask, "big").bit_count()
    text = str(ipaddress.ip_address(number))
    if int.from_bytes(mask, "big") != ((1 << (8 * len(mask))) - 1) ^ ((1 << (8 * len(mask) - ones)) - 1):
        return f"{text}/{mask.hex()}"
    return f"{text}/{ones}"


def _dns_has_suffix(constraint: str, name: str) -> bool:
    """Go's dnsHasSuffix: the name ends with the constraint, ignoring ASCII case, at a label boundary (or the
    constraint starts with a dot)."""
    if len(constraint) > len(name) or not _ascii_lower(name).endswith(_ascii_lower(constraint)):
        return False
    return constraint[:1] == "." or len(name) == len(constraint) or name[len(name) - len(constraint) - 1] == "."


def _first_label_trimmed(name: str) -> str:
    """Go's trimFirstLabel: from the first dot on (``""`` for a single label)."""
    dot = name.find(".")
    return "" if dot < 0 else name[dot:]


def domain_name_valid(name: str, *, constraint: bool = False) -> bool:
    """Go 1.26's domainNameValid: no trailing dot, no empty label (a constraint may start with a dot), printable
    ASCII only; the empty name passes."""
    if not name:
        return True
    if name.endswith("."):
        return False
    if constraint and name.startswith("."):
        name = name[1:]
    return all(label and all(33 <= ord(c) <= 126 for c in label) for label in name.split("."))


_ATEXT: Final = frozenset(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%&'*+-/=?^_`{|}~.")


def parse_mailbox(text: str) -> tuple[str, str] | None:
    """Go's parseRFC2821Mailbox: (local part, domain) of an e-mail address, quotes and backslashes resolved, the
    domain everything after the first unquoted ``@``; None for what Go cannot read."""
    data = text.encode("utf-8", "surrogateescape")
    if not data:
        return None
    local = bytearray()
    i = 0
    if data[0] == 0x22:   # a quoted string
        i = 1
        while True:
            if i >= len(data):
                return None
            c = data[i]
            i += 1
            if c == 0x22:
                break
            if c == 0x5C:
                if i >= len(data):
                    return None
                d = data[i]
                if not (d in (11, 12) or 1 <= d <= 9 or 14 <= d <= 127):
                    return None
                local.append(d)
                i += 1
            elif c in (11, 12, 32, 33, 127) or 1 <= c <= 8 or 14 <= c <= 31 or 35 <= c <= 91 or 93 <= c <= 126:
                local.append(c)
            else:
                return None
    else:
        while i < len(data):
            c = data[i]
            if c == 0x5C:   # an escape outside quotes: the next byte, whatever it is
                i += 1
                if i >= len(data):
                    return None
            elif c not in _ATEXT:
                break
            local.append(data[i])
            i += 1
        if not local or local[0] == 0x2E or local[-1] == 0x2E or b".." in local:
            return None
    if i >= len(data) or data[i] != 0x40:
        return None
    domain = data[i + 1:]
    if domain and not all(label and all(33 <= c <= 126 for c in label) for label in domain.split(b".")):
        return None
    return local.decode("latin-1"), domain.decode("latin-1")


def _uri_host(uri: str) -> tuple[str, str]:
    """The host a URI SAN is held to constraints by (Go's parseURIs: lower case, without a port), or ("", why Go
    refuses it)."""
    host, problem = go_url_host(uri)
    if problem:
        return "", f"cannot parse URI {go_quote(uri)}: {problem}"
    raw_host = host
    host = host.lower()
    if not host:
        return "", f"URI with empty host ({go_quote(uri)}) cannot be matched against constraints"
    if ":" in host and not host.endswith("]"):
        split = _split_host_port(raw_host)
        if split is None:
            return "", f"cannot parse URI host {go_quote(raw_host)}: address {raw_host}: too many colons in address"
        host = split
    if _parse_addr(host) or (host.startswith("[") and host.endswith("]")):
        return "", f"URI with IP ({go_quote(uri)}) cannot be matched against constraints"
    return host, ""


def _split_host_port(hostport: str) -> str | None:
    """The host of Go's net.SplitHostPort (None where it fails)."""
    colon = hostport.rfind(":")
    if colon < 0:
        return None
    host = hostport[:colon]
    if host.startswith("["):
        if not host.endswith("]") or "[" in host[1:] or "]" in host[:-1]:
            return None
        return host[1:-1]
    if ":" in host or "[" in host or "]" in host:
        return None
    return host


def _parse_addr(text: str) -> bool:
    """Whether Go's netip.ParseAddr reads ``text`` (an IPv4 or IPv6 address, a zone allowed)."""
    try:
        ipaddress.ip_address(text.split("%", 1)[0] if ":" in text else text)
    except ValueError:
        return False
    return True


def certificate_name_problem(cert: x509.Certificate) -> str | None:
    """What Go's certificate parser refuses in the names of ``cert`` (in its words, after ``x509: ``), or None: a
    URI it cannot parse or whose host is no domain name; a name constraint it cannot read (a DNS or URI constraint
    that is no domain, a URI constraint that is an IP address, an e-mail constraint that is no mailbox or
    domain)."""
    for ext in cert.extensions:
        value = ext.value
        if isinstance(value, x509.SubjectAlternativeName):
            for uri in value.get_values_for_type(x509.UniformResourceIdentifier):
                host, problem = go_url_host(uri)
                if problem:
                    return f"cannot parse URI {go_quote(uri)}: {problem}"
                if host and not domain_name_valid(host):
                    return f"cannot parse URI {go_quote(uri)}: invalid domain"
        elif isinstance(value, x509.NameConstraints):
            for subtree in [*(value.permitted_subtrees or ()), *(value.excluded_subtrees or ())]:
                constraint = subtree.value
                if isinstance(subtree, x509.DNSName) and not domain_name_valid(constraint, constraint=True):
                    return f"failed to parse dnsName constraint {go_quote(constraint)}"
                if isinstance(subtree, x509.RFC822Name) and not (
                        parse_mailbox(constraint) is not None if "@" in constraint
                        else domain_name_valid(constraint, constraint=True)):
                    return f"failed to parse rfc822Name constraint {go_quote(constraint)}"
                if isinstance(subtree, x509.UniformResourceIdentifier):
                    if _go_ip(constraint) is not None:
                        return f"failed to parse URI constraint {go_quote(constraint)}: cannot be IP address"
                    if not domain_name_valid(constraint, constraint=True):
                        return f"failed to parse URI constraint {go_quote(constraint)}"
    return None


def email_addresses(cert: x509.Certificate) -> list[str]:
    return _sans(cert, x509.RFC822Name)

"""Go's ``net/url`` ``url.Parse``, as far as containers/image's decisions depend on it: whether a URL parses, the
host (with its port, unescaped) it names, and Go's words when it does not parse.

Why: a URI in a signing certificate (:mod:`.x509names`) and a lookaside URL in registries.d (:mod:`.registriesd`)
are refused or accepted by Go's parser; cosctl must refuse the same ones with the same message. Judged against Go
1.26's net/url on 90,000 random URLs (identical host or identical message). Pure functions over strings; imports
:mod:`.gotext` alone.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from typing import Final

from .gotext import go_quote

_HOST_BYTES: Final = frozenset(b"!\"$&'()*+,-.0123456789:;<=>ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz~")
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_USERINFO: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._:~!$&'()*+,;=%@")


def _unescape_problem(text: str, *, host: bool = False, zone: bool = False) -> str:
    """Why Go's url unescape refuses ``text`` (``""`` when it does not): a ``%`` without two hex digits; in a
    host, an escaped ASCII byte but ``%25``; in an IPv6 zone, an escaped byte but ``%25``, a space or one a host may
    hold; in either, an ASCII byte a host may not hold."""
    data = text.encode("utf-8", "surrogateescape")
    i = 0
    while i < len(data):
        c = data[i]
        if c == 0x25:
            escape = data[i:i + 3]
            if i + 2 >= len(data) or data[i + 1] not in _HEX or data[i + 2] not in _HEX:
                return f"invalid URL escape {go_quote(escape.decode('utf-8', 'surrogateescape'))}"
            value = int(escape[1:].decode(), 16)
            if host and value < 0x80 and escape != b"%25":
                return f"invalid URL escape {go_quote(escape.decode('utf-8', 'surrogateescape'))}"
            if zone and escape != b"%25" and value != 0x20 and value not in _HOST_BYTES:
                return f"invalid URL escape {go_quote(escape.decode('utf-8', 'surrogateescape'))}"
            i += 3
            continue
        if (host or zone) and c < 0x80 and c not in _HOST_BYTES:
            return f"invalid character {go_quote(chr(c))} in host name"
        i += 1
    return ""


def _unescaped(text: str) -> str:
    return urllib.parse.unquote(text, errors="surrogateescape")


def go_url_host(raw: str) -> tuple[str, str]:
    """The host (with its port, unescaped) Go's url.Parse finds in ``raw``, or ("", why Parse refuses it), for
    the URIs a certificate names: Go's parser refuses a certificate whose URI it cannot parse."""
    rest_of_url, hash_sign, fragment = raw.partition("#")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rest_of_url):
        return "", f"parse {go_quote(rest_of_url)}: net/url: invalid control character in URL"
    if rest_of_url == "*":   # Go's parse takes it as a path, and the fragment is still unescaped
        return "", _fragment_problem(raw, hash_sign, fragment)
    scheme, rest = "", rest_of_url
    for index, char in enumerate(rest_of_url):
        if char.isascii() and char.isalpha():
            continue
        if char.isascii() and (char.isdigit() or char in "+-."):
            if index == 0:
                break
            continue
        if char == ":":
            if index == 0:
                return "", f"parse {go_quote(rest_of_url)}: missing protocol scheme"
            scheme, rest = rest_of_url[:index].lower(), rest_of_url[index + 1:]
        break
    rest = rest[:-1] if rest.endswith("?") and rest.count("?") == 1 else rest.partition("?")[0]
    host = ""
    opaque = False
    if not rest.startswith("/"):
        if scheme:
            opaque = True
        elif ":" in rest.partition("/")[0]:
            return "", f"parse {go_quote(rest_of_url)}: first path segment in URL cannot contain colon"
    if not opaque:
        if (scheme or not rest.startswith("///")) and rest.startswith("//"):
            authority, slash, path = rest[2:].partition("/")
            rest = slash + path
            userinfo, at, hostport = authority.rpartition("@")
            host, problem = _go_host(scheme, hostport if at else authority)
            if not problem and at:
                if not all(c in _USERINFO for c in userinfo):
                    problem = "net/url: invalid userinfo"
                else:
                    problem = next((p for part in userinfo.split(":", 1) if (p := _unescape_problem(part))), "")
            if problem:
                return "", f"parse {go_quote(rest_of_url)}: {problem}"
        if problem := _unescape_problem(rest):
            return "", f"parse {go_quote(rest_of_url)}: {problem}"
    if problem := _fragment_problem(raw, hash_sign, fragment):
        return "", problem
    return host, ""


def _fragment_problem(raw: str, hash_sign: str, fragment: str) -> str:
    """Go's setFragment: a fragment with a ``%`` that is no escape refuses the whole URL."""
    if hash_sign and fragment and (problem := _unescape_problem(fragment)):
        return f"parse {go_quote(raw)}: {problem}"
    return ""


def _go_host(scheme: str, host: str) -> tuple[str, str]:
    """Go 1.26's url parseHost: (the host unescaped, "") or ("", why not)."""
    open_bracket = host.rfind("[")
    if open_bracket > 0:
        return "", "invalid IP-literal"
    if open_bracket == 0:
        close = host.rfind("]")
        if close < 0:
            return "", "missing ']' in host"
        colon_port = host[close + 1:]
        if not _valid_optional_port(colon_port):
            return "", f"invalid port {go_quote(colon_port)} after host"
        if problem := _unescape_problem(colon_port, host=True):
            return "", problem
        inside = host[1:close]
        zone = inside.find("%25")
        if problem := _unescape_problem(inside if zone < 0 else inside[:zone], host=True) or (
                _unescape_problem(inside[zone:], zone=True) if zone >= 0 else ""):
            return "", problem
        literal = _unescaped(inside)
        address_text, percent, zone_name = literal.partition("%")
        if percent and not zone_name:
            return "", f"invalid host: ParseAddr({go_quote(literal)}): zone must be a non-empty string"
        try:
            address = ipaddress.ip_address(address_text)
        except ValueError:
            return "", f"invalid host: ParseAddr({go_quote(literal)}): unable to parse IP"
        if address.version == 4:
            return "", (f"invalid host: ParseAddr({go_quote(literal)}): unexpected character" if percent
                        else "invalid IP-literal")
        return f"[{literal}]{_unescaped(colon_port)}", ""
    first = host.find(":")
    if first >= 0:
        last = host.rfind(":")
        colon = last if last != first and scheme not in ("http", "https") else first
        colon_port = host[colon:]
        if not _valid_optional_port(colon_port):
            return "", f"invalid port {go_quote(colon_port)} after host"
    if problem := _unescape_problem(host, host=True):
        return "", problem
    return _unescaped(host), ""


def _valid_optional_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and all("0" <= c <= "9" for c in port[1:]))

"""TLS for the webhook: a server context that follows certificate rotation on disk, and self-signed pairs.

The API server only talks to webhooks over TLS, and in a cluster the serving certificate is rotated by
whoever mounts it (cert-manager, ``cos-webhook certs``, a Secret volume update). ``ReloadingContext`` checks
the files' identity on each new connection and loads the new pair when it changed; connections already
established keep the context they were accepted with, so a rotation never fails a request in flight. A pair
that does not load (a half-written rotation, a key that does not match its certificate) is not used: the
previous context stays in service and the next connection tries again.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

log = logging.getLogger("cos_webhook.tls")

FileId = tuple[int, int, int, int]


class CertificateError(RuntimeError):
    """The certificate or key files cannot be loaded (and no earlier pair is available to fall back on)."""


def _file_id(path: str) -> FileId:
    st = os.stat(path)  # follows symlinks: a Secret volume swaps the ..data link atomically
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ReloadingContext:
    """An ``ssl.SSLContext`` source for a server, reloaded when the certificate or key file changes.

    ``on_reload(ok)`` is called after each reload attempt, ``on_load(not_after)`` after each successful
    load, the first included, with the served certificate's ``notAfter`` in Unix seconds (for metrics).
    """

    def __init__(self, cert_file: str, key_file: str, *,
                 on_reload: Callable[[bool], None] | None = None,
                 on_load: Callable[[float], None] | None = None) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._on_reload = on_reload
        self._on_load = on_load
        self.not_after = 0.0
        self._lock = threading.Lock()
        self._ids: tuple[FileId, FileId] | None = None
        self._context: ssl.SSLContext | None = None
        self._failed_ids: tuple[FileId, FileId] | None = None
        self.reloads = 0
        self.load()

    def _build(self) -> tuple[ssl.SSLContext, float]:
        """The context and its certificate's ``notAfter``: the first PEM block of the chain, read after the
        pair loaded (a rotation landing in between is seen as a new change by the next connection)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(certfile=self.cert_file, keyfile=self.key_file)
        ctx.set_alpn_protocols(["http/1.1"])
        with open(self.cert_file, "rb") as fh:
            cert = x509.load_pem_x509_certificate(fh.read())
        return ctx, cert.not_valid_after_utc.timestamp()

    def load(self) -> ssl.SSLContext:
        """Return the current context, loading the files first when they changed since the last load."""
        try:
            ids = (_file_id(self.cert_file), _file_id(self.key_file))
        except OSError as exc:
            if self._context is None:
                raise CertificateError(f"cannot read certificate files: {exc.strerror}: {exc.filename}") from None
            return self._context
        if ids == self._ids and self._context is not None:
            return self._context
        with self._lock:
            if ids == self._ids and self._context is not None:
                return self._context
            if ids == self._failed_ids and self._context is not None:
                return self._context
            try:
                ctx, not_after = self._build()
            except (ssl.SSLError, OSError, ValueError) as exc:
                self._failed_ids = ids
                if self._on_reload:
                    self._on_reload(False)
                if self._context is None:
                    raise CertificateError(
                        f"cannot load certificate {self.cert_file} with key {self.key_file}: "
                        f"{getattr(exc, 'reason', None) or type(exc).__name__}") from None
                log.warning("certificate reload failed, keeping the previous certificate",
                            extra={"fields": {"event": "tls_reload", "ok": False, "cert_file": self.cert_file,
                                              "error": str(getattr(exc, "reason", "") or type(exc).__name__)}})
                return self._context
            first = self._context is None
            self._context, self._ids, self._failed_ids = ctx, ids, None
            self.not_after = not_after
            if self._on_load:
                self._on_load(not_after)
            if not first:
                self.reloads += 1
                log.info("certificate reloaded", extra={"fields": {"event": "tls_reload", "ok": True,
                                                                   "cert_file": self.cert_file}})
                if self._on_reload:
                    self._on_reload(True)
            return ctx


# ---- self-signed certificates (local use, tests, the demo) ----

@dataclass(frozen=True, slots=True)
class Pair:
    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True, slots=True)
class SelfSigned:
    """Paths of a generated CA and the serving certificate it signed."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_ca(common_name: str = "cos-webhook local CA", days: int = 30) -> tuple[Pair, ec.EllipticCurvePrivateKey,
                                                                                  x509.Certificate]:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return Pair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)), key, cert


def issue_serving(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, hosts: list[str],
                  days: int = 30) -> Pair:
    """A serving certificate for ``hosts`` (DNS names or IP addresses), signed by the CA."""
    key = _key()
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return Pair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def write_private(path: Path, data: bytes) -> None:
    """Write a file readable by its owner only, replacing any previous file atomically."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def write_self_signed(directory: Path, hosts: list[str]) -> SelfSigned:
    """Generate a CA and a serving certificate for ``hosts`` into ``directory``."""
    ca, ca_key, ca_cert = make_ca()
    serving = issue_serving(ca_key, ca_cert, hosts)
    out = SelfSigned(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    write_private(out.ca_file, ca.cert_pem)
    write_private(out.cert_file, serving.cert_pem)
    write_private(out.key_file, serving.key_pem)
    return out

"""Image references as ``docker://`` names them: parsed and normalised as distribution's ``reference`` package
does (``ParseNormalizedNamed``, what skopeo's ``docker://`` transport and OLM v1's catalogs use), so a bundle's
``image`` from a catalog and what an admin types mean the same registry, repository and tag.

``quay.io/org/op-bundle:v1`` names registry ``quay.io``; a first component without a dot or a colon (and not
``localhost``) is a Docker Hub repository (``busybox`` is ``docker.io/library/busybox:latest``). A reference with
neither tag nor digest means the tag ``latest``. Only ``sha256`` and ``sha512`` digests are accepted: the content
pulled is checked against them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from common.bundle.registryv1.model import BundleInputError
from common.bundle.registryv1.oci import digest_parts

DOCKER_TRANSPORT: Final = "docker://"
DOCKER_HUB: Final = "docker.io"
DOCKER_HUB_API: Final = "registry-1.docker.io"  # where docker.io's API answers
DEFAULT_TAG: Final = "latest"
MAX_NAME_LENGTH: Final = 255  # distribution's NameTotalLengthMax (registry and repository, with the slash)

_COMPONENT: Final = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
DOMAIN_COMPONENT: Final = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"   # one label of a registry's name
_DOMAIN: Final = re.compile(rf"{DOMAIN_COMPONENT}(?:\.{DOMAIN_COMPONENT})*(?::[0-9]+)?|\[[a-fA-F0-9:]+\](?::[0-9]+)?")
_PATH: Final = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_TAG: Final = re.compile(r"[\w][\w.-]{0,127}", re.ASCII)


class ImageReferenceError(BundleInputError):
    """Not a well-formed image reference; the message quotes it and says which part is wrong."""


@dataclass(frozen=True, slots=True)
class ImageReference:
    """A normalised reference: ``registry`` as written (``docker.io`` for Docker Hub), ``repository`` below it,
    a ``tag`` (``latest`` when neither tag nor digest was given) and/or a ``digest``."""

    registry: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def name(self) -> str:
        """``registry/repository``: what auth files, certificate directories and registries.conf key on."""
        return f"{self.registry}/{self.repository}"

    @property
    def api_host(self) -> str:
        """Where the registry's API answers (Docker Hub's differs from its name)."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    def pinned(self, digest: str) -> ImageReference:
        """The reference by ``digest``, as OLM v1 records a bundle it pulled (``name@digest``, tag dropped)."""
        return ImageReference(self.registry, self.repository, None, digest)

    def __str__(self) -> str:
        text = self.name
        if self.tag is not None:
            text += f":{self.tag}"
        if self.digest is not None:
            text += f"@{self.digest}"
        return text


def is_image_reference(text: str) -> bool:
    """Whether ``text`` asks for an image from a registry (``docker://...``) rather than a path on disk."""
    return text.startswith(DOCKER_TRANSPORT)


def parse_reference(text: str, *, default_tag: bool = True) -> ImageReference:
    """``text`` (with or without ``docker://``) as a normalised :class:`ImageReference`; raises
    :class:`ImageReferenceError` naming what is wrong. Without ``default_tag``, a name alone stays one (neither tag
    nor digest), as ``ParseNormalizedNamed`` leaves it."""
    raw = text.removeprefix(DOCKER_TRANSPORT)
    shown = f"image reference {text!r}"
    if not raw:
        raise ImageReferenceError(f"{shown}: empty (write docker://REGISTRY/REPOSITORY[:TAG][@DIGEST])")
    remainder, at, digest = raw.partition("@")
    if at and digest_parts(digest) is None:
        raise ImageReferenceError(f"{shown}: invalid digest {digest!r} (sha256:<64 hex> or sha512:<128 hex>, "
                                  "lower case)")
    name, tag = remainder, None
    colon = remainder.rfind(":")
    if colon > remainder.rfind("/"):   # a colon after the last slash starts the tag (not a port)
        name, tag = remainder[:colon], remainder[colon + 1:]
        if not _TAG.fullmatch(tag):
            raise ImageReferenceError(f"{shown}: invalid tag {tag!r} (letters, digits, '_', '.', '-', at most 128, "
                                      "not starting with '.' or '-')")
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        registry, repository = first, rest
        if not _DOMAIN.fullmatch(registry):
            raise ImageReferenceError(f"{shown}: invalid registry {registry!r}")
    else:
        registry, repository = DOCKER_HUB, name
        if not slash:
            repository = f"library/{name}"
    if registry == "index.docker.io":
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in repository:
        repository = f"library/{repository}"   # docker.io/busybox is docker.io/library/busybox
    if not repository or not _PATH.fullmatch(repository):
        raise ImageReferenceError(f"{shown}: invalid repository {repository!r} (lower-case letters, digits and "
                                  "separators '.', '_', '__', '-', in components joined by '/')")
    if len(f"{registry}/{repository}") > MAX_NAME_LENGTH:
        raise ImageReferenceError(f"{shown}: the name is longer than {MAX_NAME_LENGTH} characters")
    if tag is None and not at and default_tag:
        tag = DEFAULT_TAG
    return ImageReference(registry, repository, tag, digest or None)


def parse_named(text: str) -> ImageReference | None:
    """``text`` as distribution's ``ParseNormalizedNamed`` reads an identity a signature claims or a policy names
    (no transport, no tag added), or None when it does not parse."""
    if "://" in text:
        return None
    try:
        return parse_reference(text, default_tag=False)
    except ImageReferenceError:
        return None


def remapping_prefix_valid(text: str) -> bool:
    """Whether ``text`` may be a remapIdentity ``prefix`` or ``signedPrefix``: a registry host alone, or a name
    (no tag, no digest) starting with one (containers/image's validateIdentityRemappingPrefix)."""
    if _DOMAIN.fullmatch(text):
        return True
    host, slash, path = text.partition("/")
    return bool(slash and _DOMAIN.fullmatch(host) and _PATH.fullmatch(path))

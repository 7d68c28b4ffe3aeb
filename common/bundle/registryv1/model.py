"""A loaded registry+v1 bundle as plain data, and the errors every step of this package raises.

The bundle keeps the manifests as the ``dict`` objects they were read as (``Obj``): the rendering code reads
the CSV's fields where it needs them, as OLM v1 reads its typed ``ClusterServiceVersion``.

Three error classes, because ``cosctl`` answers them differently (spec §4):

- :class:`BundleInputError`: the input is not a usable bundle (missing, unreadable, not registry+v1, no or
  several CSVs, a manifest that does not parse). Exit 2.
- :class:`ConfigurationError`: the configuration is refused (OLM v1's messages, byte for byte). Exit 1.
- :class:`RenderError`: OLM v1 refuses to render this bundle (``unsupported bundle: ...`` and the bundle
  validators' messages). Exit 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.contract.objects import Obj

from . import semver

MEDIATYPE_ANNOTATION = "operators.operatorframework.io.bundle.mediatype.v1"
PACKAGE_ANNOTATION = "operators.operatorframework.io.bundle.package.v1"
REGISTRY_V1 = "registry+v1"
ANNOTATIONS_FILE = "metadata/annotations.yaml"


class BundleError(Exception):
    """Base class of this package's errors; ``str(exc)`` is the whole message, ready to print.

    ``hints`` are ours, for printing beside an OLM v1 message that leaves the reader guessing (the fields behind
    ``validation failed``, the file behind ``package name is empty``), so the message itself stays OLM's byte
    for byte."""

    def __init__(self, message: str, hints: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.hints = tuple(hints)


class BundleInputError(BundleError):
    """The input is not a usable registry+v1 bundle; the message names the file and the problem."""


class ConfigurationError(BundleError):
    """The configuration is refused; the message is OLM v1's (``invalid ClusterExtension configuration: ...``)."""


class RenderError(BundleError):
    """OLM v1 refuses to render the bundle; the message is OLM v1's (``unsupported bundle: ...``)."""


@dataclass(slots=True)
class RegistryV1:
    """A registry+v1 bundle as OLM v1's ``bundle.RegistryV1`` holds it.

    ``csv`` has ``metadata/properties.yaml`` already folded into its ``olm.properties`` annotation (as OLM v1's
    bundle source does); ``crds`` are the CustomResourceDefinitions and ``others`` every other manifest, each
    in the order the files were read (file names sorted, documents in file order). ``annotations`` is the
    ``annotations`` map of ``metadata/annotations.yaml``; ``source`` names where the bundle came from, for
    messages.
    """

    package_name: str
    csv: Obj
    crds: list[Obj] = field(default_factory=list)
    others: list[Obj] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    source: str = ""
    # the entries of the dependencies file of metadata/ (OLM v0's dependencies, which OLM v1 does not read)
    dependencies: list[Any] = field(default_factory=list)
    # the image pulled, by digest (``registry/repository@sha256:...``): what OLM v1 records as the bundle's reference
    image: str | None = None

    @property
    def csv_name(self) -> str:
        return str((self.csv.get("metadata") or {}).get("name") or "")

    @property
    def version(self) -> str:
        """``spec.version`` of the CSV (the bundle version) as Go prints OLM's ``OperatorVersion``, which reads it
        with blang/semver's ``ParseTolerant`` (``v1.2`` is ``1.2.0``, what opm records in a catalog and OLM v1 on a
        revision); the text as written when it is no version even so, ``""`` when absent."""
        return semver.printed_tolerant(str((self.csv.get("spec") or {}).get("version") or ""))

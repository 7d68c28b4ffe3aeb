"""Reading the YAML and JSON files of a bundle and of a configuration, as kubectl reads them.

One reader for both, because both must mean the same thing by the same text: YAML as Kubernetes reads it
(:mod:`common.bundle.k8syaml`: YAML 1.1 scalars as Go's YAML-to-JSON converts them, several documents per file),
and every problem named ``file:index`` so that a refusal says where to look.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common.bundle import k8syaml, manifests


def read_documents(path: Path, name: str, problems: list[str], *, max_bytes: int | None = None,
                   warnings: list[str] | None = None, unmarshal: bool = False,
                   unicode: bool = False, reader: str = k8syaml.KUBECTL) -> list[tuple[int, Any]]:
    """(index, value) of each non-empty document of the YAML or JSON file ``path``, read as kubectl reads it
    (:mod:`common.bundle.k8syaml`); what keeps the file or a document from being read goes to ``problems`` as
    ``name:index: ...``. An empty file is no problem here: a bundle's manifest file or a configuration may be
    empty (OLM reads nothing from it). With ``max_bytes``, a longer file (or stream: ``/dev/zero`` never ends)
    is a problem, found after reading one byte more than that. ``warnings``, when given, receives
    ``name:index: ...`` for what kubectl reads without a word (a key written twice: the last value is used).
    ``unmarshal``: read as Go's ``yaml.Unmarshal`` reads a file, where OLM reads it so rather than as a stream of
    manifests: YAML always, the first document only (:func:`common.bundle.k8syaml.read_stream`).
    ``unicode``: decoded as ``kubectl apply -f`` decodes a file (:func:`common.bundle.manifests.text_of`: UTF-16
    with its byte order mark too), for the files a user names; a bundle's files are UTF-8, as OLM v1 reads them
    (its YAML reader splits a UTF-16 file at byte values and refuses it: "yaml: incomplete UTF-16 character").
    ``reader``: who reads the file so, named in messages (``OLM v1`` for a bundle's files)."""
    try:
        with path.open("rb") as handle:
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:
            problems.append(f"{name}: more than {max_bytes} bytes")
            return []
        text = manifests.text_of(data) if unicode else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.encoding != "utf-8":
            problems.append(f"{name}: not UTF-16 text, though it starts with UTF-16's byte order mark")
        elif data.startswith(manifests.UTF16_BYTE_ORDER_MARKS):
            problems.append(f"{name}: not UTF-8 text: UTF-16 (it starts with UTF-16's byte order mark), which OLM v1 "
                            "cannot read in a bundle either; save it as UTF-8")
        else:
            problems.append(f"{name}: not UTF-8 text")
        return []
    except OSError as exc:
        problems.append(f"{name}: cannot read: {exc.strerror or exc}")
        return []
    return manifests.stream_values(name, k8syaml.read_stream(text, unmarshal=unmarshal, reader=reader), problems,
                                   warnings)


def read_file_documents(name: str, what: str, *, max_bytes: int, warnings: list[str] | None = None,
                        error: type[Exception]) -> list[tuple[int, Any]]:
    """:func:`read_documents` of a file the user named (a configuration, a ClusterExtension manifest): a directory,
    a missing file or any problem reading it raises ``error`` naming the file (``what``: what it should have been)."""
    if Path(name).is_dir():
        raise error(f"{name}: is a directory, not a {what}")
    if not Path(name).exists():
        raise error(f"{name}: no such file or directory")
    problems: list[str] = []
    found = read_documents(Path(name), name, problems, max_bytes=max_bytes, warnings=warnings, unicode=True)
    if problems:
        raise error("\n".join(problems))
    return found

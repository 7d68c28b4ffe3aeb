"""Event recording on any object, and the one JSON log line format of both programs."""

from __future__ import annotations

import json
import logging
import sys

from common.cluster.interface import Forbidden
from common.contract.objects import Obj
from common.runtime.logs import JsonFormatter
from common.runtime.recorder import EventRecorder


class Creates:
    """A Cluster that only records what it is asked to create."""

    def __init__(self, fail: bool = False) -> None:
        self.created: list[Obj] = []
        self.fail = fail

    def create(self, obj: Obj, **_: object) -> Obj:
        if self.fail:
            raise Forbidden('events is forbidden: User "x" cannot create resource "events"')
        self.created.append(obj)
        return obj


def test_events_go_to_the_objects_namespace_or_default_once_per_five_minutes() -> None:
    cluster, seen = Creates(), []
    recorder = EventRecorder(cluster, "ctl", "ctl-1", on_recorded=lambda t, r: seen.append((t, r)))  # type: ignore[arg-type]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns", "uid": "u1"}}
    scoped = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "uid": "u2"}}
    assert recorder.record(cm, "Normal", "Done", "all done")
    assert not recorder.record(cm, "Normal", "Done", "all done")          # a repeat
    assert recorder.record(scoped, "Warning", "Stuck", "é" * 600)          # 1200 bytes of UTF-8
    first, second = cluster.created
    assert first["metadata"] == {"generateName": "c.", "namespace": "ns"}
    assert first["involvedObject"] == {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u1",
                                       "resourceVersion": "", "namespace": "ns"}
    assert (second["metadata"]["namespace"], second["involvedObject"]["kind"]) == ("default", "Thing")
    assert second["message"] == "é" * 512                                  # cut at 1 KiB, on a character
    assert seen == [("Normal", "Done"), ("Warning", "Stuck")]
    assert not EventRecorder(Creates(fail=True), "ctl", "ctl-1").record(cm, "Normal", "Done", "x")  # type: ignore[arg-type]


def _line(formatter: JsonFormatter, name: str, *, exc: bool = False) -> dict[str, object]:
    record = logging.LogRecord(name, logging.WARNING, __file__, 1, "token %s", ("s3cret",),
                               sys.exc_info() if exc else None)
    record.fields = {"event": "e"}
    return dict(json.loads(formatter.format(record)))


def test_one_line_format_with_what_each_program_allows() -> None:
    reconciler, webhook = JsonFormatter(), JsonFormatter(literal=("cos_webhook",), tracebacks=False)
    line = _line(reconciler, "reconciler.process")
    assert list(line) == ["ts", "level", "logger", "pid", "msg", "event"]
    assert (line["level"], line["msg"]) == ("warning", "token s3cret")
    assert _line(webhook, "cos_webhook.admission")["msg"] == "token %s"    # never interpolated
    try:
        raise KeyError("s3cret")
    except KeyError:
        full, site = _line(reconciler, "r", exc=True)["exception"], _line(webhook, "cos_webhook", exc=True)["exception"]
    assert str(full).startswith("Traceback") and "s3cret" in str(full)
    assert str(site).startswith("KeyError at ") and "s3cret" not in str(site)

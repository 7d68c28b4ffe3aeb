"""reconciler.drift's memory: what our last write returned, and the once-per-version fingerprint."""

from __future__ import annotations

import copy

from common.contract.api import FIELD_MANAGER
from reconciler.drift import AppliedMemory, fingerprint

INTENT = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "1"}}


def _answer(rv: str, value: str = "1", manager: str = FIELD_MANAGER) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "uid": "u-1", "resourceVersion": rv,
                         "managedFields": [{"manager": manager, "operation": "Apply", "apiVersion": "v1",
                                            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]},
            "data": {"a": value}}


def test_a_new_version_with_the_same_fingerprint_is_remembered_with_its_resource_version() -> None:
    memory = AppliedMemory()
    assert memory.remember(INTENT, _answer("10"))
    rec = memory.record(INTENT, _answer("10"))
    assert rec is not None and rec.resource_version == "10"
    # someone wrote a field that is not ours (a label, a status): a new version, same fingerprint
    labelled = _answer("11")
    labelled["metadata"]["labels"] = {"team": "blue"}
    assert fingerprint(labelled) == rec.fingerprint
    assert memory.unchanged(INTENT, labelled)
    rec = memory.record(INTENT, labelled)
    assert rec is not None and rec.resource_version == "11"
    # our field edited by someone else: a new version, another fingerprint; the record is kept as it was
    edited = _answer("12", value="edited", manager="kubectl-edit")
    assert not memory.unchanged(INTENT, edited)
    assert memory.record(INTENT, edited) == rec


def test_the_same_version_is_not_fingerprinted_again() -> None:
    """Same uid and resourceVersion is the same stored object: its fingerprint was found equal already, so
    the steady state costs a digest of the intent and nothing else (shown with an object a real server never
    sends: different content at the same version)."""
    memory = AppliedMemory()
    memory.remember(INTENT, _answer("10"))
    same_version = copy.deepcopy(_answer("10", value="other"))
    assert memory.unchanged(INTENT, same_version)
    assert not memory.unchanged(INTENT, _answer("13", value="other"))


def test_another_intent_or_another_object_is_never_unchanged() -> None:
    memory = AppliedMemory()
    memory.remember(INTENT, _answer("10"))
    assert not memory.unchanged({**INTENT, "data": {"a": "2"}}, _answer("10"))
    recreated = _answer("10")
    recreated["metadata"]["uid"] = "u-2"
    assert not memory.unchanged(INTENT, recreated)


def test_forget_drops_the_record_of_that_object_only() -> None:
    """A managed object's DELETED event forgets its record (reconciler.process); a late DELETED of an older
    object of the same name, created again since (another uid), leaves the new one's record alone."""
    memory = AppliedMemory()
    memory.remember(INTENT, _answer("10"))
    older = _answer("9")
    older["metadata"]["uid"] = "u-old"
    memory.forget(older)
    assert len(memory) == 1 and memory.seen(_answer("10"))
    memory.forget(_answer("12"))                     # its own DELETED event: same uid, a later version
    assert len(memory) == 0 and not memory.seen(_answer("10"))
    memory.forget(_answer("12"))                     # twice is harmless
    assert len(memory) == 0


def test_seen_is_the_version_our_write_returned_or_one_a_reconcile_found_unchanged() -> None:
    """What the process's event handler asks before waking an object's controller (reconciler.process)."""
    memory = AppliedMemory()
    assert not memory.seen(_answer("10"))            # nothing written yet
    memory.remember(INTENT, _answer("10"))
    assert memory.seen(_answer("10"))                # the echo of our own write
    assert not memory.seen(_answer("11"))            # a newer version: someone else's change
    other_uid = _answer("10")
    other_uid["metadata"]["uid"] = "u-2"
    assert not memory.seen(other_uid)                # deleted and created again by someone else
    assert not memory.seen({**_answer("10"), "metadata": {**_answer("10")["metadata"], "resourceVersion": ""}})
    labelled = _answer("11")
    labelled["metadata"]["labels"] = {"team": "blue"}
    assert memory.unchanged(INTENT, labelled)        # a reconcile looked at version 11 and found it unchanged
    assert memory.seen(labelled)


def test_settled_by_watch_the_answer_is_fingerprinted_only_when_another_version_replaces_it() -> None:
    """The reconciler process's memory: a write's answer is not fingerprinted when it is remembered; the watch
    hands the cached version over when a newer one replaces it, and from then on it judges as the eager one."""
    memory = AppliedMemory(settled_by_watch=True)
    assert memory.remember(INTENT, _answer("10"))
    rec = memory.record(INTENT, _answer("10"))
    assert rec is not None and rec.fingerprint is None and rec.resource_version == "10"
    assert memory.unchanged(INTENT, _answer("10")) and memory.seen(_answer("10"))
    labelled = _answer("11")
    labelled["metadata"]["labels"] = {"team": "blue"}
    assert not memory.unchanged(INTENT, labelled)    # never settled: what we wrote is not known, a dry run decides
    memory.settle(_answer("9"))                      # another version than the one remembered: nothing
    memory.settle({**_answer("10"), "metadata": {**_answer("10")["metadata"], "uid": "u-2"}})   # another object
    assert memory.record(INTENT, _answer("10")).fingerprint is None  # type: ignore[union-attr]
    memory.settle(_answer("10"))                     # version 10 replaced by 11: fingerprinted now
    rec = memory.record(INTENT, labelled)
    assert rec is not None and rec.fingerprint == fingerprint(_answer("10")) and rec.resource_version == "10"
    assert memory.unchanged(INTENT, labelled)        # a label is not ours: unchanged, now at version 11
    assert memory.record(INTENT, labelled).resource_version == "11"  # type: ignore[union-attr]
    assert not memory.unchanged(INTENT, _answer("12", value="edited", manager="kubectl-edit"))


def test_settled_by_watch_remembers_nothing_for_an_answer_without_managed_fields_of_ours() -> None:
    memory = AppliedMemory(settled_by_watch=True)
    memory.remember(INTENT, _answer("10"))
    assert not memory.remember(INTENT, _answer("11", manager="someone-else"))
    assert len(memory) == 0

"""The one backoff: exact without jitter, shortened (never lengthened) with it, and bounded for ever."""

from __future__ import annotations

import pytest

from common.cluster.backoff import Backoff, extra_jitter


def test_doubles_from_the_base_up_to_the_cap() -> None:
    assert [Backoff(0.2, 5.0).delay(n) for n in range(1, 10)] == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0, 5.0]


def test_jitter_shortens_by_at_most_its_fraction() -> None:
    backoff = Backoff(0.1, 30.0, jitter=0.5)
    for n in range(1, 12):
        exact = min(30.0, 0.1 * 2 ** (n - 1))
        assert all(exact / 2 <= backoff.delay(n) <= exact for _ in range(50))


def test_a_retry_after_is_only_ever_lengthened() -> None:
    assert extra_jitter(2.0, 0.0) == 2.0
    assert all(2.0 <= extra_jitter(2.0, 0.5) <= 3.0 for _ in range(50))


def test_thousands_of_failures_stay_at_the_cap() -> None:
    assert Backoff(0.005, 1000.0).delay(5000) == 1000.0


@pytest.mark.parametrize(("base", "cap", "jitter", "message"), [
    (0.0, 1.0, 0.0, "backoff needs 0 < base <= cap, got base 0.0 and cap 1.0"),
    (2.0, 1.0, 0.0, "backoff needs 0 < base <= cap, got base 2.0 and cap 1.0"),
    (0.1, 1.0, 1.5, "backoff jitter must be between 0 and 1, got 1.5"),
])
def test_settings_that_cannot_work_are_refused(base: float, cap: float, jitter: float, message: str) -> None:
    with pytest.raises(ValueError) as info:
        Backoff(base, cap, jitter)
    assert str(info.value) == message

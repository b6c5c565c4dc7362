"""``ninetoothed.runtime.once.Once``: made at most once, whichever thread asks first."""

from __future__ import annotations

import threading
import time

from ninetoothed.runtime.once import Once


def test_threads_asking_at_once_get_one_value_made_once():
    made: list[int] = []

    def make() -> object:
        made.append(1)
        time.sleep(0.05)  # long enough for every thread to ask meanwhile
        return object()

    once = Once(make)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(once())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [1] and len(got) == 8 and all(value is got[0] for value in got)


def test_none_is_remembered_and_an_offer_after_the_decision_is_ignored():
    calls: list[int] = []
    once: Once[object | None] = Once(lambda: calls.append(1))
    assert once() is None and once() is None and calls == [1]
    once.offer("late")
    assert once() is None


def test_an_offer_before_the_first_call_is_the_value():
    once: Once[str] = Once(lambda: "made")
    once.offer("offered")
    assert once() == "offered"

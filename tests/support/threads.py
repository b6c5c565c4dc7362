"""Running one piece of work on several threads released together."""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["run_threads"]


def run_threads(work: Callable[[int], None], count: int = 8) -> list[BaseException]:
    """Run ``work(index)`` on ``count`` threads that start it together (a barrier);
    return what they raised.  Fails when a thread is still running after two minutes."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def thread(index: int) -> None:
        barrier.wait()
        try:
            work(index)
        except BaseException as error:  # noqa: BLE001 - every thread's failure is reported
            errors.append(error)

    threads = [threading.Thread(target=thread, args=(i,)) for i in range(count)]
    for each in threads:
        each.start()
    for each in threads:
        each.join(timeout=120)
    assert not any(each.is_alive() for each in threads), "a thread hangs"
    return errors

"""Tuning together's all-gathers through the default group's store (``nt_torch._distributed``)."""

from __future__ import annotations

import threading

import torch.distributed

from nt_torch._distributed import StoreGather


def _gather_rounds(store, size: int, rounds: int, tag: str = "") -> list[list[list[object]]]:
    """Every rank (a thread each) gathers ``(rank, round, tag)`` ``rounds`` times."""
    answers: list[list[list[object]]] = [[] for _ in range(size)]

    def rank(index: int) -> None:
        gather = StoreGather(store, index, size)
        for number in range(rounds):
            answers[index].append(gather.all_gather((index, number, tag)))

    threads = [threading.Thread(target=rank, args=(index,)) for index in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return answers


def test_every_rank_gets_every_value_in_rank_order_and_old_rounds_are_deleted():
    store = torch.distributed.HashStore()
    answers = _gather_rounds(store, 3, 5)
    for rank in range(3):
        assert answers[rank] == [[(r, n, "") for r in range(3)] for n in range(5)]
    # Rounds 3 and 4 remain (6 keys), and each rank's count of gatherers (3 keys).
    assert store.num_keys() == 6 + 3


def test_a_group_made_again_over_the_same_store_never_reads_the_old_keys():
    store = torch.distributed.HashStore()
    _gather_rounds(store, 2, 1, "first")  # leaves its round 0 keys
    again = _gather_rounds(store, 2, 1, "second")  # new gatherers: round 0 again
    assert again[0] == again[1] == [[(0, 0, "second"), (1, 0, "second")]]

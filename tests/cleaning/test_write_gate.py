"""The write gate: a thread waits while the files held with its own would pass the limit
(unless nothing is held), and threads enter in the order they came, so a file larger than the
limit waits for the files being written, not for a moment when nothing is held, which threads
taking one small file after another never left. Ordered by events, not time (the timeouts
only keep a broken gate from hanging the suite)."""

from __future__ import annotations

import threading

from hrm_assets.cleaning.columnar_outputs import WriteGate

LIMIT = 100


class Holder:
    """A thread holding ``size`` of the gate until :meth:`leave`."""

    def __init__(self, gate: WriteGate, size: int):
        self.entered, self._leave = threading.Event(), threading.Event()
        self.gate, self.size = gate, size
        self.thread = threading.Thread(target=self._hold, daemon=True)
        self.thread.start()

    def _hold(self) -> None:
        with self.gate.hold(self.size):
            self.entered.set()
            self._leave.wait(10)

    def leave(self) -> None:
        self._leave.set()
        self.thread.join(10)


def _waiting(gate: WriteGate, count: int) -> None:
    """Until ``count`` threads have come to the gate (entered or waiting)."""
    for _ in range(1000):
        with gate._changed:
            if gate._arrived >= count:
                return
        threading.Event().wait(0.01)
    raise AssertionError("the threads never came to the gate")


def test_files_within_the_limit_are_written_together():
    gate = WriteGate(LIMIT)
    first, second = Holder(gate, 40), Holder(gate, 60)
    assert first.entered.wait(10) and second.entered.wait(10)
    assert gate.used == LIMIT
    first.leave()
    second.leave()
    assert gate.used == 0


def test_a_large_file_is_not_overtaken_by_small_ones_that_came_after_it():
    gate = WriteGate(LIMIT)
    small = Holder(gate, 10)
    assert small.entered.wait(10)
    large = Holder(gate, 3 * LIMIT)  # waits: 10 + 300 would pass the limit
    _waiting(gate, 2)
    later = Holder(gate, 10)  # would fit beside the first, but came after the large one
    _waiting(gate, 3)
    assert not large.entered.is_set() and not later.entered.is_set()
    small.leave()
    assert large.entered.wait(10)  # alone: nothing else is held
    assert not later.entered.is_set() and gate.used == 3 * LIMIT
    large.leave()
    assert later.entered.wait(10)
    later.leave()
    assert gate.used == 0


def test_what_is_held_is_given_back_even_when_the_write_fails():
    gate = WriteGate(LIMIT)
    try:
        with gate.hold(LIMIT):
            raise OSError("disk full")
    except OSError:
        pass
    assert gate.used == 0
    holder = Holder(gate, LIMIT)
    assert holder.entered.wait(10)
    holder.leave()

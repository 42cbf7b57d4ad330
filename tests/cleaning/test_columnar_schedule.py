"""The engine's schedule of reads and writes (``columnar_clean._Schedule``).

A part's files are written by a worker the reads leave while the next part is
read (both cores busy to the end), on one thread right after the part is read, its stores
closed once after its last file; a failure stops the run and the one raised is the serial
engine's.
"""

from __future__ import annotations

import threading

import pytest

from hrm_assets.cleaning.columnar_clean import _Schedule
from hrm_assets.cleaning.columnar_outputs import PartWrites

WAIT = 30  # seconds a test waits for another worker before it fails


class Run:
    """Fake units: reading one logs it and queues its part's ``files`` writes; a read or a
    write named in ``waits`` first waits for the event logged under the name given there."""

    def __init__(self, threads: int, units: list[str], files: int = 2):
        self.schedule = _Schedule(list(enumerate(units)), threads)
        self.files = files
        self.log: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.waits: dict[str, str] = {}
        self.logged: dict[str, threading.Event] = {}

    def note(self, what: str) -> None:
        with self.lock:
            self.log.append((what, threading.current_thread().name))
            self.logged.setdefault(what, threading.Event()).set()

    def wait(self, what: str) -> None:
        if what in self.waits:
            with self.lock:
                event = self.logged.setdefault(self.waits[what], threading.Event())
            assert event.wait(WAIT), f"{what} waited for {self.waits[what]} in vain"

    def read(self, unit: str) -> None:
        self.note(f"read {unit}")
        self.wait(f"read {unit}")
        self.note(f"read {unit} done")
        self.schedule.write(
            PartWrites(
                [lambda n=n: self.write(unit, n) for n in range(self.files)],
                lambda: self.note(f"close {unit}"),
            )
        )

    def write(self, unit: str, number: int) -> None:
        self.wait(f"write {unit}{number}")
        self.note(f"write {unit}{number}")

    def events(self) -> list[str]:
        return [what for what, _ in self.log]

    def threads(self, prefix: str) -> set[str]:
        return {thread for what, thread in self.log if what.startswith(prefix)}


def test_a_parts_files_are_written_while_the_next_part_is_read():
    run = Run(2, ["a", "b", "c"])
    run.waits = {
        "read b": "write a0",  # a's files are written while b is read
        "write a1": "read b done",  # ... the other worker still writing when b is read
        "read c": "write b0",  # b's reader reads c, b's files written meanwhile
    }
    run.schedule.run(run.read)
    events = run.events()
    assert events.index("write a0") < events.index("read b done")
    assert events.index("read c") < events.index("write b0")
    assert run.threads("read b") == run.threads("read c")
    assert (run.threads("write a") | run.threads("write b0")).isdisjoint(run.threads("read b"))
    for unit in "abc":
        assert events.count(f"close {unit}") == 1
        assert events.index(f"close {unit}") > max(
            events.index(f"write {unit}{n}") for n in range(run.files)
        )


def test_on_one_thread_a_parts_files_are_written_before_the_next_part_is_read():
    run = Run(1, ["a", "b", "c"])
    run.schedule.run(run.read)
    expected = []
    for unit in "abc":
        expected += [f"read {unit}", f"read {unit} done", f"write {unit}0", f"write {unit}1"]
        expected.append(f"close {unit}")
    assert run.events() == expected


def test_a_part_without_files_is_closed_at_once():
    run = Run(2, ["a"], files=0)
    run.schedule.run(run.read)
    assert run.events() == ["read a", "read a done", "close a"]


@pytest.mark.parametrize("threads", [1, 2])
def test_the_error_raised_is_the_earliest_in_serial_order(threads):
    b_failed = threading.Event()

    def read(unit: str) -> None:
        if unit == "a":
            if threads > 1:
                assert b_failed.wait(WAIT)  # the later unit fails first
            raise OSError("a is damaged")
        if unit == "b":
            b_failed.set()
            raise ValueError("b is damaged")

    schedule = _Schedule(list(enumerate(["a", "b"])), threads)
    with pytest.raises(OSError, match="a is damaged"):
        schedule.run(read)


def test_after_a_failure_nothing_more_is_read_or_written():
    run = Run(1, ["a", "b"])

    def failing_write() -> None:
        raise OSError("disk full")

    def read(unit: str) -> None:
        run.note(f"read {unit}")
        run.schedule.write(PartWrites([failing_write], lambda: run.note(f"close {unit}")))

    with pytest.raises(OSError, match="disk full"):
        run.schedule.run(read)
    assert run.events() == ["read a"]  # the engine closes every unit after the run


def test_an_interrupt_waits_for_the_workers_and_starts_nothing_more(monkeypatch):
    # Ctrl-C lands in the main thread's join: the engine closes the units' stores once the
    # run returns, so the run must not return while a worker still reads one.
    run = Run(2, ["a", "b", "c"])
    run.waits = {"read a": "go", "read b": "go"}
    real_join = threading.Thread.join
    interrupted: list[threading.Thread] = []

    def join(thread: threading.Thread, timeout: float | None = None) -> None:
        if not interrupted:
            interrupted.append(thread)
            for read in ("read a", "read b"):  # both workers busy when the interrupt comes
                with run.lock:
                    event = run.logged.setdefault(read, threading.Event())
                assert event.wait(WAIT)
            raise KeyboardInterrupt
        real_join(thread, timeout)

    def release_after_the_interrupt() -> None:
        with run.schedule._changed:
            assert run.schedule._changed.wait_for(lambda: run.schedule.errors, WAIT)
        run.note("go")

    monkeypatch.setattr(threading.Thread, "join", join)
    threading.Thread(target=release_after_the_interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run.schedule.run(run.read)
    assert {"read a done", "read b done"} <= set(run.events())  # waited for, not abandoned
    assert "read c" not in run.events() and not any(e.startswith("write") for e in run.events())
    assert not [t for t in threading.enumerate() if t.name.startswith("clean_")]

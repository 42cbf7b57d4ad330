"""Progress of a cleaning run in records/s and raw MB/s: a bar on the terminal
(:class:`ProgressMeter`) or lines in a log (:class:`ProgressLog`, the Dagster asset's)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class ProgressMeter:
    """Feeds a tqdm bar from ``clean_source``'s callbacks (possibly from several threads):
    rows per second on the bar, raw MB/s beside it."""

    def __init__(self, bar):
        self.bar = bar
        self.started = time.monotonic()
        self.bytes = 0
        self._lock = threading.Lock()

    def records(self, count: int) -> None:
        with self._lock:
            self.bar.update(count)

    def raw_bytes(self, count: int) -> None:
        with self._lock:
            self.bytes += count
            elapsed = max(time.monotonic() - self.started, 1e-9)
            self.bar.set_postfix_str(
                f"{self.bytes / 1e6:,.0f} MB raw, {self.bytes / 1e6 / elapsed:,.1f} MB/s",
                refresh=False,
            )


class ProgressLog:
    """``clean_source``'s progress callbacks as a line to ``log`` every ``interval`` seconds
    (the cleaned asset's Dagster log): records and raw bytes so far, records/s and MB/s."""

    def __init__(self, log: Callable[[str], None], name: str, interval: float = 10.0):
        self.log, self.name, self.interval = log, name, interval
        self.started = self.last = time.monotonic()
        self.count = self.bytes = 0
        self._lock = threading.Lock()

    def records(self, count: int) -> None:
        with self._lock:
            self.count += count
            now = time.monotonic()
            if now - self.last < self.interval:
                return
            self.last = now
            elapsed = max(now - self.started, 1e-9)
            message = (
                f"{self.name}: {self.count:,} records read, {self.count / elapsed:,.0f} records/s"
            )
            if self.bytes:
                message += (
                    f", {self.bytes / 1e6:,.0f} MB raw, {self.bytes / 1e6 / elapsed:,.1f} MB/s"
                )
        self.log(message)

    def raw_bytes(self, count: int) -> None:
        with self._lock:
            self.bytes += count

"""How a benchmark measures one run: in a fresh interpreter, timing and peak memory its own.

A child (``python -m bench.<module> --child ...``) times only the measured work (imports and
setup excluded), in wall and CPU seconds, and reports two memory figures:

- ``peak_rss_bytes``: the process's peak resident set (``VmHWM``), which also counts the pages
  of memory-mapped files it touched (reclaimable page cache, or RAM-disk pages on ``/dev/shm``);
- ``peak_anon_bytes``: the peak of its anonymous memory (``RssAnon``: heap, arrays, buffers),
  polled every few milliseconds while the work runs, so a spike shorter than that is missed.

A fresh process per run keeps one run's peak from hiding another's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.cleaning_memory import peak_rss_bytes

REPO_ROOT = Path(__file__).resolve().parent.parent
POLL_SECONDS = 0.005


def anon_rss_bytes() -> int:
    """This process's current anonymous resident memory (0 where /proc is unavailable)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class AnonPeak:
    """Context manager polling ``RssAnon`` in a thread; ``peak`` holds the highest value seen."""

    def __init__(self, interval: float = POLL_SECONDS):
        self.interval = interval
        self.peak = anon_rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, anon_rss_bytes())

    def __enter__(self) -> AnonPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, anon_rss_bytes())


def measured(work: Callable[[], Any]) -> dict:
    """Run ``work()`` and return its wall and CPU seconds (all threads), peak memory and
    ``value`` (what ``work`` returned, which must be JSON-serialisable).

    On a machine shared with other work, CPU seconds vary less than wall seconds.
    """
    with AnonPeak() as anon:
        cpu = time.process_time()
        started = time.perf_counter()
        value = work()
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_anon_bytes": anon.peak,
        "value": value,
    }


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a child: this one, with the repository importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def run_child(module: str, args: Sequence[str], extra_env: dict[str, str] | None = None) -> dict:
    """Run ``python -m <module> --child <args>`` and return the JSON object it prints last.

    Raises ``RuntimeError`` with the end of the child's stderr if it fails.
    """
    command = [sys.executable, "-m", module, "--child", *map(str, args)]
    done = subprocess.run(
        command,
        env=child_env(extra_env),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command[2:])} failed ({done.returncode}):\n{done.stderr[-4000:]}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])

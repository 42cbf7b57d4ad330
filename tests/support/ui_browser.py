"""Helpers for the browser UI test: a Dagster webserver and headless Chromium over DevTools.

Everything stays on loopback and nothing is fetched from the internet: Chromium runs with
``--no-proxy-server`` and the HTTP/websocket clients here ignore proxy environment variables.
The DevTools client is the few Chrome DevTools Protocol calls the test needs (navigate,
evaluate JavaScript, capture a screenshot) over the ``websockets`` package's sync client.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# urllib without the proxy environment variables: every request here goes to 127.0.0.1.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def find_chromium() -> str | None:
    """The Chromium binary: ``$HRM_CHROMIUM`` if set, else the first browser on PATH."""
    override = os.environ.get("HRM_CHROMIUM")
    if override:
        return override
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_get(url: str, timeout: float = 5.0) -> bytes:
    with _HTTP.open(url, timeout=timeout) as response:
        return response.read()


def graphql(base_url: str, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(
        f"{base_url}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with _HTTP.open(request, timeout=30) as response:
        payload = json.loads(response.read())
    if payload.get("errors"):
        raise AssertionError(f"GraphQL errors: {payload['errors']}")
    return payload["data"]


class GiveUp(Exception):
    """Raised by a ``wait_until`` probe when waiting longer cannot help (a process died)."""


def wait_until(probe: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    """Call ``probe`` until it returns something truthy; fail with ``what`` after ``timeout``.

    Errors from the probe count as "not yet" (the last one is reported on timeout), except
    ``GiveUp``, which ends the wait at once.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = probe()
            if value:
                return value
        except GiveUp:
            raise
        except Exception as error:  # reported if the wait times out
            last_error = error
        if time.monotonic() > deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


def start_process_group(
    args: Sequence[str], log_path: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen:
    """Start ``args`` in a new session (its own process group), output into ``log_path``."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )


def stop_process_group(process: subprocess.Popen, grace: float = 20.0) -> None:
    """SIGTERM the process group of ``process``, SIGKILL it if it is still there after ``grace``."""
    try:
        pgid = os.getpgid(process.pid)
    except ProcessLookupError:
        process.poll()
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; make sure nothing else in its group outlives it.
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        break
    process.poll()


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class DevToolsPage:
    """One Chromium tab driven over the DevTools protocol."""

    def __init__(self, websocket_url: str) -> None:
        self._exit = ExitStack()
        self._socket = self._exit.enter_context(
            connect(websocket_url, max_size=None, proxy=None, open_timeout=15)
        )
        self._next_id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")

    def close(self) -> None:
        self._exit.close()

    def call(self, method: str, timeout: float = 30.0, **params: Any) -> dict:
        self._next_id += 1
        message_id = self._next_id
        self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"DevTools call {method} got no answer in {timeout:.0f}s")
            message = json.loads(self._socket.recv(timeout=remaining))
            if message.get("id") != message_id:
                continue  # an event, or the answer to an abandoned call
            if "error" in message:
                raise RuntimeError(f"DevTools call {method} failed: {message['error']}")
            return message.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"JavaScript failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def navigate(self, url: str) -> None:
        result = self.call("Page.navigate", url=url)
        if result.get("errorText"):
            raise RuntimeError(f"navigation to {url} failed: {result['errorText']}")

    def set_viewport(self, width: int, height: int) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def wait_for_js(self, expression: str, timeout: float, what: str) -> Any:
        """Poll a JavaScript expression until its value is truthy; return that value."""
        return wait_until(lambda: self.evaluate(expression), timeout, what)

    def text(self) -> str:
        """The page's visible text (``innerText`` of the body)."""
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def wait_for_text(self, needles: Sequence[str], timeout: float = 45.0) -> str:
        """Poll the visible text until every needle is in it; return that text."""
        last = {"text": ""}

        def probe() -> str | None:
            last["text"] = self.text()
            return last["text"] if all(n in last["text"] for n in needles) else None

        try:
            return wait_until(probe, timeout, f"text {list(needles)} on the page")
        except TimeoutError as error:
            missing = [n for n in needles if n not in last["text"]]
            raise AssertionError(
                f"{error}; missing {missing}; the page shows:\n{last['text'][:3000]}"
            ) from None

    def click_text(self, text: str) -> bool:
        """Click the innermost element whose own visible text is exactly ``text``."""
        script = f"""
            (() => {{
              const wanted = {json.dumps(text)};
              const all = Array.from(document.querySelectorAll('body *'));
              const hits = all.filter(e => e.innerText && e.innerText.trim() === wanted);
              const innermost = hits.filter(e => !hits.some(o => o !== e && e.contains(o)));
              if (!innermost.length) return false;
              innermost[0].scrollIntoView({{block: 'center'}});
              innermost[0].click();
              return true;
            }})()
        """
        return bool(self.evaluate(script))

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path


class HeadlessChromium:
    """A headless Chromium with its DevTools endpoint on 127.0.0.1 (a port it picks itself)."""

    def __init__(
        self, binary: str, profile_dir: Path, log_path: Path, window: tuple[int, int] = (1600, 1000)
    ) -> None:
        self.profile_dir = profile_dir
        profile_dir.mkdir(parents=True, exist_ok=True)
        # A port file left by an earlier browser on this profile would point at a dead port.
        (profile_dir / "DevToolsActivePort").unlink(missing_ok=True)
        args = [
            binary,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",  # CI runs as root; the sandbox refuses to start as root
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-proxy-server",
            "--hide-scrollbars",
            "--mute-audio",
            f"--window-size={window[0]},{window[1]}",
            f"--user-data-dir={profile_dir}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "about:blank",
        ]
        self.log_path = log_path
        self.process = start_process_group(args, log_path)

    def _devtools_port(self) -> int | None:
        if self.process.poll() is not None:
            raise GiveUp(
                f"chromium exited with {self.process.returncode}:\n{log_tail(self.log_path)}"
            )
        port_file = self.profile_dir / "DevToolsActivePort"
        try:
            first_line = port_file.read_text().splitlines()[0]
        except (OSError, IndexError):
            return None
        return int(first_line)

    def open_page(self, timeout: float = 30.0) -> DevToolsPage:
        port = wait_until(self._devtools_port, timeout, "Chromium's DevTools port")
        base = f"http://127.0.0.1:{port}"

        def page_target() -> str | None:
            targets = json.loads(http_get(f"{base}/json/list"))
            pages = [t for t in targets if t.get("type") == "page"]
            return pages[0]["webSocketDebuggerUrl"] if pages else None

        return DevToolsPage(wait_until(page_target, timeout, "a Chromium page target"))

    def stop(self) -> None:
        stop_process_group(self.process, grace=5.0)

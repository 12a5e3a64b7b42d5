"""A real headless Chromium driven over the DevTools protocol, for tests that click.

``--dump-dom`` and ``--screenshot`` (``test_report_in_chromium.chromium``) read a page once;
the rollout viewer needs more: choose a filter, follow a link, wait for a script the page loads
on demand, read the DOM again. This speaks the DevTools protocol over ``--remote-debugging-pipe``
(JSON messages ending in a NUL byte on file descriptors 3 and 4), so it needs no library and
opens no port. The browser runs with the same flags as the report's test: headless, no sandbox,
no GPU, no background networking, a fresh profile.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests.browser.test_report_in_chromium import BROWSER_TIMEOUT_S, CHROMIUM

WAIT_S = 30.0
"""How long ``Page.wait`` waits for a condition: a guard against a hung page, not a performance bound."""


class BrowserError(RuntimeError):
    """The browser answered a command with an error, died, or a page never reached a condition."""


class Chromium:
    """One headless Chromium process; ``page(url)`` opens a tab. Use as a context manager."""

    def __init__(self, profile: Path, *, width: int = 1280, height: int = 900) -> None:
        commands_read, self._commands = os.pipe()  # we write commands; the browser reads fd 3
        self._replies, replies_write = os.pipe()  # the browser writes fd 4; we read replies

        def descriptors() -> None:  # in the child, before exec: the pipe ends where Chromium looks for them
            ends = os.dup(commands_read), os.dup(replies_write)  # above 4, so neither dup2 below clobbers the other end
            os.dup2(ends[0], 3)  # dup2's copies are inherited by the browser
            os.dup2(ends[1], 4)

        self.process = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,  # every other descriptor of ours is close-on-exec (PEP 446)
            preexec_fn=descriptors,  # noqa: PLW1509 - a test helper, started from the test's one thread
        )
        os.close(commands_read)
        os.close(replies_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.width, self.height = width, height

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(BrowserError, OSError):
                self.send("Browser.close")
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for fd in (self._commands, self._replies):
            with contextlib.suppress(OSError):
                os.close(fd)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """One command; its result (events that arrive meanwhile go to ``events``)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + BROWSER_TIMEOUT_S
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("the browser did not answer in time")
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise BrowserError(f"the browser exited (code {self.process.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        decoded: dict[str, Any] = json.loads(message)
        return decoded

    def page(self, url: str) -> Page:
        """A new tab at ``url``, once its document has loaded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.send("Page.enable")
        page.send("Runtime.enable")
        page.send("Log.enable")
        page.goto(url)
        return page


class Page:
    """One tab: navigate, evaluate, click, wait, screenshot."""

    def __init__(self, browser: Chromium, session: str) -> None:
        self.browser = browser
        self.session = session

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.send(method, params, self.session)

    def goto(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})
        self.wait("document.readyState === 'complete' && location.href === " + json.dumps(url))

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result["result"].get("value")

    def wait(self, condition: str, timeout: float = WAIT_S) -> None:
        """Poll a JavaScript expression until it is truthy (an element counts: it is tested in the page)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(f"!!({condition})")
            except BrowserError:
                value = None  # the page is between documents
            if value:
                return
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {condition}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click (pressed and released) at the middle of the first element ``selector`` finds."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if box is None:
            raise BrowserError(f"nothing to click: {selector}")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def select(self, selector: str, value: str) -> None:
        """Choose an option of a ``<select>`` as a user would: the value changes, then a change event."""
        done = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false;"
            f" e.value = {json.dumps(value)}; e.dispatchEvent(new Event('change', {{bubbles: true}}));"
            f" return e.value === {json.dumps(value)}; }})()"
        )
        if not done:
            raise BrowserError(f"cannot choose {value!r} in {selector}")

    def screenshot(self, path: Path, *, full_page: bool = True) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.evaluate("[document.documentElement.scrollWidth, Math.min(document.documentElement.scrollHeight, 8000)]")
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1})
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", params)["data"]))

    def console_errors(self) -> list[str]:
        """Errors the page reported (exceptions, CSP violations logged to the console) so far."""
        found = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            if event.get("method") == "Runtime.exceptionThrown":
                found.append(str(event["params"]["exceptionDetails"].get("exception", {}).get("description")))
            elif event.get("method") == "Log.entryAdded" and event["params"]["entry"].get("level") == "error":
                found.append(str(event["params"]["entry"].get("text")))
            elif event.get("method") == "Runtime.consoleAPICalled" and event["params"].get("type") == "error":
                found.append(" ".join(str(arg.get("value")) for arg in event["params"].get("args", [])))
        return found

"""Loads a page in headless Chromium over the DevTools protocol and reports
every request the browser saw, with what the page wrote into
``<pre id="selftest">``.

The browser is driven through ``--remote-debugging-pipe`` (NUL-separated
JSON messages on file descriptors 3 and 4), so no websocket library is
needed. ``Network.requestWillBeSent`` fires for every request the page
starts, including the ones its Content-Security-Policy then blocks
(``Network.loadingFailed`` with a ``blockedReason``) and the ones no host
resolves for: a page that never leaves itself shows none but its own
document.

Usage: cdp.py CHROMIUM URL PROFILE_DIR
Prints one JSON object: {"selftest": text or null, "requests": [{"url",
"blocked"}], "document": the page's own URL as the browser requested it}.
"""

import json
import os
import subprocess
import sys
import time

TIMEOUT_S = 60


class Browser:
    """A headless Chromium and its DevTools pipe."""

    def __init__(self, chromium, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def browser_fds():
            # In the child: the browser reads fd 3 and writes fd 4 (moved
            # up first, so that neither dup2 overwrites the other's source).
            r, w = 1000, 1001
            os.dup2(to_browser_r, r)
            os.dup2(from_browser_w, w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--window-size=1400,1000",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=browser_fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        """Sends a command and returns its result (events seen meanwhile are kept)."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def receive(self):
        """The next message of the browser."""
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self):
        """Ends the browser."""
        try:
            self.send("Browser.close")
        except RuntimeError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main():
    chromium, url, profile = sys.argv[1:4]
    browser = Browser(chromium, profile)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.send("Network.enable", session=session)
        browser.send("Page.enable", session=session)
        browser.send("Page.navigate", {"url": url}, session=session)
        selftest = None
        deadline = time.monotonic() + TIMEOUT_S
        probe = "(() => { const e = document.getElementById('selftest'); return e && !e.hidden ? e.textContent : null; })()"
        while time.monotonic() < deadline:
            value = browser.send("Runtime.evaluate", {"expression": probe, "returnByValue": True}, session=session)
            selftest = value["result"].get("value")
            if selftest:
                break
            time.sleep(0.2)
        # Let late loads (a timer, an image) show up before counting.
        time.sleep(1.0)
        browser.send("Runtime.evaluate", {"expression": "1"}, session=session)
    finally:
        browser.close()
    sent = {}
    for event in browser.events:
        params = event.get("params", {})
        if event.get("method") == "Network.requestWillBeSent":
            sent[params["requestId"]] = {"url": params["request"]["url"], "blocked": None}
        elif event.get("method") == "Network.loadingFailed" and params.get("requestId") in sent:
            sent[params["requestId"]]["blocked"] = params.get("blockedReason") or params.get("errorText")
    requests = [r for r in sent.values() if r["url"] != url.split("#")[0]]
    print(json.dumps({"selftest": selftest, "requests": requests, "document": url.split("#")[0]}))


if __name__ == "__main__":
    main()

"""Record a real Perfetto protobuf trace from headless Chromium through the DevTools protocol.

Playwright's CDP session: ``Tracing.start`` with ``transferMode: "ReturnAsStream"`` and
``streamFormat: "proto"``, a local page that does real JavaScript work (sorting, a recursive
fibonacci, canvas drawing, timers, ``performance.mark/measure`` and console.time), then
``Tracing.end`` and ``IO.read`` of the returned stream until ``eof``.  Writes the trace gzipped.

    python scripts/record_perfetto_trace.py tests/data/chromium_perfetto.pftrace.gz [--seconds 2]

Needs ``playwright`` (test extra) and Debian's ``/usr/bin/chromium``.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import http.server
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

PAGE = """<!doctype html><html><body><canvas id=c width=400 height=300></canvas><script>
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function work(round) {
  performance.mark("round-start-" + round);
  console.time("round " + round);
  const a = Array.from({length: 20000}, (_, i) => (i * 7919) % 10007);
  a.sort((x, y) => x - y);
  fib(20 + (round % 4));
  const ctx = document.getElementById("c").getContext("2d");
  for (let i = 0; i < 200; i++) { ctx.fillStyle = `hsl(${(i * 13 + round) % 360},70%,50%)`;
    ctx.fillRect((i * 17) % 400, (i * 29) % 300, 20, 20); }
  const div = document.createElement("div"); div.textContent = "round " + round;
  document.body.appendChild(div);
  console.timeEnd("round " + round);
  performance.measure("round " + round, "round-start-" + round);
}
let round = 0;
function tick() { work(round++); if (round < ROUNDS) setTimeout(tick, 10); else document.title = "done"; }
requestAnimationFrame(tick);
</script></body></html>"""

CATEGORIES = ["devtools.timeline", "v8.execute", "blink.user_timing", "toplevel", "blink.console",
              "disabled-by-default-devtools.timeline", "latencyInfo", "benchmark", "blink", "cc", "gpu",
              "disabled-by-default-devtools.timeline.frame", "v8", "loading"]


def record(out: Path, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as root:
        Path(root, "index.html").write_text(PAGE.replace("ROUNDS", str(rounds)))
        handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=root)  # noqa: E731
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=[
                    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"])
                page = browser.new_page()
                cdp = page.context.new_cdp_session(page)
                done = threading.Event()
                stream: dict[str, str] = {}

                def complete(params: dict) -> None:
                    stream["handle"] = params["stream"]
                    done.set()

                cdp.on("Tracing.tracingComplete", complete)
                cdp.send("Tracing.start", {"transferMode": "ReturnAsStream", "streamFormat": "proto",
                                           "traceConfig": {"includedCategories": CATEGORIES}})
                page.goto(f"http://127.0.0.1:{server.server_port}/index.html")
                page.wait_for_function("document.title === 'done'", timeout=60_000)
                cdp.send("Tracing.end")
                while not done.is_set():
                    page.wait_for_timeout(100)
                data = bytearray()
                while True:
                    chunk = cdp.send("IO.read", {"handle": stream["handle"], "size": 1 << 20})
                    piece = chunk.get("data", "")
                    data += base64.b64decode(piece) if chunk.get("base64Encoded") else piece.encode("latin-1")
                    if chunk.get("eof"):
                        break
                cdp.send("IO.close", {"handle": stream["handle"]})
                browser.close()
        finally:
            server.shutdown()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip.compress(bytes(data), mtime=0) if out.suffix == ".gz" else bytes(data))
    return len(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=20, help="rounds of page work (default 20)")
    args = parser.parse_args()
    size = record(args.out, args.rounds)
    print(f"{args.out}: {size} bytes of Perfetto protobuf ({args.out.stat().st_size} on disk)")


if __name__ == "__main__":
    main()

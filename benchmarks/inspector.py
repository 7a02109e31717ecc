"""How fast the web inspector shows a scope of 1,000 memories, in headless Chromium.

A real `fourfold serve` (hash embedder: embedding is not what is measured) holds one scope of
`--memories` memories (with metadata, and 20 episodes). Each load is cold: a fresh browser
context (no cache) opens /ui#/scope?name=... and the time runs from navigation start to the
first animation frame after the view holds every row (the page records it as
`main[data-shown-at]`, in its own `performance.now()`, which counts from navigation start).
The page builds the first 100 rows before it shows the view and the rest in chunks after it:
`all_rows` is the time until every row is in the page and painted. Also printed: the same page
on an empty scope (the same-process baseline, which the ratio divides by), the two API calls
alone, and the page's own rendering time. The goal is a load under 300 ms.

    python benchmarks/inspector.py [--memories 1000] [--loads 15]

The last line:

    inspector: memories=N load_p50_ms=X load_p95_ms=X empty_p50_ms=X ratio=X all_rows_p50_ms=X api_p50_ms=X render_p50_ms=X
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from fourfold import Memory
from fourfold.embeddings import HashEmbedder
from fourfold.service.testing import LiveService

SCOPE = "customer:bench-1000"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def seed(data: Path, n: int) -> None:
    with Memory.open(data, embedder=HashEmbedder()) as mem:
        items = [{"text": f"Memory {i}: the customer mentioned order {1000 + i} and prefers delivery on day {i % 28}",
                  "scope": SCOPE, "kind": ("note", "preference", "fact")[i % 3],
                  "metadata": {"source": "chat", "turn": i, "thread": f"t{i // 50}"}} for i in range(n)]
        for start in range(0, n, 500):
            mem.long_term.remember_many(items[start : start + 500])
        mem.episodes.record_many([{"goal": f"ticket {i}", "actions": ["looked it up"], "outcome": "resolved",
                                   "success": True, "scope": SCOPE} for i in range(20)])
        mem.long_term.remember("the only one", scope="customer:empty")


#: Runs in the page: resolves, once every row is in the list and a frame has been painted after
#: that, to [shown, render, complete] in ms (complete counts from navigation start too).
COMPLETE = """async () => {
    const main = document.querySelector('main');
    const list = main.querySelector('ul.memories');
    while (list && !list.dataset.complete) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r)));
    return [Number(main.dataset.shownAt), Number(main.dataset.renderMs), performance.now()];
}"""


def load(browser: object, url: str) -> tuple[float, float, float]:
    """One cold load: ms from navigation start to the view painted, ms the view took to build,
    and ms from navigation start to every row in the page (and painted)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("main[data-ready='1']")
    shown, render, complete = (float(x) for x in page.evaluate(COMPLETE))
    context.close()
    return shown, render, complete


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--loads", type=int, default=15)
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("inspector: needs chromium (apt-get install -y chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="fourfold-inspector-") as tmp:
        data = Path(tmp) / "data"
        seed(data, args.memories)
        with LiveService(data, serve_args=["--model", "offline"]) as live, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
            full = f"{live.url}/ui#/scope?name={quote(SCOPE)}"
            empty = f"{live.url}/ui#/scope?name={quote('customer:empty')}"
            load(browser, full)  # warm the service's scope index and the browser's process
            loads, renders, completes, empties, apis = [], [], [], [], []
            for _ in range(args.loads):
                ready, render, complete = load(browser, full)
                loads.append(ready)
                renders.append(render)
                completes.append(complete)
                empties.append(load(browser, empty)[0])
                started = time.perf_counter()
                shown = httpx.get(f"{live.url}/v1/memories", params={"scope": SCOPE}).json()["results"]
                httpx.get(f"{live.url}/v1/episodes", params={"scope": SCOPE})
                apis.append((time.perf_counter() - started) * 1000)
            browser.close()
    assert len(shown) == args.memories
    p50, p95 = statistics.median(loads), sorted(loads)[max(0, round(0.95 * len(loads)) - 1)]
    empty50 = statistics.median(empties)
    print(f"inspector: memories={args.memories} load_p50_ms={p50:.0f} load_p95_ms={p95:.0f} "
          f"empty_p50_ms={empty50:.0f} ratio={p50 / empty50:.2f} all_rows_p50_ms={statistics.median(completes):.0f} "
          f"api_p50_ms={statistics.median(apis):.0f} render_p50_ms={statistics.median(renders):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

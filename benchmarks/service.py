"""Service load benchmark: many concurrent clients on loopback, then every acknowledged write is read back.

Starts `fourfold serve` on a fresh data dir (or uses --url), seeds a few tenants, and runs
--clients concurrent clients for --duration seconds with a support-desk mix: 70% recall,
20% remember, 10% episodes and facts. Afterwards every write the service acknowledged is
fetched again; one that is missing counts as lost.

    python benchmarks/service.py [--clients 50] [--duration 60] [--embedder minilm|hash]
                                 [--tenants 4] [--scopes 25] [--think-ms 0] [--client lean|httpx]
                                 [--query-model int8|exact] [--ramp-s 0] [--window-s 10]
                                 [--workers 2] [--store postgres] [--replicas 2]
                                 [--url URL --key TENANT=KEY ...]

Two phases measure two things:

- Throughput: --clients closed-loop clients (each sends its next request as soon as the last
  one is answered) for --duration seconds; requests per second. Its latency only restates
  Little's law (clients / throughput), so it is printed but not the verdict.
- Latency: an open loop at a fixed offered rate (--rate requests/s, the same mix) for
  --open-s seconds, each request timed from when it was due (so queueing counts), plus
  visibility: for a sample of acknowledged writes, how long until a recall finds the memory.

The last line is ``service: rps=X rate=X recall_p95_ms=X remember_p95_ms=X visible_p95_ms=X
errors=N lost=N stale=N`` (rps from the closed loop; the p95s from the open loop; stale: sampled
writes a recall had not found within 5 s). With --think-ms the closed loop's clients pause
between requests instead. The closed loop also prints the CPU time per request of the service
processes and of the load generator, and the load average: on a shared machine rps follows
the neighbours' load, CPU per request much less. A fixed pure-Python loop timed before and
after the closed loop shows the host's speed at the moment.

Each service runs as ``fourfold serve --workers N``: N processes behind one port, the kernel
spreading the clients' connections over them. By default N is the number of cores (shared out
between --replicas), as one would deploy it for throughput: one Python process uses only about
1.4 of 2 cores under this load (see `fourfold.service.workers`). ``--workers 1`` measures a
single process, `fourfold serve`'s own default.

With ``--store postgres`` the service keeps everything in a throwaway PostgreSQL (started on
loopback for the run; ``--store postgresql://…`` uses yours). ``--replicas N`` starts N
services on one store (or one SQLite data dir), each at its own URL. Clients are spread over
the replicas, visibility is looked for through another replica than the one that acknowledged
the write, and every acknowledged write is read back through another replica too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from json import dumps as json_dumps
from json import loads as json_loads
from pathlib import Path
from typing import Any

import httpx

WORDS = (
    "refund invoice parcel courier warehouse password login vpn router billing card address "
    "subscription upgrade downgrade discount voucher delivery damaged missing late email phone "
    "chat weekend lisbon berlin lyon pdf export dashboard dark mode mobile ios android printer"
).split()


class LeanClient:
    """A minimal HTTP/1.1 keep-alive client for the load loop (JSON in and out).

    The load generator shares the machine's 2 cores with the service, and its own event loop
    delays every response it has not read yet, so the client's own CPU per request counts.
    This client does what the load needs (one connection per client, Content-Length
    bodies, as uvicorn sends them) for a fraction of that; `--client httpx` uses httpx.
    """

    def __init__(self, url: str, headers: dict[str, str], timeout: float = 30.0) -> None:
        parsed = httpx.URL(url)
        self.host, self.port = parsed.host, parsed.port or 80
        self.headers = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.timeout = timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, json: Any = None) -> tuple[int, bytes]:
        reused = self._writer is not None
        try:
            return await asyncio.wait_for(self._request(method, path, json), self.timeout)
        except asyncio.IncompleteReadError as exc:
            await self.aclose()
            if not (reused and not exc.partial):
                raise
            # The server closed a kept-alive connection that sat idle (uvicorn: after 5 s)
            # before reading this request: send it again on a new one, as HTTP clients do.
            return await self.request(method, path, json)
        except BaseException:
            await self.aclose()  # a half-read response must not poison the next request
            raise

    async def _request(self, method: str, path: str, body_json: Any) -> tuple[int, bytes]:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        assert self._reader is not None
        body = json_dumps(body_json).encode() if body_json is not None else b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.headers}"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        self._writer.write(head.encode() + body)
        raw = await self._reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, close = 0, False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding":
                raise RuntimeError("chunked responses are not supported by the lean client")
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        data = await self._reader.readexactly(length) if length else b""
        if close:
            await self.aclose()
        return status, data

    async def aclose(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


class HttpxClient:
    """The same interface over httpx (`--client httpx`)."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float = 30.0) -> None:
        self.http = httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout)

    async def request(self, method: str, path: str, json: Any = None) -> tuple[int, bytes]:
        response = await self.http.request(method, path, json=json)
        return response.status_code, response.content

    async def aclose(self) -> None:
        await self.http.aclose()


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    recall_at: list[tuple[float, float]] = field(default_factory=list)  # (monotonic end, latency)
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    error_samples: list[str] = field(default_factory=list)
    memories: list[tuple[str, str, str, int]] = field(default_factory=list)  # (tenant, id, text, replica)
    episodes: list[tuple[str, str, int]] = field(default_factory=list)  # (tenant, id, replica)
    #: Acknowledged fact writes by (tenant, key): (sent, acknowledged, value, replica), perf_counter times.
    facts: dict[tuple[str, str], list[tuple[float, float, Any, int]]] = field(default_factory=lambda: defaultdict(list))


def sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def pick(rng: random.Random, i: int, n: int, scopes: int) -> tuple[str, str, str, Any]:
    """One request of the support-desk mix: (route, method, path, body)."""
    roll = rng.random()
    scope = f"customer:{rng.randrange(scopes)}"
    if roll < 0.70:
        return "recall", "POST", "/v1/memories/search", {"query": sentence(rng, 6), "scope": scope, "k": 5}
    if roll < 0.90:
        return "remember", "POST", "/v1/memories", {"text": f"client {i} note {n}: {sentence(rng)}", "scope": scope,
                                                    "kind": "note"}
    if roll < 0.94:
        return "episode", "POST", "/v1/episodes", {"goal": sentence(rng, 6), "actions": [sentence(rng, 4)],
                                                   "outcome": sentence(rng, 4), "success": rng.random() < 0.8,
                                                   "scope": scope}
    if roll < 0.97:
        return "similar", "POST", "/v1/episodes/similar", {"situation": sentence(rng, 6), "scope": scope, "k": 3}
    key = f"limit.{rng.randrange(10)}"
    if roll < 0.985:
        return "fact_put", "PUT", f"/v1/facts/{key}", {"value": rng.randrange(1000)}
    return "fact_get", "POST", "/v1/facts/lookup", {"key": key}


async def send(http: Any, tenant: str, request: tuple[str, str, str, Any], stats: Stats, due: float,
               replica: int = 0) -> Any:
    """Send one request, time it from `due` (a perf_counter time), record the outcome; the answer or None.

    `replica` is the index of the service that answered, so the read-back can go through another."""
    route, method, path, body = request
    sent = time.perf_counter()
    try:
        status, content = await http.request(method, path, json=body)
    except (TimeoutError, httpx.HTTPError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
        status, content = 0, b""
        stats.error_samples.append(f"{route}: {exc!r}"[:200])
    stats.latencies[route].append(time.perf_counter() - due)
    if route == "recall":
        stats.recall_at.append((time.monotonic(), stats.latencies[route][-1]))
    if not 200 <= status < 300:
        stats.errors[route] += 1
        if status and len(stats.error_samples) < 20:
            stats.error_samples.append(f"{route}: {status} {content[:150]!r}")
        return None
    answer = json_loads(content)
    if route == "remember":
        stats.memories.append((tenant, answer["id"], answer["text"], replica))
    elif route == "episode":
        stats.episodes.append((tenant, answer["id"], replica))
    elif route == "fact_put":
        stats.facts[(tenant, path.rsplit("/", 1)[1])].append((sent, time.perf_counter(), body["value"], replica))
    return answer


async def client_loop(
    i: int, urls: list[str], keys: dict[str, str], scopes: int, stop_at: float, stats: Stats, counter: list[int],
    think: float = 0.0, client: str = "lean", delay: float = 0.0,
) -> None:
    rng = random.Random(i)
    await asyncio.sleep(delay)  # ramp-up: clients join one after another
    tenant = list(keys)[i % len(keys)]
    headers = {"Authorization": f"Bearer {keys[tenant]}"}
    replica = i % len(urls)
    http = (LeanClient if client == "lean" else HttpxClient)(urls[replica], headers, timeout=30)
    try:
        n = 0
        while time.monotonic() < stop_at:
            if think and n:
                await asyncio.sleep(think)
            n += 1
            await send(http, tenant, pick(rng, i, n, scopes), stats, time.perf_counter(), replica)
            counter[0] += 1
    finally:
        await http.aclose()


@dataclass
class OpenLoop:
    """What the open-loop phase saw: its own latencies and write-to-recall visibility."""

    stats: Stats = field(default_factory=Stats)
    visible: list[float] = field(default_factory=list)  # seconds from acknowledgement to found
    stale: int = 0


async def open_loop(urls: list[str], keys: dict[str, str], scopes: int, rate: float, seconds: float,
                    sample: int = 4) -> OpenLoop:
    """Requests due at a fixed rate, whatever the answers; every `sample`-th acknowledged write is
    then looked for by recall (through another replica when there are several) until found."""
    result = OpenLoop()
    rng = random.Random(1234)
    idle: dict[tuple[str, str], list[LeanClient]] = defaultdict(list)

    async def one(k: int, due: float) -> None:
        tenant = list(keys)[k % len(keys)]
        replica = k % len(urls)
        url = urls[replica]
        request = pick(rng, 10_000 + k, k, scopes)
        pool = idle[(url, tenant)]
        http = pool.pop() if pool else LeanClient(url, {"Authorization": f"Bearer {keys[tenant]}"}, timeout=30)
        try:
            answer = await send(http, tenant, request, result.stats, due, replica)
        finally:
            pool.append(http)
        if request[0] == "remember" and answer is not None and k % sample == 0:
            other = urls[(k + 1) % len(urls)]
            await look_for(other, tenant, request[3]["scope"], answer, time.perf_counter())

    async def look_for(url: str, tenant: str, scope: str, answer: Any, acked: float) -> None:
        pool = idle[(url, tenant)]
        http = pool.pop() if pool else LeanClient(url, {"Authorization": f"Bearer {keys[tenant]}"}, timeout=30)
        try:
            while time.perf_counter() - acked < 5.0:
                status, content = await http.request("POST", "/v1/memories/search",
                                                     json={"query": answer["text"], "scope": scope, "k": 10})
                if status == 200 and any(r["id"] == answer["id"] for r in json_loads(content)["results"]):
                    result.visible.append(time.perf_counter() - acked)
                    return
                await asyncio.sleep(0.005)
            result.stale += 1
        finally:
            pool.append(http)

    start = time.perf_counter()
    tasks = []
    for k in range(int(rate * seconds)):
        due = start + k / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        tasks.append(asyncio.create_task(one(k, due)))
    await asyncio.gather(*tasks)
    for pool in idle.values():
        for http in pool:
            await http.aclose()
    return result


async def seed(url: str, keys: dict[str, str], scopes: int, per_tenant: int) -> None:
    """Write `per_tenant` memories and ten facts for every tenant, through one service."""
    rng = random.Random(0)
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        for tenant, key in keys.items():
            headers = {"Authorization": f"Bearer {key}"}
            items = [{"text": f"seed {tenant} {j}: {sentence(rng)}", "scope": f"customer:{j % scopes}"}
                     for j in range(per_tenant)]
            for start in range(0, len(items), 200):
                r = await http.post("/v1/memories/batch", json={"items": items[start:start + 200]}, headers=headers)
                r.raise_for_status()
            for j in range(10):
                (await http.put(f"/v1/facts/limit.{j}", json={"value": j}, headers=headers)).raise_for_status()


async def verify(urls: list[str], keys: dict[str, str], stats: Stats) -> int:
    """Read back every acknowledged write through the replica after the one that acknowledged
    it (the same one when there is one); returns how many are missing or wrong (the first few
    are printed)."""
    lost = 0
    sem = asyncio.Semaphore(16)
    async with contextlib.AsyncExitStack() as stack:
        https = [await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=60)) for url in urls]

        async def check(tenant: str, replica: int, path: str, expect: Any = None) -> int:
            async with sem:
                r = await https[(replica + 1) % len(https)].get(path, headers={"Authorization": f"Bearer {keys[tenant]}"})
            found = r.json().get("value", r.json().get("text")) if r.status_code == 200 else None
            if r.status_code == 200 and (expect is None or found == expect or (isinstance(expect, set) and found in expect)):
                return 0
            print(f"  lost: {tenant} {path}: {r.status_code}, {found!r:.60} instead of {expect!r:.60}")
            return 1

        jobs = [check(t, at, f"/v1/memories/{mid}", text) for t, mid, text, at in stats.memories]
        jobs += [check(t, at, f"/v1/episodes/{eid}") for t, eid, at in stats.episodes]
        for (t, key), writes in stats.facts.items():
            last = max(writes, key=lambda w: w[1])
            jobs.append(check(t, last[3], f"/v1/facts/{key}", settled_values(writes)))
        for found in await asyncio.gather(*jobs):
            lost += found
    return lost


def settled_values(writes: list[tuple[float, float, Any, int]]) -> set[Any]:
    """The values a key may hold after these acknowledged writes: a write is certainly
    replaced by any write sent after it was acknowledged; writes that overlapped may have
    committed in either order."""
    values = set()
    for i, (_, acked, value, _) in enumerate(writes):
        if not any(sent > acked for j, (sent, _, _, _) in enumerate(writes) if j != i):
            values.add(value)
    return values


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def report(stats: Stats, elapsed: float, lost: int, think_ms: float = 0.0, window_s: float = 10.0,
           label: str = "closed loop") -> str:
    print(f"{'route':<10} {'count':>7} {'p50_ms':>8} {'p95_ms':>8} {'p99_ms':>8} {'errors':>7}")
    every: list[float] = []
    for route in ("recall", "remember", "episode", "similar", "fact_put", "fact_get"):
        values = stats.latencies.get(route, [])
        every += values
        print(f"{route:<10} {len(values):>7} {pct(values, .5):>8.1f} {pct(values, .95):>8.1f} "
              f"{pct(values, .99):>8.1f} {stats.errors.get(route, 0):>7}")
    errors = sum(stats.errors.values())
    rps = len(every) / elapsed if elapsed else 0.0
    print(f"{'all':<10} {len(every):>7} {pct(every, .5):>8.1f} {pct(every, .95):>8.1f} {pct(every, .99):>8.1f} {errors:>7}")
    print(f"requests/s {rps:.1f} over {elapsed:.1f}s; acknowledged writes: {len(stats.memories)} memories, "
          f"{len(stats.episodes)} episodes, {len(stats.facts)} facts; lost {lost}")
    for sample in stats.error_samples[:5]:
        print(f"  error sample: {sample}")
    if every:
        print(f"mean {statistics.fmean(every) * 1000:.1f} ms")
    if stats.recall_at:  # warm-up (cold scopes) against the steady state
        first = stats.recall_at[0][0]
        windows: dict[int, list[float]] = defaultdict(list)
        for at, latency in stats.recall_at:
            windows[int((at - first) // window_s)].append(latency)
        print(f"recall p50/p95 ms by {window_s:g} s window: " + "  ".join(
            f"{pct(v, .5):.0f}/{pct(v, .95):.0f}" for _, v in sorted(windows.items())))
    label = f"{label} (think {think_ms:g} ms)" if think_ms else label
    return f"{label}: rps={rps:.1f} p95_ms={pct(every, .95):.1f} errors={errors} lost={lost}"


async def run(urls: list[str], keys: dict[str, str], args: argparse.Namespace, pids: tuple[int, ...] = ()) -> str:
    if args.seed:
        await seed(urls[0], keys, args.scopes, args.seed)
    print(f"seeded {args.seed} memories per tenant; load starts", flush=True)
    speed_before = machine_speed()
    stats = Stats()
    counter = [0]
    cpu_before = cpu_seconds(pids), time.process_time()
    started = time.monotonic()
    stop_at = started + args.duration
    think = args.think_ms / 1000
    await asyncio.gather(*(client_loop(i, urls, keys, args.scopes, stop_at, stats, counter, think, args.client,
                                       delay=args.ramp_s * i / args.clients)
                           for i in range(args.clients)))
    elapsed = time.monotonic() - started
    cpu_after = cpu_seconds(pids), time.process_time()
    closed = report(stats, elapsed, 0, args.think_ms, args.window_s)
    print(closed)
    done = max(1, counter[0])
    service_cpu = (f"service {(cpu_after[0] - cpu_before[0]) / done * 1000:.2f} ms" if pids
                   else "service not measured (--url)")
    # On a shared machine throughput moves with the neighbours' load; CPU per request much less.
    print(f"CPU per request (closed loop): {service_cpu}, "
          f"load generator {(cpu_after[1] - cpu_before[1]) / done * 1000:.2f} ms; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"machine speed: a fixed Python loop took {speed_before:.1f} ms before the load, {machine_speed():.1f} ms "
          "after it (this process, the service idle; a slower machine serves fewer requests/s)")
    rps = float(closed.split("rps=")[1].split()[0])
    print(f"\nopen loop: {args.rate:g} requests/s offered for {args.open_s:g} s", flush=True)
    opened = await open_loop(urls, keys, args.scopes, args.rate, args.open_s)
    for field_name in ("memories", "episodes"):
        getattr(stats, field_name).extend(getattr(opened.stats, field_name))
    for fact, writes in opened.stats.facts.items():
        stats.facts[fact].extend(writes)
    lost = await verify(urls, keys, stats)
    print(report(opened.stats, args.open_s, lost, window_s=args.window_s, label="open loop"))
    errors = sum(stats.errors.values()) + sum(opened.stats.errors.values())
    lat = opened.stats.latencies
    print(f"visibility: {len(opened.visible)} sampled writes found by recall, p50 {pct(opened.visible, .5):.1f} ms, "
          f"p95 {pct(opened.visible, .95):.1f} ms; not found within 5 s: {opened.stale}")
    return (f"service: rps={rps:.1f} rate={args.rate:g} recall_p95_ms={pct(lat['recall'], .95):.1f} "
            f"remember_p95_ms={pct(lat['remember'], .95):.1f} visible_p95_ms={pct(opened.visible, .95):.1f} "
            f"errors={errors} lost={lost} stale={opened.stale}")


def machine_speed() -> float:
    """Milliseconds a fixed pure-Python loop takes here, the median of 25 (about half a second):
    the host's speed at the moment (a shared machine's speed moves, minutes or seconds apart)."""
    times = []
    for _ in range(25):
        t0 = time.perf_counter()
        sum(i * i for i in range(200_000))
        times.append((time.perf_counter() - t0) * 1000)
    return sorted(times)[12]


def cpu_seconds(pids: tuple[int, ...]) -> float:
    """CPU time (user + system) used so far by these processes and their children (Linux /proc)."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
            for p in (pid, *children):
                fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def peak_memory(pid: int) -> str:
    """Peak resident memory of a process and of each of its children (Linux /proc), in MB."""

    def peak(p: int) -> float:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    try:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        parts = [f"service {peak(pid):.0f} MB"] + [f"{_role(c)} {peak(c):.0f} MB" for c in children]
    except OSError:
        return "peak memory: not available (no /proc)"
    return "peak memory (VmHWM): " + ", ".join(parts)


def _role(pid: int) -> str:
    command = Path(f"/proc/{pid}/cmdline").read_bytes()
    if b"resource_tracker" in command:
        return "multiprocessing's resource tracker"
    if b"serve_worker" in command:
        return "worker"
    return f"child {pid}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    p.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    p.add_argument("--tenants", type=int, default=4)
    p.add_argument("--scopes", type=int, default=25, help="customers per tenant")
    p.add_argument("--seed", type=int, default=500, help="memories written per tenant before the run")
    p.add_argument("--rate", type=float, default=100.0, help="requests/s offered in the open-loop phase")
    p.add_argument("--open-s", type=float, default=30.0, help="seconds of the open-loop phase")
    p.add_argument("--think-ms", type=float, default=0.0,
                   help="pause of each client between requests (default 0: the issue's closed loop)")
    p.add_argument("--ramp-s", type=float, default=0.0,
                   help="clients join one after another over this many seconds (default 0: all at once)")
    p.add_argument("--window-s", type=float, default=10.0, help="width of the recall latency windows printed")
    p.add_argument("--client", choices=("lean", "httpx"), default="lean",
                   help="HTTP client of the load loop (default: a minimal keep-alive client; see LeanClient)")
    p.add_argument("--query-model", choices=("int8", "exact"), default="int8",
                   help="how the service embeds recall queries (fourfold serve --query-model; default int8)")
    p.add_argument("--data-dir", type=Path, default=None, help="default: a temp dir")
    p.add_argument("--store", default=None,
                   help="'postgres': a throwaway PostgreSQL for the run; or a postgresql:// URL (default: SQLite)")
    p.add_argument("--replicas", type=int, default=1,
                   help="`fourfold serve`s on one --store or data dir, each at its own URL (default 1)")
    p.add_argument("--workers", type=int, default=None,
                   help="fourfold serve --workers: processes behind each service's port "
                        "(default: the cores shared out between the replicas, at least 1)")
    p.add_argument("--url", default=None,
                   help="use running services instead of starting them (several: comma-separated replicas)")
    p.add_argument("--key", action="append", default=[], help="TENANT=KEY for --url (repeatable)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from fourfold.service.testing import LiveService

    if args.workers is None:
        args.workers = max(1, (os.cpu_count() or 1) // args.replicas)
    with ExitStack() as stack:
        lives: list[LiveService] = []
        if args.url:
            urls = args.url.split(",")
            keys = dict(pair.split("=", 1) for pair in args.key)
            if not keys:
                raise SystemExit("--url needs at least one --key TENANT=KEY")
        else:
            data_dir = args.data_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fourfold-bench-")))
            store = _store(stack, args.store)
            tenants = {f"tenant-{t}": 1 for t in range(args.tenants)}
            for replica in range(args.replicas):
                lives.append(stack.enter_context(LiveService(
                    data_dir, embedder=args.embedder, keys=tenants if not replica else None, startup_timeout=120,
                    serve_args=["--query-model", args.query_model, "--workers", str(args.workers)], store=store)))
            urls, keys = [live.url for live in lives], {t: ks[0] for t, ks in lives[0].keys.items()}
        loop = f"think {args.think_ms:g} ms between requests" if args.think_ms else "closed loop (no think time)"
        engine = "PostgreSQL" if args.store else "SQLite" if not args.url else "as served"
        print(f"fourfold service benchmark: {args.clients} clients, {args.duration:g}s, {loop}, embedder {args.embedder}, "
              f"{len(keys)} tenants x {args.scopes} scopes, query model {'as served' if args.url else args.query_model}, "
              f"store {engine}, {len(urls)} replica(s) of {args.workers} worker(s) {' '.join(urls)}")
        pids = tuple(live.pid for live in lives if live.pid is not None)
        last = asyncio.run(run(urls, keys, args, pids))
        for live in lives:
            if live.pid is not None:
                print(peak_memory(live.pid))
    print(last)
    return 0


def _store(stack: ExitStack, store: str | None) -> str | None:
    """The PostgreSQL URL the services share: `postgres` starts a throwaway server for the run."""
    if store != "postgres":
        return store
    from fourfold.testing.postgres import PostgresServer

    return stack.enter_context(PostgresServer()).url


if __name__ == "__main__":
    sys.exit(main())

"""`fourfold serve`, `fourfold keys ...` and `fourfold mcp`: the service's commands.

FastAPI, uvicorn and the MCP SDK are imported inside the commands, so `fourfold --help`
stays fast and works without them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fourfold._extras import require
from fourfold._manifest import MANIFEST
from fourfold.cli._common import (
    _embedder,
    _model,
    _out,
    _say_created,
    _stamp,
    _store_url,
    _where,
    state,
)
from fourfold.errors import InvalidInput
from fourfold.service.hosts import is_loopback

if TYPE_CHECKING:
    import socket

    from fourfold.embeddings.base import Embedder
    from fourfold.service.keys import ApiKey, KeyStore

__all__ = ["register"]

keys_app = typer.Typer(help="API keys of the service: each belongs to one tenant.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add `serve`, `keys` and `mcp` to the fourfold command (idempotent)."""
    if any(c.name == "serve" for c in app.registered_commands):
        return
    app.command("serve")(serve)
    app.command("mcp")(mcp)
    app.add_typer(keys_app, name="keys")


def serve(
    host: Annotated[str, typer.Option(help="Interface to bind; anything but loopback needs an API key.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    max_body: Annotated[int, typer.Option(help="Largest request body, in bytes.")] = 8 * 1024 * 1024,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
    query_model: Annotated[
        str,
        typer.Option(help="Embed recall queries with the stored model (exact) or its int8 approximation "
                     "(int8: much less CPU per query, nearly the same recall)."),
    ] = "int8",
    store: Annotated[str | None, typer.Option(
        "--store", help="Serve from PostgreSQL (postgresql://...): any number of replicas share it."
    )] = None,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="A name browsers may reach the service by (the web inspector at /ui); repeatable."
    )] = None,
    review_cases: Annotated[bool, typer.Option(
        "--review-cases", help="Hold each new shared case until an operator approves it (in the inspector)."
    )] = False,
    workers: Annotated[int, typer.Option(
        min=1, help="Service processes on the port (Linux), one per core for throughput; each loads its own "
        "models (about 400 MB)."
    )] = 1,
) -> None:
    """Serve the data dir over HTTP (REST at /v1, MCP at /mcp, OpenAPI at /openapi.json, inspector at /ui)."""
    run_service(host=host, port=port, max_body=max_body, log_level=log_level, query_model=query_model, store=store,
                allow_host=allow_host or [], review_cases=review_cases, workers=workers)


def run_service(
    *, host: str, port: int, max_body: int = 8 * 1024 * 1024, log_level: str = "warning", query_model: str = "int8",
    store: str | None = None, allow_host: list[str] | None = None, review_cases: bool = False, workers: int = 1,
    on_ready: Callable[[str], None] | None = None, run_secret: str | None = None,
) -> None:
    """Run the service until interrupted; `on_ready(url)` is called once it listens.

    With `workers` above 1, this process supervises that many service processes on the port
    (`fourfold.service.workers`). `run_secret` closes the keyless door of a loopback service:
    a request without a key must then carry it as its bearer key (`fourfold ui`)."""
    if store:
        state.store = _store_url(store)
    for module in ("fastapi", "uvicorn", "mcp"):  # the service mounts MCP at /mcp too
        require(module, "server", what="`fourfold serve`")
    options: dict[str, Any] = {
        "host": host, "port": port, "max_body": max_body, "log_level": log_level, "query_model": query_model,
        "allow_host": allow_host or [], "review_cases": review_cases, "run_secret": run_secret,
    }
    if workers != 1:
        _supervise(workers, options, on_ready)
        return
    _serve(**options, on_ready=on_ready)


def _serve(
    *, host: str, port: int, max_body: int, log_level: str, query_model: str, allow_host: list[str],
    review_cases: bool, on_ready: Callable[[str], None] | None = None, sock: socket.socket | None = None,
    run_secret: str | None = None,
) -> None:
    """One service process; a supervisor's worker serves on `sock`, a socket it listens on."""
    import uvicorn

    from fourfold.service.app import create_app
    from fourfold.service.heap import settle_heap
    from fourfold.service.tenancy import Tenants

    keys = _checked_keys(host)
    embedder, queries = _serving_embedders(_embedder(), query_model)
    tenants = Tenants(_where(), embedder=embedder, query_embedder=queries)
    try:
        tenants.warm_up()  # /healthz answers once the models are loaded, not on the first requests
        app = create_app(tenants, keys, allow_anonymous=is_loopback(host), max_body_bytes=max_body, model=_model(),
                         review_cases=review_cases, allowed_hosts=_browser_hosts(host, allow_host),
                         run_secret=run_secret)
        url = f"http://{_url_host(host)}:{port}"
        if sock is None:  # a worker's supervisor speaks for it
            typer.echo(f"fourfold serving {tenants.where} on {url} ({_auth_text(keys.has_keys(), url)})", err=True)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5))
        settle_heap()  # after the models and the app: what start-up made is never walked again
        if on_ready is not None:
            _call_when_started(server, lambda: on_ready(url))
        server.run(sockets=[sock] if sock is not None else None)
    finally:
        tenants.close()
        keys.close()


def _checked_keys(host: str) -> KeyStore:
    """The key table (a service creates its data dir, as the first write would); refuses a
    bind beyond loopback without any active key."""
    keys = _keys(create=True)
    if not is_loopback(host) and not any(k.active for k in keys.list()):
        keys.close()
        raise InvalidInput(
            f"refusing to bind {host} without an API key: create one with "
            "`fourfold keys create --tenant NAME`, or bind 127.0.0.1"
        )
    return keys


def _auth_text(has_keys: bool, url: str) -> str:
    auth = "API keys" if has_keys else "none until a key is created (loopback only)"
    return f"auth: {auth}; inspector: {url}/ui"


def _supervise(workers: int, options: dict[str, Any], on_ready: Callable[[str], None] | None) -> None:
    """`workers` service processes on one port, supervised by this one."""
    from fourfold.service.tenancy import on_chroma
    from fourfold.service.workers import Supervisor, listening_sockets

    if state.store is None and on_chroma(state.data_dir):
        raise InvalidInput("--workers above 1 needs the SQLite store: embedded Chroma allows one writer per data dir "
                           "(`fourfold migrate` moves the data dir to SQLite)")
    env = _worker_env(workers)
    with _closing(_checked_keys(options["host"])) as keys:
        has_keys = keys.has_keys()
    sockets = listening_sockets(options["host"], options["port"], workers)  # port 0: the kernel picks one
    try:
        port = sockets[0].getsockname()[1]
        url = f"http://{_url_host(options['host'])}:{port}"
        if state.store:
            from fourfold.stores.postgres import redact_url

            where = redact_url(state.store)
        else:
            where = str(state.data_dir)

        def announce() -> None:
            typer.echo(f"fourfold serving {where} on {url} with {workers} workers ({_auth_text(has_keys, url)})",
                       err=True)
            if on_ready is not None:
                on_ready(url)

        cli = {"data_dir": str(state.data_dir), "store": state.store, "embedder": state.embedder, "model": state.model}
        Supervisor(workers, {"cli": cli, "serve": {**options, "port": port}}, sockets=sockets, announce=announce,
                   env=env).run()
    finally:
        for sock in sockets:
            sock.close()


def _worker_env(workers: int) -> dict[str, str]:
    """The workers' environment: the cores shared out between their embedding calls, unless
    $FOURFOLD_EMBED_THREADS says otherwise (checked here, once)."""
    import os

    from fourfold.embeddings.onnx import THREADS_ENV, default_threads

    env = dict(os.environ)
    if env.get(THREADS_ENV, "").strip():
        default_threads()  # InvalidInput for a bad value, before any worker starts
    else:
        env[THREADS_ENV] = str(max(1, (os.cpu_count() or 1) // workers))
    return env


def serve_worker(options: dict[str, Any]) -> None:
    """A process of `fourfold serve --workers N`, started by its `Supervisor` with these options."""
    import os
    import socket
    import sys

    from fourfold.errors import FourfoldError
    from fourfold.service.workers import say_serving

    pipe = os.fdopen(os.dup(1), "w")  # to the supervisor; everything else printed goes to standard error
    os.dup2(2, 1)
    cli = options["cli"]
    state.data_dir, state.store = Path(cli["data_dir"]), cli["store"]
    state.embedder, state.model = cli["embedder"], cli["model"]
    sock = socket.socket(fileno=options["fd"])  # listening since the supervisor opened it
    try:
        _serve(**options["serve"], sock=sock, on_ready=lambda _url: say_serving(pipe))
    except FourfoldError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    finally:
        sock.close()


def _call_when_started(server: Any, callback: Callable[[], None]) -> None:
    """Run `callback` on a thread once uvicorn listens (opening a browser before would fail)."""
    import threading
    import time

    def wait() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if server.started:
            callback()

    threading.Thread(target=wait, name="fourfold-on-ready", daemon=True).start()


def _browser_hosts(host: str, extra: list[str]) -> list[str] | None:
    """The names browsers may use: loopback ones, the bound one, and `--allow-host`; None (any)
    for a wildcard bind without `--allow-host` (keys are required there, so rebinding gains nothing)."""
    from fourfold.service.ui import LOOPBACK_HOSTS

    if host in ("0.0.0.0", "::", "[::]", "") and not extra:
        return None
    return [*LOOPBACK_HOSTS, *([] if is_loopback(host) else [host]), *extra]


def mcp(
    scope: Annotated[str | None, typer.Option(help="Default scope of every tool call, e.g. user:me.")] = None,
    tenant: Annotated[str | None, typer.Option(help="Serve this tenant of a service data dir (default: the data dir itself).")] = None,
) -> None:
    """Serve the memory as MCP tools over stdio (for Claude Desktop, Claude Code...)."""
    from fourfold._validate import check_scope

    require("mcp", "mcp", what="`fourfold mcp`")
    from fourfold.service.mcp import build_mcp_server
    from fourfold.service.tenancy import DEFAULT_TENANT, Tenants

    check_scope(scope)
    tenants = Tenants(_where(), embedder=_embedder())
    try:
        fresh = state.store is None and tenant in (None, DEFAULT_TENANT) and not (state.data_dir / MANIFEST).exists()
        memory = tenants.get(tenant or DEFAULT_TENANT)
        if fresh:  # on standard error: a typo in an MCP client's config must not pass unseen
            _say_created()
        build_mcp_server(lambda _request: memory, scope=scope).run("stdio")
    finally:
        tenants.close()


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option(help="The tenant the key belongs to (its own namespace).")],
    label: Annotated[str, typer.Option(help="A note to recognise the key by.")] = "",
    role: Annotated[str, typer.Option(
        help="agent: its customers' memories and turns; operator: also facts, documents and reviewing "
        "shared cases; admin: also the tenant's keys.")] = "agent",
) -> None:
    """Create a key and print it once: only its digest is stored."""
    from fourfold.service.keys import check_role
    from fourfold.stores.sqlite import DATABASE

    fresh = state.store is None and not (state.data_dir / DATABASE).exists()
    with _closing(_keys(create=True)) as keys:
        record, secret = keys.create(tenant, label=label, role=check_role(role))
    if fresh:
        _say_created()
    else:
        _say_where_the_data_is(record.tenant)
    _out({"id": record.id, "tenant": record.tenant, "role": record.role, "key": secret}, secret)


def _say_where_the_data_is(tenant: str) -> None:
    """On standard error, when the data dir itself (tenant `default`, what the CLI reads and
    writes) holds data and the key is for another tenant: that the key will not see it."""
    from fourfold.service.tenancy import DEFAULT_TENANT

    if tenant == DEFAULT_TENANT or state.store is not None:
        return
    cli_data = _holdings(state.data_dir)
    if cli_data is None:
        return
    own = _holdings(state.data_dir / "tenants" / tenant)
    said = (f"tenant {tenant!r} holds {own}; " if own else f"warning: tenant {tenant!r} is empty; ") + (
        f"what the CLI stored in {state.data_dir} ({cli_data}) is tenant {DEFAULT_TENANT!r}, which this key "
        f"cannot read: to serve that data, create a key with --tenant {DEFAULT_TENANT}")
    typer.echo(said, err=True)


def _holdings(data_dir: Path) -> str | None:
    """What a tenant's data dir holds, in a few words ("2 scopes, 3 facts"); None when nothing."""
    from fourfold.memory import Memory

    if not (data_dir / MANIFEST).exists():
        return None
    with Memory.open(data_dir, embedder=_embedder(), create=False) as mem:
        held = {"scopes": len(mem.scopes()), "facts": len(mem.facts.list()),
                "unscoped memories": len(mem.long_term.all()), "documents": len(mem.docs.list())}
    return ", ".join(f"{n} {what}" for what, n in held.items() if n) or None


@keys_app.command("list")
def keys_list(tenant: Annotated[str | None, typer.Option(help="Only this tenant's keys.")] = None) -> None:
    """Every key's id, tenant and state (never the key itself)."""
    with _closing(_keys()) as keys:
        found = keys.list(tenant=tenant)
    _out([_key_dict(k) for k in found], "\n".join(_key_line(k) for k in found) or "(no keys)")


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="The key's id (from `keys list`) or the key.")]) -> None:
    """Revoke a key: requests with it get 401 at once, even on a running service."""
    with _closing(_keys()) as keys:
        record = keys.revoke(key_id)
    _out(_key_dict(record), f"revoked {record.id} ({record.tenant})")


def _keys(*, create: bool = False) -> KeyStore:
    """The key table; only `keys create` makes a database where there is none (a typo must not)."""
    from fourfold.memory import missing_data_dir
    from fourfold.service.keys import KeyStore
    from fourfold.stores.sqlite import DATABASE

    if state.store is None and not create and not (state.data_dir / DATABASE).exists():
        raise missing_data_dir(state.data_dir)
    return KeyStore(state.store or state.data_dir / DATABASE)


class _closing:
    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys

    def __enter__(self) -> KeyStore:
        return self.keys

    def __exit__(self, *exc: object) -> None:
        self.keys.close()


def _serving_embedders(embedder: Embedder, choice: str) -> tuple[Embedder, Embedder | None]:
    """The stored model and the query model `--query-model` chose (None: queries use the stored one).

    The CLI's default embedder pairs the stored model with its int8 approximation already;
    the service makes its own choice (and query model) from the stored model.
    """
    from fourfold.embeddings.asymmetric import AsymmetricEmbedder

    if isinstance(embedder, AsymmetricEmbedder):
        embedder = embedder.documents
    return embedder, _query_embedder(embedder, choice)


def _query_embedder(embedder: Embedder, choice: str) -> Embedder | None:
    """The int8 approximation of the ONNX MiniLM for `--query-model int8`; None: queries use `embedder`."""
    if choice not in ("exact", "int8"):
        raise InvalidInput(f"unknown query model {choice!r}: use exact or int8")
    from fourfold.embeddings.onnx import OnnxMiniLMEmbedder, OnnxMiniLMInt8Embedder

    if choice == "exact" or type(embedder) is not OnnxMiniLMEmbedder:  # no int8 variant of the others
        return None
    return OnnxMiniLMInt8Embedder()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _key_dict(k: ApiKey) -> dict[str, object]:
    return {"id": k.id, "tenant": k.tenant, "role": k.role, "label": k.label, "created_at": k.created_at,
            "revoked_at": k.revoked_at, "active": k.active}


def _key_line(k: ApiKey) -> str:
    when = _stamp(k.created_at)
    state_text = "active" if k.active else "revoked"
    label = f"  {k.label}" if k.label else ""
    return f"{k.id}  {k.tenant:<20} {k.role:<8} {state_text:<8} {when}{label}"

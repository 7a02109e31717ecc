"""Commands: each parses input, makes one library call, and prints the result (or JSON)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fourfold.config import DATA_DIR_ENV, DEFAULT_DATA_DIR
from fourfold.errors import InvalidInput

if TYPE_CHECKING:
    from fourfold.memory import Memory

app = typer.Typer(
    help="fourfold: memory for LLM agents (long-term, episodic, semantic, short-term). Offline by default.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
episodes_app = typer.Typer(help="Episodic memory: what happened, and how it ended.", no_args_is_help=True)
facts_app = typer.Typer(help="Semantic memory: authoritative facts and the lookup_policy tool.", no_args_is_help=True)
docs_app = typer.Typer(help="Documents chunked into the vector store (kept apart from memories).", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks (see benchmarks/).", no_args_is_help=True)
app.add_typer(episodes_app, name="episodes")
app.add_typer(facts_app, name="facts")
app.add_typer(docs_app, name="docs")
app.add_typer(bench_app, name="bench")


class State:
    data_dir: Path = Path(DEFAULT_DATA_DIR)
    embedder: str = "minilm"
    as_json: bool = False


state = State()


@app.callback()
def _options(
    data_dir: Annotated[Path, typer.Option("--data-dir", "-d", envvar=DATA_DIR_ENV, help="The data directory.")] = Path(
        DEFAULT_DATA_DIR
    ),
    embedder: Annotated[str, typer.Option(help="minilm (default) or hash (fast, for tests only).")] = "minilm",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    state.data_dir, state.embedder, state.as_json = data_dir, embedder, as_json


def _memory(*, embeds: bool = False) -> Memory:
    """The data dir's Memory; `embeds`: the command will embed text, so the model starts
    loading now, beside the opening of the data dir, instead of after it."""
    if embeds and state.embedder == "minilm":
        _load_model_meanwhile()
    from fourfold.memory import Memory

    if state.embedder == "hash":
        from fourfold.embeddings import HashEmbedder

        return Memory.open(state.data_dir, embedder=HashEmbedder())
    if state.embedder != "minilm":
        raise InvalidInput(f"unknown embedder {state.embedder!r}: use minilm or hash")
    return Memory.open(state.data_dir)


def _load_model_meanwhile() -> None:
    """Load the default embedder in a thread: ONNX Runtime builds its session without holding
    the GIL, so a cold `fourfold recall` opens its data dir meanwhile (measured in
    benchmarks/perf.py). The first embedding waits for the load; a load that fails is
    reported by that embedding, as one line."""
    import threading

    from fourfold.embeddings.minilm import default_embedder
    from fourfold.errors import FourfoldError

    embedder = default_embedder()
    load = getattr(embedder, "load", None)
    if load is None:  # sentence-transformers: it loads on first use, holding the GIL anyway
        return

    def run() -> None:
        try:
            load()
        except FourfoldError:
            return  # the command's own first embedding raises it again

    threading.Thread(target=run, name="fourfold-model-load").start()


def _out(value: Any, human: str | None = None) -> None:
    if state.as_json or human is None:
        typer.echo(json.dumps(_plain(value), ensure_ascii=False, indent=None if state.as_json else 2))
    else:
        typer.echo(human)


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _parse_meta(pairs: list[str] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"metadata must be key=value, got {pair!r}")
        try:
            meta[key] = json.loads(raw)
        except ValueError:
            meta[key] = raw
    return meta


# -- long-term --------------------------------------------------------------------------


@app.command()
def remember(
    text: str,
    scope: Annotated[str | None, typer.Option(help="Who or what the memory belongs to, e.g. customer:42.")] = None,
    kind: Annotated[str, typer.Option(help="preference, resolution, lesson, fact, note...")] = "note",
    meta: Annotated[list[str] | None, typer.Option("--meta", "-m", help="key=value (JSON values allowed).")] = None,
) -> None:
    """Store a durable memory (secrets are redacted first)."""
    with _memory(embeds=True) as mem:
        mid = mem.long_term.remember(text, scope=scope, kind=kind, metadata=_parse_meta(meta))
    redacted = [r.kind for r in mid.redactions]
    note = f" (redacted: {', '.join(redacted)})" if redacted else ""
    _out({"id": str(mid), "created": mid.created, "redacted": redacted}, f"{mid}{note}")


@app.command()
def recall(
    query: str,
    scope: Annotated[str | None, typer.Option(help="Only this scope's memories (default: unscoped ones).")] = None,
    k: Annotated[int, typer.Option("-k", "--k", help="How many to return.")] = 3,
    kind: Annotated[list[str] | None, typer.Option("--kind", help="Only these kinds (repeatable).")] = None,
) -> None:
    """The memories most relevant to QUERY."""
    with _memory(embeds=True) as mem:
        hits = mem.long_term.recall(query, scope=scope, k=k, kinds=kind or None)
    _out(hits, "\n".join(f"{h.score:6.2f}  [{h.kind}] {h.text}  ({h.id})" for h in hits) or "(nothing)")


@app.command()
def forget(memory_id: str) -> None:
    """Delete one memory by id."""
    with _memory() as mem:
        mem.long_term.forget(memory_id)
    _out({"forgotten": memory_id}, f"forgot {memory_id}")


@app.command("forget-scope")
def forget_scope(scope: str) -> None:
    """Erase a scope (a customer) from every store."""
    with _memory() as mem:
        counts = mem.forget_scope(scope)
    _out(counts, ", ".join(f"{v} {k}" for k, v in counts.items()) + f" removed from {scope}")


# -- episodes ---------------------------------------------------------------------------


@episodes_app.command("record")
def episodes_record(
    goal: Annotated[str, typer.Option(help="What was being attempted.")],
    outcome: Annotated[str, typer.Option(help="How it ended.")],
    action: Annotated[list[str] | None, typer.Option("--action", "-a", help="A step taken (repeatable).")] = None,
    success: Annotated[bool, typer.Option("--success/--failure")] = True,
    scope: Annotated[str | None, typer.Option()] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag")] = None,
) -> None:
    """Append an episode to the log."""
    with _memory() as mem:
        ep = mem.episodes.record(goal=goal, actions=action or [], outcome=outcome, success=success, scope=scope, tags=tag or ())
    _out(ep, ep.id)


@episodes_app.command("list")
def episodes_list(scope: Annotated[str | None, typer.Option()] = None) -> None:
    """Episodes of a scope, oldest first."""
    from fourfold.episodic import render_episode

    with _memory() as mem:
        eps = mem.episodes.episodes(scope=scope)
    _out(eps, "\n".join(f"{e.id}  {'ok ' if e.success else 'bad'}  {render_episode(e)}" for e in eps) or "(none)")


@episodes_app.command("similar")
def episodes_similar(
    situation: str,
    k: Annotated[int, typer.Option("-k", "--k")] = 3,
    scope: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Past successes most similar to SITUATION."""
    from fourfold.episodic import render_episode

    with _memory(embeds=True) as mem:
        eps = mem.episodes.similar_successes(situation, k=k, scope=scope)
    _out(eps, "\n".join(render_episode(e) for e in eps) or "(none)")


# -- facts ------------------------------------------------------------------------------


@facts_app.command("set")
def facts_set(
    key: str,
    value: Annotated[str, typer.Argument(help="The value; parsed as JSON when it is valid JSON (30, true, [..]).")],
    description: Annotated[str | None, typer.Option()] = None,
    string: Annotated[bool, typer.Option("--string", help="Store the value as a string, never as JSON.")] = False,
) -> None:
    """Set an authoritative fact."""
    parsed: Any = value
    if not string:
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
    with _memory() as mem:
        fact = mem.facts.set(key, parsed, description=description)
    _out(fact, f"{fact.key} = {json.dumps(fact.value, ensure_ascii=False)}")


@facts_app.command("get")
def facts_get(key: str) -> None:
    """Print a fact (exit code 3 if unknown)."""
    with _memory() as mem:
        fact = mem.facts.get(key)
    _out(fact, json.dumps(fact.value, ensure_ascii=False) if not isinstance(fact.value, str) else fact.value)


@facts_app.command("delete")
def facts_delete(
    key: str,
    purge: Annotated[bool, typer.Option("--purge", help="Erase its whole history too, from disk.")] = False,
) -> None:
    """Delete a fact (its history is kept unless --purge)."""
    with _memory() as mem:
        mem.facts.delete(key, purge=purge)
    _out({"deleted": key}, f"deleted {key}")


@facts_app.command("list")
def facts_list() -> None:
    """Every fact, by key."""
    with _memory() as mem:
        facts = mem.facts.list()
    _out(facts, "\n".join(f"{f.key} = {json.dumps(f.value, ensure_ascii=False)}" for f in facts) or "(none)")


@facts_app.command("schema")
def facts_schema(openai: Annotated[bool, typer.Option("--openai", help="OpenAI function format.")] = False) -> None:
    """The lookup_policy tool schema for the current facts."""
    from fourfold.semantic.tools import PolicyTool

    with _memory() as mem:
        tool = PolicyTool(mem.facts)
        schema = tool.openai_schema() if openai else tool.schema()
    typer.echo(json.dumps(schema, indent=2, ensure_ascii=False))


# -- docs -------------------------------------------------------------------------------


@docs_app.command("ingest")
def docs_ingest(
    path: Annotated[Path, typer.Argument(help="A text or Markdown file; '-' reads standard input.")],
    source: Annotated[str | None, typer.Option(help="Name of the document (default: the file name).")] = None,
) -> None:
    """Chunk a document into the vector store."""
    with _memory(embeds=True) as mem:
        if str(path) == "-":
            ids = mem.docs.ingest_text(sys.stdin.read(), source=source or "stdin")
        else:
            ids = mem.docs.ingest_file(path, source=source)
    _out({"chunks": len(ids), "ids": ids}, f"{len(ids)} chunks stored")


@docs_app.command("search")
def docs_search(query: str, k: Annotated[int, typer.Option("-k", "--k")] = 5) -> None:
    """Document chunks most relevant to QUERY."""
    with _memory(embeds=True) as mem:
        hits = mem.docs.search(query, k=k)
    _out(hits, "\n\n".join(f"{h.score:6.2f}  {h.source}#{h.position} {h.heading}\n{h.text}" for h in hits) or "(nothing)")


# -- agent ------------------------------------------------------------------------------


def _model() -> Any:
    from fourfold.models import default_model

    return default_model()


@app.command()
def chat(customer_id: str) -> None:
    """Talk to the support agent as CUSTOMER_ID. Lines: a message, /resolve OUTCOME, /quit."""
    from fourfold.agent import SupportAgent
    from fourfold.cli.render import print_reply

    model = _model()
    with _memory(embeds=True) as mem:
        agent = SupportAgent(mem, model)
        typer.echo(f"fourfold chat as {customer_id} with {model.name}. /resolve OUTCOME closes the ticket, /quit ends.")
        for line in sys.stdin:
            text = line.strip()
            if not text:
                continue
            if text == "/quit":
                break
            if text.startswith("/resolve"):
                res = agent.resolve(customer_id, text.removeprefix("/resolve").strip() or "resolved", success=True)
                typer.echo(f"resolved: episode {res.episode.id}, {len(res.remembered)} memories written")
                continue
            print_reply(agent.turn(customer_id, text), as_json=state.as_json)


@app.command()
def demo(
    data_dir: Annotated[Path | None, typer.Option("--demo-dir", help="Keep the demo's data here (default: a temp dir).")] = None,
) -> None:
    """Run the scripted support-agent scenario on a fresh data dir."""
    import tempfile

    from fourfold.agent.demo import run_demo
    from fourfold.cli.render import print_demo_step, print_demo_summary
    from fourfold.memory import Memory

    model = _model()
    with tempfile.TemporaryDirectory(prefix="fourfold-demo-") as tmp:
        where = data_dir or Path(tmp)
        typer.echo(f"fourfold demo: data dir {where}, model {model.name}\n")
        with Memory.open(where) as mem:
            outcome = run_demo(mem, model, on_step=print_demo_step)
        print_demo_summary(outcome)
    if not outcome.ok:
        raise typer.Exit(1)


_BENCHMARKS = {
    "locomo": "LoCoMo retrieval quality: fourfold vs the reference design vs BM25.",
    "perf": "Speed and memory, fourfold vs the seed's reference design, side by side.",
    "reliability": "Crash, concurrency, isolation, fuzzing and secrets at full strength.",
    "service": "The HTTP service under 50 concurrent clients.",
}


def _bench_command(name: str) -> None:
    def command(ctx: typer.Context) -> None:
        _run_benchmark(name, ctx.args)

    command.__doc__ = f"{_BENCHMARKS[name]} Arguments pass through to benchmarks/{name}.py."
    bench_app.command(name, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(command)


for _name in _BENCHMARKS:
    _bench_command(_name)


def _run_benchmark(name: str, args: list[str]) -> None:
    import runpy

    script = Path(__file__).resolve().parents[3] / "benchmarks" / f"{name}.py"
    if not script.exists():
        raise InvalidInput(f"benchmarks/{name}.py is not here: run it from a source checkout")
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.parent))  # benchmarks import their sibling helpers
    runpy.run_path(str(script), run_name="__main__")


def _register_adapters() -> None:
    # The service, MCP and doctor commands live in their own modules; their heavy imports
    # (fastapi, uvicorn, mcp) happen inside the commands, so --help stays fast.
    from fourfold.cli import data_commands, doctor_command, service_commands

    service_commands.register(app)
    doctor_command.register(app)
    data_commands.register(app)


_register_adapters()

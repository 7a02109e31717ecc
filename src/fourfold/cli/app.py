"""Commands: each parses input, makes one library call, and prints the result (or JSON)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup, TyperOption

from fourfold.cli._common import (
    AllVersionsOption,
    AsOfOption,
    KindsOption,
    ScopeFilterOption,
    WhereOption,
    _embedder,
    _memory,
    _model,
    _out,
    _selected,
    _stamp,
    _store_url,
    _version,
    _when,
    state,
)
from fourfold.config import DATA_DIR_ENV, DEFAULT_DATA_DIR, STORE_ENV
from fourfold.embeddings.spec import EMBEDDER_ENV
from fourfold.errors import InvalidInput
from fourfold.models.spec import MODEL_ENV

if TYPE_CHECKING:
    from fourfold.memory import Memory
    from fourfold.types import Remembered


class _GlobalOptionsGroup(TyperGroup):
    """The root command: its options (--data-dir, --json...) are accepted after a subcommand too.

    They are moved to the front before parsing, so the README's `fourfold recall x --json`
    works. The list comes from the callback's own parameters: a new global option needs no
    change here. Arguments after `--`, and after a pass-through command (bench), stay put.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args, self.params))


_PASS_THROUGH = frozenset({"bench"})
#: The --where option's help, shared by the commands that filter memories.
def hoist_global_options(args: list[str], params: Sequence[object]) -> list[str]:
    """`args` with the root command's options (and their values) moved to the front."""
    takes_value: dict[str, bool] = {}
    for param in params:
        if isinstance(param, TyperOption):
            for name in (*param.opts, *param.secondary_opts):
                takes_value[name] = not param.is_flag and not param.count
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--" or token in _PASS_THROUGH:
            rest += args[i:]
            break
        name = token.partition("=")[0] if token.startswith("--") else token
        if name not in takes_value:
            rest.append(token)
            i += 1
            continue
        width = 2 if takes_value[name] and "=" not in token and i + 1 < len(args) else 1
        front += args[i : i + width]
        i += width
    return front + rest


app = typer.Typer(
    cls=_GlobalOptionsGroup,
    help="fourfold: memory for LLM agents (long-term, episodic, semantic, short-term). Offline by default.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
episodes_app = typer.Typer(help="Episodic memory: what happened, and how it ended.", no_args_is_help=True)
facts_app = typer.Typer(help="Semantic memory: authoritative facts and the lookup_policy tool.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks (see benchmarks/).", no_args_is_help=True)
app.add_typer(episodes_app, name="episodes")
app.add_typer(facts_app, name="facts")
app.add_typer(bench_app, name="bench")


def _spec_option(envvar: str, default: str, text: str) -> Any:
    """A backend given as a spec string (`openai:MODEL`), read from `envvar` when not given;
    `text` is its help, `default` what the help says is used without one."""
    return typer.Option(envvar=envvar, show_default=default, help=text)


def _print_version(value: bool) -> None:
    if value:
        from fourfold import __version__

        typer.echo(f"fourfold {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    data_dir: Annotated[Path, typer.Option("--data-dir", "-d", envvar=DATA_DIR_ENV, help="The data directory.")] = Path(
        DEFAULT_DATA_DIR
    ),
    embedder: Annotated[str | None, _spec_option(
        EMBEDDER_ENV, "minilm", "minilm (the bundled model; minilm:exact also embeds queries exactly), openai:MODEL, "
        "openai-compatible:MODEL@BASE_URL?dimension=N, ollama:MODEL?dimension=N, or hash (tests only).")] = None,
    model: Annotated[str | None, _spec_option(
        MODEL_ENV, "anthropic with ANTHROPIC_API_KEY, else offline", "Chat model: offline, anthropic[:MODEL], "
        "openai[:MODEL], openai-compatible:MODEL@BASE_URL, ollama:MODEL...")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts (errors too).")] = False,
    store: Annotated[str | None, typer.Option(
        "--store", envvar=STORE_ENV, help="Keep everything in PostgreSQL: postgresql://user:pass@host/db[?schema=NAME]."
    )] = None,
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print fourfold's version and exit.")] = False,
) -> None:
    state.data_dir, state.embedder, state.model, state.as_json = data_dir, embedder, model, as_json
    state.store = _store_url(store)


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
    key: Annotated[str | None, typer.Option(help="Replace the scope's current memory with this key (a new version).")] = None,
    valid_from: Annotated[str | None, typer.Option(help="When it became true: ISO 8601 or unix seconds.")] = None,
) -> None:
    """Store a durable memory (secrets are redacted first)."""
    with _memory(create=True) as mem:
        mid = mem.long_term.remember(
            text, scope=scope, kind=kind, metadata=_parse_meta(meta), key=key, valid_from=_when(valid_from, "--valid-from")
        )
    _written(mid)


def _written(mid: Remembered) -> None:
    redacted = [r.kind for r in mid.redactions]
    note = f" (redacted: {', '.join(redacted)})" if redacted else ""
    note += f" (supersedes {', '.join(mid.supersedes)})" if mid.supersedes else ""
    note += "" if mid.created else " (unchanged)"
    _out({"id": str(mid), "created": mid.created, "redacted": redacted, "supersedes": list(mid.supersedes)},
         f"{mid}{note}")


@app.command()
def add(
    source: Annotated[str, typer.Argument(help="A file of messages, or - for stdin.")] = "-",
    scope: Annotated[str | None, typer.Option(help="Whose memory this is, e.g. customer:42.")] = None,
) -> None:
    """Keep what a conversation says that is worth remembering: stated preferences and lasting
    facts about the user (with --model's LLM, the model extracts them; else rules).

    The input is JSON (a list of {"role", "content"} messages, or of strings) or plain text,
    each line a user message.
    """
    raw = sys.stdin.read() if source == "-" else _read_text(source)
    messages = _messages(raw)
    if not isinstance(messages, list):
        raise InvalidInput("the input must be a JSON list of messages, or lines of text")
    model = _model()
    with _memory(create=True) as mem:
        done = mem.add(messages, scope=scope, model=model)
    _out(done, "\n".join(f"{r.id}  {r.text}" + ("" if r.created else "  (unchanged)") for r in done)
         or "(nothing to keep)")


#: Input that opens as JSON does (an object, or a list of objects or strings): it is read as
#: JSON or refused, never kept as a line of text.
_JSON_OPENING = re.compile(r"\s*(?:\{|\[\s*(?:[{\"\]]|$))")


def _messages(raw: str) -> Any:
    """The messages of `add`'s input: JSON when it opens as JSON, else one user message per line."""
    if _JSON_OPENING.match(raw):
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"the input is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
                               f" (character {exc.pos})") from None
    return [line for line in raw.splitlines() if line.strip()]


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None


@app.command()
def update(
    memory_id: str,
    text: str,
    kind: Annotated[str | None, typer.Option(help="The new version's kind (default: the memory's).")] = None,
) -> None:
    """Store a new version of a memory; the current one stays in its history."""
    with _memory() as mem:
        mid = mem.long_term.update(memory_id, text, kind=kind)
    _written(mid)


@app.command()
def history(memory_id: str) -> None:
    """Every version of a memory, oldest first, with when each held."""
    with _memory() as mem:
        versions = mem.long_term.history(memory_id)
    _out(versions, "\n".join(
        f"{_stamp(v.valid_from)} .. {_stamp(v.valid_to) if v.valid_to is not None else 'now':<16}  {v.text}  ({v.id})"
        for v in versions
    ))


@app.command()
def profile(scope: Annotated[str, typer.Option(help="Whose profile, e.g. customer:42.")]) -> None:
    """What every prompt for a scope carries: its current keyed memories, one per key, and its
    preferences, with when each was set."""
    with _memory() as mem:
        found = mem.long_term.profile(scope)
    _out(found, "\n".join(f"{r.key or r.kind:<20}  {r.text}  (since {_stamp(r.valid_from)})" for r in found)
         or "(no keyed memories or preferences)")


@app.command()
def recall(
    query: str,
    scope: ScopeFilterOption = None,
    k: Annotated[int, typer.Option("-k", "--k", help="How many to return.")] = 3,
    kind: KindsOption = None,
    where: WhereOption = None,
    as_of: AsOfOption = None,
    all_versions: AllVersionsOption = False,
) -> None:
    """The memories most relevant to QUERY."""
    hits = _selected(lambda lt, selection: lt.recall(query, k=k, **selection), scope, kind, where, as_of, all_versions)
    _out(hits, "\n".join(f"{h.score:6.2f}  [{h.kind}] {h.text}  ({h.id}{_version(h)})" for h in hits) or "(nothing)")


@app.command()
def forget(memory_id: str) -> None:
    """Erase one memory by id, with every version of it."""
    _erase(lambda mem: mem.long_term.forget(memory_id), {"forgotten": memory_id}, f"forgot {memory_id}")


def _erase(erase: Callable[[Memory], None], done: dict[str, str], said: str) -> None:
    """Open the memory, erase one thing, and confirm: `done` as JSON, else `said`."""
    with _memory() as mem:
        erase(mem)
    _out(done, said)


@app.command("forget-scope")
def forget_scope(
    scope: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Erase a scope (a customer) from every store; asks first on a terminal (exit 3 if the scope is unknown)."""
    with _memory() as mem:
        if not yes and sys.stdin.isatty():
            counts = mem.scopes().get(scope)
            if counts is not None:  # unknown scopes fall through to the library's NotFound
                what = _counted(counts) or "nothing"
                typer.confirm(f"Erase scope {scope} ({what}) from {state.data_dir}? This cannot be undone", abort=True)
        counts = mem.forget_scope(scope, missing_ok=False)
    _out(counts, ", ".join(f"{v} {k}" for k, v in counts.items()) + f" removed from {scope}")


@app.command()
def scopes() -> None:
    """Every scope (customer) with what it holds: memories, documents, episodes, conversations."""
    with _memory() as mem:
        found = mem.scopes()
    lines = [f"{scope}  {_counted(counts)}" for scope, counts in found.items()]
    _out(found, "\n".join(lines) or "(no scopes)")


def _counted(counts: dict[str, int]) -> str:
    """"2 memories, 1 old versions, 3 docs": the counts that are not zero."""
    return ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if v)


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
    with _memory(create=True) as mem:
        ep = mem.episodes.record(goal=goal, actions=action or [], outcome=outcome, success=success, scope=scope, tags=tag or ())
    _out(ep, ep.id)


@episodes_app.command("list")
def episodes_list(scope: Annotated[str | None, typer.Option()] = None) -> None:
    """Episodes of a scope, oldest first."""
    from fourfold.episodic import render_episode

    with _memory() as mem:
        eps = mem.episodes.episodes(scope=scope)
    _out(eps, "\n".join(f"{e.id}  {'ok ' if e.success else 'bad'}  {render_episode(e)}" for e in eps) or "(none)")


@episodes_app.command("delete")
def episodes_delete(episode_id: str) -> None:
    """Erase one episode, from disk too."""
    _erase(lambda mem: mem.episodes.forget(episode_id), {"deleted": episode_id}, f"deleted episode {episode_id}")


@episodes_app.command("erase")
def episodes_erase(
    scope: Annotated[str | None, typer.Option(help="Erase this scope's episodes and the shared cases derived from it.")] = None,
    unscoped: Annotated[bool, typer.Option("--unscoped", help="Erase the unscoped episodes.")] = False,
) -> None:
    """Erase the episodes of a scope, or the unscoped ones (`--scope shared:cases` empties the shared case base)."""
    if unscoped == (scope is not None):
        raise InvalidInput("give either --scope or --unscoped")
    with _memory() as mem:
        count = mem.episodes.forget_unscoped() if unscoped else mem.episodes.forget_scope(scope or "")
    _out({"deleted": count}, f"erased {count} episodes")


@episodes_app.command("similar")
def episodes_similar(
    situation: str,
    k: Annotated[int, typer.Option("-k", "--k")] = 3,
    scope: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Past successes most similar to SITUATION."""
    from fourfold.episodic import render_episode

    with _memory() as mem:
        eps = mem.episodes.similar_successes(situation, k=k, scope=scope)
    _out(eps, "\n".join(render_episode(e) for e in eps) or "(none)")


# -- facts ------------------------------------------------------------------------------


@facts_app.command("set")
def facts_set(
    key: str,
    value: Annotated[str, typer.Argument(help="The value: JSON (30, true, [..], {..}) or plain text; --string keeps it text.")],
    description: Annotated[str | None, typer.Option()] = None,
    string: Annotated[bool, typer.Option("--string", help="Store the value as a string, never as JSON.")] = False,
) -> None:
    """Set an authoritative fact."""
    parsed: Any = value if string else _fact_value(key, value)
    with _memory(create=True) as mem:
        fact = mem.facts.set(key, parsed, description=description)
    _out(fact, f"{fact.key} = {json.dumps(fact.value, ensure_ascii=False)}")


def _fact_value(key: str, value: str) -> Any:
    """JSON when it parses; plain text stays text; text that looks like broken JSON is refused."""
    try:
        return json.loads(value)
    except ValueError as exc:
        if value.lstrip()[:1] in ("{", "[", '"'):
            raise InvalidInput(f"the value of {key} looks like JSON but is not valid ({exc}); "
                               "fix it, or pass --string to store the text as it is") from None
        return value


@facts_app.command("get")
def facts_get(key: str) -> None:
    """Print a fact (exit code 3 if unknown)."""
    with _memory() as mem:
        fact = mem.facts.get(key)
    _out(fact, json.dumps(fact.value, ensure_ascii=False) if not isinstance(fact.value, str) else fact.value)


@facts_app.command("history")
def facts_history(key: str) -> None:
    """A fact's earlier values, oldest first, with when each was replaced, then its current value
    (exit code 3 if the key never held one)."""
    from fourfold._hints import did_you_mean
    from fourfold.errors import NotFound

    with _memory() as mem:
        earlier = mem.facts.history(key)
        current = {f.key: f for f in mem.facts.list()}
    now = current.get(key)
    if not earlier and now is None:
        raise NotFound(f"no fact {key!r}{did_you_mean(key, current, short=lambda k: k)}")
    rows = [{"value": value, "replaced_at": when} for value, when in earlier]
    lines = [f"{_stamp(when):<16}  {_shown(value)}" for value, when in earlier]
    lines.append(f"{'now':<16}  {_shown(now.value)}" if now is not None else f"{'now':<16}  (deleted)")
    _out({"key": key, "current": None if now is None else now.value, "history": rows}, "\n".join(lines))


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@facts_app.command("delete")
def facts_delete(
    key: str,
    purge: Annotated[bool, typer.Option("--purge", help="Erase its whole history too, from disk.")] = False,
) -> None:
    """Delete a fact (its history is kept unless --purge)."""
    _erase(lambda mem: mem.facts.delete(key, purge=purge), {"deleted": key}, f"deleted {key}")


@facts_app.command("list")
def facts_list() -> None:
    """Every fact, by key."""
    with _memory() as mem:
        facts = mem.facts.list()
    _out(facts, "\n".join(f"{f.key} = {json.dumps(f.value, ensure_ascii=False)}" for f in facts) or "(none)")


@facts_app.command("search")
def facts_search(
    query: str, k: Annotated[int, typer.Option("-k", "--k", help="At most this many.")] = 3,
) -> None:
    """The facts whose key name and description are nearest QUERY, best first."""
    with _memory() as mem:
        facts = mem.facts.search(query, k=k)
    _out(facts, "\n".join(f"{f.key} = {json.dumps(f.value, ensure_ascii=False)}" for f in facts) or "(none)")


@facts_app.command("schema")
def facts_schema(
    openai: Annotated[bool, typer.Option("--openai", help="OpenAI function format.")] = False,
    name: Annotated[str, typer.Option(help="The tool's name.")] = "lookup_policy",
    description: Annotated[str | None, typer.Option(help="What the tool is for, this once "
                                                    "(default: the stored one, see `facts tool-description`).")] = None,
) -> None:
    """The lookup_policy tool schema for the current facts (each key's description included)."""
    from fourfold.semantic.tools import PolicyTool

    with _memory() as mem:
        tool = PolicyTool(mem.facts, name=name, description=description)
        schema = tool.openai_schema() if openai else tool.schema()
    typer.echo(json.dumps(schema, indent=2, ensure_ascii=False))


@facts_app.command("tool-description")
def facts_tool_description(
    description: Annotated[str | None, typer.Argument(help="What the lookup_policy tool is for, in your words.")] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Go back to the default description.")] = False,
) -> None:
    """Show, or store, what the lookup_policy tool tells the model it is for (chat, service and MCP use it)."""
    if reset and description is not None:
        raise InvalidInput("give a description or --reset, not both")
    if description is None and not reset:
        with _memory() as mem:
            text = mem.facts.tool_description()
    else:
        with _memory(create=True) as mem:
            text = mem.facts.set_tool_description(description)
    _out({"description": text}, text)


# -- agent ------------------------------------------------------------------------------


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
        with Memory.open(where, embedder=_embedder()) as mem:
            outcome = run_demo(mem, model, on_step=print_demo_step)
        print_demo_summary(outcome)
    if not outcome.ok:
        raise typer.Exit(1)


_BENCHMARKS = {
    "locomo": "LoCoMo retrieval quality: fourfold vs the reference design vs BM25.",
    "perf": "Speed and memory, fourfold vs a reference design on raw Chroma and JSON Lines, side by side.",
    "reliability": "Crash, concurrency, isolation, fuzzing and secrets at full strength.",
    "service": "The HTTP service under 50 concurrent clients.",
}


def _bench_command(name: str) -> None:
    def command(ctx: typer.Context) -> None:
        _run_benchmark(name, ctx.args)

    command.__doc__ = f"{_BENCHMARKS[name]} Arguments pass through to benchmarks/{name}.py."
    # --help passes through too: the benchmark's own options are what a user asks for.
    bench_app.command(name, context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                                              "help_option_names": []})(command)


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
    from fourfold.cli import (
        chat,
        data_commands,
        docs_commands,
        doctor_command,
        list_command,
        service_commands,
        ui_command,
    )

    list_command.register(app)
    docs_commands.register(app)
    chat.register(app)
    service_commands.register(app)
    doctor_command.register(app)
    data_commands.register(app)
    ui_command.register(app)


_register_adapters()

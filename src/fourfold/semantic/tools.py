"""The fact store as a model tool: Anthropic and OpenAI schemas, and the call handler."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fourfold.errors import InvalidInput
from fourfold.protocols import FactsLike
from fourfold.semantic.keys import UNKNOWN, check_tool_description, validate_key

__all__ = ["DEFAULT_DESCRIPTION", "PolicyTool", "openai_function_schema", "policy_tool_schema"]

DEFAULT_DESCRIPTION = (
    "Return an authoritative company policy value. Always use this for refund windows, "
    "limits, and supported options instead of relying on memory."
)
_KEY_DESCRIPTION = "Which policy value to return; one of the listed keys."
_NO_KEYS_DESCRIPTION = "Which policy value to return."
_NO_KEYS_NOTE = " No policies are recorded yet, so every lookup answers UNKNOWN."
# Anthropic and OpenAI both accept tool names of this shape.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def policy_tool_schema(
    keys: Sequence[str] | Mapping[str, str], *, name: str = "lookup_policy", description: str = DEFAULT_DESCRIPTION
) -> dict[str, Any]:
    """An Anthropic tool-use schema whose `key` is an enum of the given (sorted, unique) keys.

    `keys` may map each key to the description the operator wrote for it (`facts set
    --description`); the `key` parameter's description then tells the model what each
    key means, so it can pick the right one. With no keys the enum is left out (an empty
    enum is rejected in practice) and the description says that nothing is recorded yet.
    """
    _check_tool(name, description)
    if isinstance(keys, str):
        raise InvalidInput("keys must be a sequence of fact keys, not one string")
    described = {validate_key(key): text for key, text in keys.items()} if isinstance(keys, Mapping) else {}
    enum = sorted({validate_key(key) for key in keys})
    key_schema: dict[str, Any] = {"type": "string"}
    if enum:
        meanings = " ".join(f"{key}: {described[key].strip()}." for key in enum if described.get(key, "").strip())
        key_schema.update(enum=enum, description=f"{_KEY_DESCRIPTION} {meanings}".strip())
    else:
        key_schema["description"] = _NO_KEYS_DESCRIPTION
        description += _NO_KEYS_NOTE
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {"key": key_schema},
            "required": ["key"],
            "additionalProperties": False,
        },
    }


def openai_function_schema(anthropic_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The same tool in OpenAI's function-calling shape (a deep copy, safe to mutate)."""
    try:
        name = anthropic_schema["name"]
        parameters = anthropic_schema["input_schema"]
    except (KeyError, TypeError):
        raise InvalidInput(
            "expected an Anthropic tool schema with 'name' and 'input_schema'"
        ) from None
    function = {
        "name": name,
        "description": anthropic_schema.get("description", ""),
        "parameters": copy.deepcopy(dict(parameters)),
    }
    return {"type": "function", "function": function}


class PolicyTool:
    """A fact store (local or remote) bound as a tool: `schema` lists the current keys, `handle`
    answers calls.

    With no `description`, the schema carries the one stored with the facts
    (`FactStore.set_tool_description`), re-read like the keys.
    """

    def __init__(
        self,
        facts: FactsLike,
        *,
        name: str = "lookup_policy",
        description: str | None = None,
    ) -> None:
        _check_tool(name, DEFAULT_DESCRIPTION if description is None else description)
        self.facts = facts
        self.name = name
        self.description = description

    def schema(self) -> dict[str, Any]:
        """The Anthropic schema, re-reading the keys so new facts show up in the enum."""
        return self.facts.tool_schema(name=self.name, description=self.description)

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function schema, with the current keys."""
        return openai_function_schema(self.schema())

    def handle(self, tool_input: Mapping[str, Any] | str) -> str:
        """Answer one tool call: the value as text, or UNKNOWN for any key or input it cannot use.

        `tool_input` is Anthropic's `input` dict, or OpenAI's `arguments` JSON string.
        """
        if isinstance(tool_input, str):
            tool_input = _parse_arguments(tool_input)
        if not isinstance(tool_input, Mapping):
            return UNKNOWN
        return self.facts.lookup(tool_input.get("key"))


def _parse_arguments(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):  # a model's malformed arguments are UNKNOWN
        return None


def _check_tool(name: object, description: object) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(f"tool names are 1-64 letters, digits, '_' or '-'; got {name!r:.80}")
    check_tool_description(description)

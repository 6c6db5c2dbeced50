"""Reading the explorer's JSON request bodies: typed fields, checked before any math runs.

Every problem is a ``RequestError`` carrying the HTTP status and a message that names the field,
restates the bad value and the rule. Nothing here evaluates input; JSON is decoded with the
standard ``json`` module and each field is checked for its type and range.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from .._checks import is_int

OPCODES = (
    "all-reduce",
    "all-reduce-start",
    "all-gather",
    "all-gather-start",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-broadcast",
    "collective-permute",
    "collective-permute-start",
)


class RequestError(Exception):
    """A request the explorer refuses: ``status`` is the HTTP code (4xx), ``kind`` a short name."""

    def __init__(self, status: int, message: str, kind: str = "BadRequest", **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.extra = extra

    def to_json(self) -> dict[str, Any]:
        """The error body: ``{"error": {"kind", "message", ...extra}}``."""
        return {"error": {"kind": self.kind, "message": self.message, **self.extra}}


def decode_body(body: bytes) -> dict[str, Any]:
    """The JSON object in ``body``; anything else (bad UTF-8, bad JSON, not an object) is a 400."""
    try:
        value = json.loads(body.decode("utf-8")) if body.strip() else {}
    except UnicodeDecodeError as error:
        raise RequestError(400, f"request body is not UTF-8: {error.reason}") from None
    except json.JSONDecodeError as error:
        raise RequestError(
            400,
            f"request body is not JSON: {error.msg} at line {error.lineno} column {error.colno}",
        ) from None
    except RecursionError:
        raise RequestError(400, "request body is nested too deeply") from None
    if not isinstance(value, dict):
        raise RequestError(400, f"request body must be a JSON object, got {_kind(value)}")
    return value


def text_request(body: bytes, query: str) -> dict[str, Any]:
    """A request whose module text is the whole body (``Content-Type: text/plain``, no JSON
    to decode around a dump of tens of megabytes): ``{"text": body}`` with the other fields
    from the query string, each value JSON (``?lanes=[0,1]&replica_count=2``). Bad UTF-8, a
    value that is not JSON and ``text`` in the query are 400s."""
    request: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, max_num_fields=64):
        if key == "text":
            raise RequestError(400, "query parameter 'text' is not taken: the body is the "
                                    "module text")
        if key in request:
            raise RequestError(400, f"query parameter {key!r} is given twice")
        try:
            request[key] = json.loads(value)
        except json.JSONDecodeError:
            raise RequestError(400, f"query parameter {key!r} must be a JSON value, got "
                                    f"{value[:40]!r}") from None
    try:
        request["text"] = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestError(400, f"request body is not UTF-8: {error.reason}") from None
    return request


def _kind(value: object) -> str:
    """The JSON name of ``value``'s type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _shown(value: object) -> str:
    """``value`` named for a message: its JSON text for numbers, strings and booleans (cut to
    40 characters), else its JSON type."""
    if isinstance(value, bool):
        return f"a boolean ({json.dumps(value)})"
    if isinstance(value, float):
        return f"the number {json.dumps(value)}"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40] + ('...' if len(value) > 40 else ''))}"
    return _kind(value)


@dataclass(frozen=True)
class Fields:
    """Typed access to one JSON object; ``where`` prefixes field names in messages."""

    data: dict[str, Any]
    where: str = ""

    def _name(self, key: str) -> str:
        return f"{self.where}{key}"

    def check_known(self, known: tuple[str, ...]) -> None:
        """Refuse fields outside ``known`` so that typos do not pass silently."""
        unknown = sorted(set(self.data) - set(known))
        if unknown:
            raise RequestError(
                400,
                f"unknown field {self._name(unknown[0])!r}; known fields are "
                + ", ".join(repr(self._name(k)) for k in known),
            )

    def has(self, key: str) -> bool:
        """Whether ``key`` is present and not null."""
        return self.data.get(key) is not None

    def integer(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        """An integer field >= ``minimum``; missing or null gives ``default`` (400 if none)."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise RequestError(400, f"field {self._name(key)!r} is required (an integer)")
            return default
        if isinstance(value, str) and not value.strip():
            raise RequestError(
                400, f"field {self._name(key)!r} is empty; give an integer of at least {minimum}"
            )
        if not is_int(value):
            raise RequestError(
                400, f"field {self._name(key)!r} must be an integer, got {_shown(value)}"
            )
        if value < minimum:
            raise RequestError(
                400, f"field {self._name(key)!r} must be at least {minimum}, got {value}"
            )
        return int(value)

    def boolean(self, key: str, default: bool) -> bool:
        """A boolean field; missing or null gives ``default``."""
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise RequestError(
                400, f"field {self._name(key)!r} must be a boolean, got {_kind(value)}"
            )
        return value

    def optional_boolean(self, key: str) -> bool | None:
        """A field that is true, false or absent (null); absent is a value of its own."""
        value = self.data.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise RequestError(
            400, f"field {self._name(key)!r} must be true, false or null, got {_kind(value)}"
        )

    def string(self, key: str, default: str | None = None, max_length: int = 1 << 20) -> str:
        """A string field; missing or null gives ``default`` (400 if none)."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise RequestError(400, f"field {self._name(key)!r} is required (a string)")
            return default
        if not isinstance(value, str):
            raise RequestError(
                400, f"field {self._name(key)!r} must be a string, got {_kind(value)}"
            )
        if len(value) > max_length:
            raise RequestError(
                400, f"field {self._name(key)!r} is {len(value)} characters, more than {max_length}"
            )
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        """A string field restricted to ``choices``."""
        value = self.string(key, default)
        if value not in choices:
            raise RequestError(
                400,
                f"field {self._name(key)!r} must be one of {', '.join(map(repr, choices))}, "
                f"got {value!r}",
            )
        return value

    def object(self, key: str) -> Fields | None:
        """A nested object, or None when missing or null."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise RequestError(
                400, f"field {self._name(key)!r} must be an object, got {_kind(value)}"
            )
        return Fields(value, f"{self._name(key)}.")

    def raw(self, key: str) -> Any:
        """The field as decoded, for fields with several allowed shapes."""
        return self.data.get(key)


def int_list(value: Any, name: str, limit: int) -> list[int]:
    """``value`` as a list of at most ``limit`` integers, else a 400 naming ``name``."""
    if not isinstance(value, list):
        raise RequestError(400, f"field {name!r} must be an array of integers, got {_kind(value)}")
    if len(value) > limit:
        raise RequestError(
            400,
            f"field {name!r} has {len(value)} entries, more than the explorer's limit of {limit}",
        )
    for index, item in enumerate(value):
        if not is_int(item):
            raise RequestError(
                400, f"field {name!r} must hold integers only; entry {index} is {_kind(item)}"
            )
        if not -(2**63) <= item < 2**63:
            raise RequestError(
                400, f"field {name!r} entry {index} is {item}, which does not fit in int64"
            )
    return value


def int_table(value: Any, name: str, limit: int) -> list[list[int]]:
    """``value`` as a list of integer lists (at most ``limit`` integers in all), else a 400."""
    if not isinstance(value, list):
        raise RequestError(400, f"field {name!r} must be an array of arrays, got {_kind(value)}")
    rows: list[list[int]] = []
    total = 0
    for index, row in enumerate(value):
        rows.append(int_list(row, f"{name}[{index}]", limit))
        total += len(row)
        if total > limit:
            raise RequestError(
                400, f"field {name!r} holds more than the explorer's limit of {limit} integers"
            )
    return rows

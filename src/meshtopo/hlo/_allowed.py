"""The attributes XLA's parser allows on an instruction; any other is refused.

Each opcode's come from the opcode table (``_opcodes.TABLE``), and XLA's message for any
other is ``unexpected attribute "x". Allowed attributes: ...``. A ``conditional`` takes
``true_computation`` and ``false_computation`` when its predicate is a ``pred``, else
``branch_computations``, as XLA's parser decides.
"""

from __future__ import annotations

from collections.abc import Collection

from ._opcodes import COMMON, TABLE, async_form

_BRANCHES = COMMON | {"branch_computations"}
_TRUE_FALSE = COMMON | {"true_computation", "false_computation"}
_ASYNC_OWN = frozenset({"async_execution_thread", "output_to_operand_aliasing"})


def allowed_attributes(opcode: str, keys: Collection[str],
                       predicate: str | None = None) -> frozenset[str]:
    """The attributes an ``opcode`` instruction whose attributes are ``keys`` may have (an
    async shorthand ``<op>-start`` takes its op's and the async start's own but ``calls``;
    ``<op>-update`` and ``<op>-done`` take ``async_execution_thread``). A conditional takes
    ``true_computation`` and ``false_computation`` when its first operand's element type
    (``predicate``) is ``pred``, else ``branch_computations``, as XLA decides; by ``keys``
    when the type is not known."""
    if opcode == "conditional":
        if predicate:
            return _TRUE_FALSE if predicate == "pred" else _BRANCHES
        return _BRANCHES if "branch_computations" in keys else _TRUE_FALSE
    found = TABLE.get(opcode)
    if found is None and (form := async_form(opcode)) is not None:
        if form[0] != "async-start":
            return COMMON | {"async_execution_thread"}
        return allowed_attributes(form[1], keys) | _ASYNC_OWN
    return TABLE[opcode].attributes


def conditional_required(keys: Collection[str], predicate: str | None = None
                         ) -> tuple[str, ...]:
    """The attributes XLA requires of a conditional (with attributes ``keys``, its
    predicate's element type ``predicate``), in the order it asks for them (by name):
    ``false_computation`` and ``true_computation``, or ``branch_computations``."""
    return tuple(sorted(allowed_attributes("conditional", keys, predicate) - COMMON))


def unexpected_attribute(opcode: str, key: str, keys: Collection[str] = (),
                         predicate: str | None = None) -> str | None:
    """XLA's message when ``key`` is not an attribute of ``opcode`` (one of XLA's opcodes,
    with attributes ``keys`` and, for a conditional, ``predicate``), else None."""
    allowed = allowed_attributes(opcode, keys, predicate)
    if key in allowed:
        return None
    return f'unexpected attribute "{key}". Allowed attributes: {", ".join(sorted(allowed))}'

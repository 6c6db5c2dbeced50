"""jaxlib's reading of printed modules: what the tests judge a pass by."""

from __future__ import annotations

import re
from typing import Any

import meshtopo as mt


def xla(module: mt.hlo.Module) -> Any:
    """jaxlib's C++ parser (with its verifier) on ``module.to_text()``."""
    import jaxlib._hlo as jax_hlo  # type: ignore[import-not-found]

    return jax_hlo.hlo_module_from_text(module.to_text())


def entry(parsed: Any) -> Any:
    """The entry computation of a jaxlib module (the last one it prints)."""
    text = parsed.to_string()
    name = re.search(r"^ENTRY %?([^\s(]+)", text, re.M).group(1)  # type: ignore[union-attr]
    return next(c for c in parsed.computations() if c.name == name)


def opcode(instruction: Any) -> str:
    """The opcode as XLA spells it."""
    return str(instruction.opcode).rsplit(".", 1)[-1]


def root(parsed: Any) -> Any:
    """The root instruction of the entry computation of a jaxlib module."""
    text = parsed.to_string()
    block = text[text.index("\nENTRY"):]
    line = next(x for x in block.splitlines() if x.strip().startswith("ROOT"))
    name = line.split("=", 1)[0].replace("ROOT", "").strip().lstrip("%")
    return next(i for i in entry(parsed).instructions() if i.name == name)


def sequence(parsed: Any) -> list[str]:
    """Names in the schedule of the entry computation (jaxlib prints a scheduled module in
    schedule order)."""
    text = parsed.to_string()
    block = text[text.index("\nENTRY"):].split("\n}", 1)[0]
    return [x.split("=", 1)[0].replace("ROOT", "").strip().lstrip("%")
            for x in block.splitlines()[2:] if "=" in x]

"""XLA's own test modules (``../shared/corpora/xla_tests/modules.jsonl`` beside the project),
read when present: tests over them skip where the corpus is not installed."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "xla_tests" / "modules.jsonl"


@functools.cache
def _rows() -> tuple[tuple[str, str], ...]:
    with CORPUS.open() as lines:
        return tuple((row["id"], row["text"]) for row in map(json.loads, lines))


def corpus() -> tuple[tuple[str, str], ...]:
    """(id, text) of every module of the corpus; the test skips when it is absent."""
    if not CORPUS.exists():
        pytest.skip(f"XLA's test corpus is not at {CORPUS}")
    return _rows()

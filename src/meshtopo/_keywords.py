"""Keyword-only arguments that were positional in the last release.

``keywords_were_positional`` lets a function whose keyword-only arguments used to be
positional still take them by position for one release, with a ``DeprecationWarning`` naming
the keywords to write. The function itself sees keywords only.

>>> import warnings
>>> @keywords_were_positional
... def scaled(value: int, *, factor: int) -> int:
...     return value * factor
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     scaled(2, 3), str(caught[0].message)
(6, 'scaled: pass factor= by keyword; passing it by position is deprecated and stops working in the next release')
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")


def keywords_were_positional(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function``, also callable with its keyword-only arguments given by position after
    its positional ones (in their order), which warns with ``DeprecationWarning``."""
    parameters = inspect.signature(function).parameters.values()
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    keywords = [p.name for p in parameters if p.kind is p.KEYWORD_ONLY]

    @functools.wraps(function)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if len(args) > positional:
            late = keywords[: len(args) - positional]
            warnings.warn(
                f"{function.__name__}: pass {', '.join(f'{name}=' for name in late)} by keyword; "
                f"passing {'it' if len(late) == 1 else 'them'} by position is deprecated and "
                "stops working in the next release",
                DeprecationWarning,
                stacklevel=2,
            )
            kwargs.update(zip(late, args[positional:], strict=False))
            args = args[:positional]  # type: ignore[assignment]
        return function(*args, **kwargs)

    return call

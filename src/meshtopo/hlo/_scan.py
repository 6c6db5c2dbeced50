"""The fast path: find every collective in HLO text with a few compiled regexes.

XLA prints one instruction per line, with a collective's attributes in a fixed order
(``channel_id``, ``replica_groups``, ``constrain_layout``, ``dimensions``,
``use_global_device_ids``, ``source_target_pairs``, ``slice_sizes``, ``to_apply``), followed by
attributes meshtopo keeps as raw text (``metadata``, ``frontend_attributes``, ...). One regex
reads such a line in one match. Anything else (other orders, unusual nesting, attributes split
over lines, async wrappers) goes through the general line reader in ``_line``, so the fast
path decides only how quickly a line is read, never what it means.

Replica-group texts, pair lists and dimension lists are decoded once per distinct text
(``ScanContext`` caches), which is what makes 20,000 collectives cheap.
"""

from __future__ import annotations

import re

from .._errors import HloParseError
from ._collective import COLLECTIVE_OPCODES, Collective
from ._context import SHAPE_PATTERN, ScanContext
from ._line import decode_groups, decode_int_list, decode_pairs, finish, read_line

OPCODE_PATTERN = (
    r"(?:all-reduce|all-gather|collective-permute)(?:-start|-done)?|reduce-scatter"
    r"|ragged-all-to-all|all-to-all|collective-broadcast|(?:send|recv)(?:-done)?"
    r"|async-(?:start|update|done)"
)
_INTS = r"[\d, ]*"
_GROUPS = (
    r"\{\{(?=[\d,{} ]{" + str(256) + r"})|\{[\d,{} ]*\}|\[" + _INTS + r"\]<=\[" + _INTS + r"\](?:T\(" + _INTS + r"\))?"
    r"|mesh\[[^\]\n]*\](?:, device_ids=\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\))?[ \t]*\{[^{}\n]*\}"
)
# Groups: 1 indent, 2 ROOT, 3 name, 4 shape, 5 opcode, 6 operands, 7 channel_id,
# 8 replica_groups, 9 constrain_layout, 10/12 dimensions, 11 use_global_device_ids,
# 13 source_target_pairs, 14 slice_sizes, 15 to_apply, 16 the rest of the line.
_AFTER_GROUPS = (
    r"(?:, constrain_layout=(true|false))?(?:, dimensions=\{(" + _INTS + r")\})?"
    r"(?:, use_global_device_ids=(true|false))?(?:, dimensions=\{(" + _INTS + r")\})?"
    r"(?:, source_target_pairs=(\{[\d,{} ]*\}))?(?:, slice_sizes=(\{[\d,{} ]*\}))?"
    r"(?:, to_apply=(%?[\w.\-]+))?"
)
COLLECTIVE_LINE = re.compile(
    r"\n([ \t]*)(ROOT[ \t]+)?(%?[^\s=%]+)[ \t]*=[ \t]*(" + SHAPE_PATTERN + r")[ \t]+("
    + OPCODE_PATTERN + r")\((?:([^()\n]*(?:\([^()\n]*\)[^()\n]*)*)\)"
    r"(?:, channel_id=(\d{1,18}))?(?:, replica_groups=(" + _GROUPS + r"))?"
    + _AFTER_GROUPS + r")?([^\n]*)"
)
# A long explicit list is matched only by its opening "{{" (a regex walk over thousands of
# ids is slow); its end is found with str.find and the rest of the line read by this regex.
_REST_AFTER_LONG_GROUPS = re.compile(_AFTER_GROUPS + r"([^\n]*)")
# A later attribute that the fast groups above would have to read: the line takes the
# general reader instead.
_LATE_KEYS = re.compile(
    r"(?:channel_id|replica_groups|use_global_device_ids|dimensions|source_target_pairs"
    r"|slice_sizes|to_apply|calls|constrain_layout|mode|_xla_send_recv_source_target_pairs)="
)
# Any opcode-shaped token: counts the collective lines the fast regex must have seen. It
# starts with a literal '(' and looks behind, which keeps the pass cheap.
_OPCODE_NAMES = (
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
    "collective-broadcast", "all-reduce-start", "all-reduce-done", "all-gather-start",
    "all-gather-done", "collective-permute-start", "collective-permute-done", "send", "recv",
    "send-done", "recv-done", "async-start", "async-update", "async-done",
)  # fmt: skip
_OPCODE_TOKEN = re.compile(
    r"\((?:" + "|".join(f"(?<=[ \t]{re.escape(n)})" for n in _OPCODE_NAMES) + ")"
)
COMPUTATION_HEADER = re.compile(
    r"\n(ENTRY[ \t]+)?(%?[^\s(){}=,\"%]+|%[^\s(){}=,\"]+)[ \t]*(?:\([^\n]*)?\{[ \t]*\r?(?=\n|\Z)"
)
_LINE_START = re.compile(r"\n[ \t]*(?:ROOT[ \t]+)?%?[^\s=%]+[ \t]*=")


def find_computations(text: str, base: int = 0) -> list[tuple[int, str, bool]]:
    """(offset, name without %, is_entry) of every computation header in ``text``
    (``text`` starts with a newline)."""
    return [
        (m.start() + base, m.group(2).lstrip("%"), m.group(1) is not None)
        for m in COMPUTATION_HEADER.finditer(text)
    ]


def scan_collectives(
    text: str,
    context: ScanContext,
    computations: list[tuple[int, str, bool]],
    first_line: int = 1,
    computation: str | None = None,
) -> list[Collective]:
    """Every collective instruction in ``text``, in text order; ``first_line`` is the line
    number of ``text[0]`` (instructions are found after a newline, so a block should start
    with the newline that ends the line before it). ``computations`` are the headers from
    ``find_computations`` and ``computation`` is the one open at the start of ``text``."""
    out: list[Collective] = []
    append = out.append
    count = text.count
    headers = iter(computations)
    next_header = next(headers, None)
    last, line = 0, first_line
    handled_to = -1
    groups_cache = context.group_cache
    seen = 0
    for m in COLLECTIVE_LINE.finditer(text):
        start = m.start()
        seen += 1
        while next_header is not None and next_header[0] <= start:
            computation = next_header[1]
            next_header = next(headers, None)
        line += count("\n", last, start + 1)
        last = start + 1
        if start < handled_to:
            continue
        f = m.groups()
        rest = None
        if f[7] == "{{":
            rest, f = _long_groups(text, m, f)
        tail = f[15]
        if (
            f[5] is None
            or (tail and (_LATE_KEYS.search(tail) or tail.count("{") != tail.count("}")))
            or tail.endswith(",")
        ):
            collective, handled_to = read_line(text, start + 1, line, computation, context)
            if collective is not None:
                append(collective)
            continue

        def column(group: int, m: re.Match[str] = m, rest: re.Match[str] | None = rest) -> int:
            if rest is not None and group > 8:
                return rest.start(group - 8) - m.start()
            return m.start(group) - m.start()

        name = f[2]
        opcode = f[4]
        operand_text = f[5]
        if " " not in operand_text and "," not in operand_text and "/" not in operand_text:
            operands: tuple[str, ...] = (
                (operand_text[1:] if operand_text[:1] == "%" else operand_text,)
                if operand_text else ())
            inline: tuple[str | None, ...] = ()
        else:
            operands, inline = _operands(operand_text)
        c = Collective(
            name[1:] if name[0] == "%" else name, opcode, f[3], operands, line,
            m.start(3) - start, computation, context,
        )
        if inline:
            c.inline_shapes = inline
        if f[1]:
            c.is_root = True
        if f[6]:
            c.channel_id = int(f[6])
        groups = f[7]
        if groups is not None:
            cached = groups_cache.get(groups)
            if cached is None:
                cached = decode_groups(groups, line, column(8), context)
            c.replica_groups = cached
            c.groups_text = groups
        if f[8]:
            c.constrain_layout = f[8] == "true"
        if f[10]:
            c.use_global_device_ids = f[10] == "true"
        if f[9] is not None or f[11] is not None:
            group = 10 if f[9] is not None else 12
            c.dimensions = decode_int_list(
                f[group - 1], "dimensions", line, column(group), context)
        if f[12] is not None:
            pairs = context.pairs_cache.get(f[12])
            c.source_target_pairs = pairs if pairs is not None else decode_pairs(
                f[12], line, column(13), context)
        if f[13] is not None:
            c.slice_sizes = decode_pairs(f[13], line, column(14), context, pairs=False)  # type: ignore[assignment]
        if f[14]:
            c.to_apply = f[14][1:] if f[14][0] == "%" else f[14]
        if tail:
            c.tail = tail
            c.tail_column = column(16)
        if opcode not in _CHECKED or groups is None or c.to_apply is None or (
            f[10] == "true" and not f[6]
        ):
            finish(c)
        append(c)
    if len(_OPCODE_TOKEN.findall(text)) > seen:
        return _rescan(text, context, computations, first_line, out)
    return out


# all-reduce with to_apply, groups and no flag problem needs none of ``finish``'s checks.
_CHECKED = frozenset({"all-reduce", "all-reduce-start"})


def _long_groups(
    text: str, m: re.Match[str], f: tuple[str | None, ...]
) -> tuple[re.Match[str] | None, tuple[str | None, ...]]:
    """Complete a match that stopped at the "{{" of a long explicit list."""
    begin = m.start(8)
    end = text.find("}}", begin)
    newline = text.find("\n", begin)
    if end < 0 or (0 <= newline < end):
        return None, (*f[:5], None, *f[6:])  # let the general reader report it
    rest = _REST_AFTER_LONG_GROUPS.match(text, end + 2)
    if rest is None:  # pragma: no cover - every group of the regex is optional
        return None, (*f[:5], None, *f[6:])
    return rest, (*f[:7], text[begin:end + 2], *rest.groups())


def _operands(text: str) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    """Operand names and inline shapes (all None when none is written) of an operand list."""
    from ._lexer import operand_name, split_operands

    pairs = [operand_name(op) for op, _ in split_operands(text, 0, 1)]
    names = tuple(name for name, _ in pairs)
    shapes = tuple(shape for _, shape in pairs)
    return names, (shapes if any(shapes) else ())


def _rescan(
    text: str,
    context: ScanContext,
    computations: list[tuple[int, str, bool]],
    first_line: int,
    found: list[Collective],
) -> list[Collective]:
    """Some opcode token was not on a line the fast regex read: read every such line with
    the general reader (rare: exotic shapes or operand nesting)."""
    known = {(c.line, c.column) for c in found}
    extra: list[Collective] = []
    starts = [offset for offset, _, _ in computations]
    names = [name for _, name, _ in computations]
    line_starts_seen: set[int] = set()
    for token in _OPCODE_TOKEN.finditer(text):
        begin = text.rfind("\n", 0, token.start())
        if begin in line_starts_seen or _LINE_START.match(text, begin) is None:
            continue
        line_starts_seen.add(begin)
        line = first_line + text.count("\n", 0, begin + 1)
        import bisect

        index = bisect.bisect_right(starts, begin) - 1
        computation = names[index] if index >= 0 else None
        collective, _ = read_line(text, begin + 1, line, computation, context)
        if collective is not None and (collective.line, collective.column) not in known:
            extra.append(collective)
    if not extra:
        return found
    return sorted(found + extra, key=lambda c: (c.line, c.column))


def check_opcode(opcode: str, line: int, column: int) -> None:
    """Raise if ``opcode`` is not a collective opcode (guards the general reader)."""
    if opcode not in COLLECTIVE_OPCODES:
        raise HloParseError(f"{opcode} is not a collective opcode", line, column)

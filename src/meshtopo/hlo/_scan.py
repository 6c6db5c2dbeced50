"""The fast path: find every collective in HLO text with a few compiled regexes.

XLA prints one instruction per line, with a collective's attributes in a fixed order
(``channel_id``, ``replica_groups``, ``constrain_layout``, ``dimensions``,
``use_global_device_ids``, ``source_target_pairs``, ``slice_sizes``, ``to_apply``), followed by
attributes meshtopo keeps as raw text (``metadata``, ``frontend_attributes``, ...). One regex
reads such a line in one match. Anything else (other orders, unusual nesting, attributes split
over lines, async wrappers) goes through the general line reader in ``_line``, so the fast
path decides only how quickly a line is read, never what it means. An instruction is found
when its head (name, shape, opcode) is on one line, as XLA prints it; its attributes may
continue on the following lines.

The regex also finds the computation headers, so the text is walked once. Lines with the
same attribute text (before ``metadata``) share one decoded template and its group mode, and
replica-group texts, pair lists and dimension lists are decoded once per distinct text
(``ScanContext`` caches): that is what makes 20,000 collectives cheap. Long explicit lists are
decoded together when the scan ends (``_explicit``), before any error found after them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .._errors import InvalidArgumentError, MeshtopoError
from .._modes import CollectiveOpGroupMode
from ._collective import ASYNC_OPCODES, SYNC_OPCODES, Collective, DecodedAttributes
from ._context import SHAPE_PATTERN, ScanContext
from ._explicit import PendingGroups, decode_explicit_lists
from ._lexer import operand_name, split_operands
from ._line import (
    decode_groups,
    decode_int_list,
    decode_pairs,
    decode_slice_sizes,
    finish,
    read_line,
)

OPCODE_PATTERN = (
    r"(?:all-reduce|all-gather|collective-permute)(?:-start|-done)?|reduce-scatter"
    r"|ragged-all-to-all|all-to-all|collective-broadcast|(?:send|recv)(?:-done)?"
    r"|async-(?:start|update|done)"
)
_INTS = r"[0-9, ]*"
_GROUPS = (
    r"\{[0-9,{} ]*\}|\[" + _INTS + r"\]<=\[" + _INTS + r"\](?:T\(" + _INTS + r"\))?"
    r"|mesh\[[^\]\n]*\](?:, device_ids=\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\))?[ \t]*\{[^{}\n]*\}"
)
# A shape: XLA's forms (atomic, so a non-collective line fails fast), or a tuple nested deeper
# than SHAPE_PATTERN follows, taken lazily up to the opcode (the general reader checks it).
_TUPLE_PATTERN = SHAPE_PATTERN[SHAPE_PATTERN.index("|") + 1:-1]
_SHAPE = r"(?>" + SHAPE_PATTERN + r")|(?=\()(?!" + _TUPLE_PATTERN + r")[^\n]*?"
_HEADER_PATTERN = (
    r"(ENTRY[ \t]+)?(%?[^\s(){}=,\"%]+|%[^\s(){}=,\"]+)[ \t]*(?:\([^\n]*)?\{[ \t]*\r?(?=\n|\Z)"
)
# Groups: 1 ROOT, 2 the name's '%' (or nothing), 3 the name, 4 shape, 5 opcode, 6 the name of a
# single plain operand, else 7 the operand list, 8 channel_id, 9 the rest; or, for a computation
# header, 10 ENTRY and 11 its name. Every instruction whose head (name, shape, opcode) is on one
# line is found; nothing in a match but its first character is a newline.
# (Character classes are spelled out: sre checks literal ranges faster than \s, \w or \d; digits
# are [0-9] only, as in XLA's lexer, never other Unicode digits.)
COLLECTIVE_LINE = re.compile(
    r"\n(?:[ \t]*(ROOT[ \t]+)?(%?)([^ \t\r\n\f\v=%]++)[ \t]*=[ \t]*(" + _SHAPE + r")[ \t]+("
    + OPCODE_PATTERN + r")[ \t]*\((?:%?([A-Za-z0-9_.\-]++)\)"
    r"|([^()\n]*(?:\([^()\n]*\)[^()\n]*)*)\))?(?:, channel_id=([0-9]{1,18}))?([^\n]*)|"
    + _HEADER_PATTERN + ")"
)
# The collective attributes after channel_id, in XLA's order. Groups: 1 replica_groups,
# 2 constrain_layout, 3/5 dimensions, 4 use_global_device_ids, 6 source_target_pairs,
# 7 slice_sizes, 8 to_apply, 9 the rest of the line.
_AFTER_GROUPS = (
    r"(?:, constrain_layout=(true|false))?(?:, dimensions=\{(" + _INTS + r")\})?"
    r"(?:, use_global_device_ids=(true|false))?(?:, dimensions=\{(" + _INTS + r")\})?"
    r"(?:, source_target_pairs=(\{[0-9,{} ]*\}))?(?:, slice_sizes=(\{[0-9,{} ]*\}))?"
    r"(?:, to_apply=(%?[\w.\-]+))?"
)
_ATTRIBUTES = re.compile(r"(?:, replica_groups=(" + _GROUPS + r"))?" + _AFTER_GROUPS + r"([^\n]*)")
# The attributes after a long explicit list (see ``_long_groups_end``).
_REST_AFTER_LONG_GROUPS = re.compile(_AFTER_GROUPS + r"([^\n]*)")
# A later attribute that the fast groups above would have to read: the line takes the
# general reader instead.
_LATE_KEYS = re.compile(
    r"(?:channel_id|replica_groups|use_global_device_ids|dimensions|source_target_pairs"
    r"|slice_sizes|to_apply|calls|constrain_layout|mode|_xla_send_recv_source_target_pairs)="
)


def scan_collectives(
    text: str,
    context: ScanContext,
    first_line: int = 1,
    computation: str | None = None,
    headers: list[tuple[int, str, bool]] | None = None,
) -> list[Collective]:
    """Every collective instruction in ``text``, in text order; ``first_line`` is the line
    number of ``text[0]`` (instructions are found after a newline, so a block should start
    with the newline that ends the line before it) and ``computation`` the computation open
    there. The computation headers met (offset, name without %, is_entry) are appended to
    ``headers`` when given.

    A collective's ``_source`` is the offset of its line in ``text``: ``parse_module`` keeps
    the text, the streaming reader copies each instruction's text out of its block. Long
    explicit replica groups are decoded together when the scan ends (``_explicit``).
    """
    try:
        out = _scan(text, context, first_line, computation, headers)
    except MeshtopoError:
        # The lists still pending come earlier in the text: their errors come first.
        _resolve_pending([], context)
        raise
    _resolve_pending(out, context)
    return out


def _scan(
    text: str,
    context: ScanContext,
    first_line: int,
    computation: str | None,
    headers: list[tuple[int, str, bool]] | None,
) -> list[Collective]:
    out: list[Collective] = []
    append = out.append
    count = text.count
    last, line = 0, first_line
    handled_to = -1
    templates = context.templates
    shapes = context.shapes
    context.needs_link = False
    for m in COLLECTIVE_LINE.finditer(text):
        start, end = m.span()
        # A match holds no newline but its first character: count only the lines between.
        line += 1 if start == last else count("\n", last, start) + 1
        last = end
        (root, _percent, name, shape, opcode, operand, operand_text, channel, rest, entry,
         header) = m.groups()
        if header is not None:
            computation = header[1:] if header[0] == "%" else header
            if headers is not None:
                headers.append((start, computation, entry is not None))
            continue
        if start < handled_to:
            continue
        # Lines that share the attribute text before metadata share the decoded attributes
        # (``_template`` checks that text once); the metadata part is checked per line. A
        # line is first looked up by its whole attribute text.
        if operand is None and operand_text is None:
            template: _Template | None = None
        else:
            key = (opcode, channel is None, rest)
            template = templates.get(key, _MISSING)
            if template is not _MISSING:
                pass
            elif rest and rest[-1] == ",":
                template = None
            elif (cut := rest.find(", metadata=", _after_long_list(rest))) >= 0:
                if (rest.count("{", cut) == rest.count("}", cut)
                        and _LATE_KEYS.search(rest, cut) is None):
                    key = (opcode, channel is None, rest[:cut])
                    template = templates.get(key, _MISSING)
                else:
                    template = None
        if template is None:
            handled_to = _read_line(text, start, line, computation, context, append)
            continue
        inline: tuple[str | None, ...] = ()
        if operand is not None:
            operands: tuple[str, ...] = (operand,)
            tail_column = m.end(6) + 1 - start
        else:
            tail_column = m.end(7) + 1 - start
            if operand_text.strip():
                operands, inline = _operands(operand_text, line, m.start(7) - start)
            else:
                operands = ()
        c = Collective(
            name, opcode, shapes.setdefault(shape, shape), operands, line,
            m.start(2) - start, computation, context, template[0],
            int(channel) if channel else None, None, tail_column, start + 1, template[1],
        )
        if inline:
            c.inline_shapes = inline
        if root:
            c.is_root = True
            if computation is not None and opcode not in ASYNC_OPCODES:
                context.root_collectives[computation] = c
        if opcode not in SYNC_OPCODES:
            context.needs_link = True
        if template is _MISSING:
            decoded = _template(c, text, m.start(9), start, context)
            if decoded is None:
                templates[key] = None
                handled_to = _read_line(text, start, line, computation, context, append)
                continue
            templates[key] = (decoded, _known_mode(c))
        elif c.slice_sizes is not None and len(operands) != 4:
            finish(c)
        append(c)
    return out


# A template: the decoded attributes and the group mode (None when the mode is decided later,
# for async wrappers, or raises) shared by every line with the same attribute text.
_Template = tuple[DecodedAttributes | None, "CollectiveOpGroupMode | None"]
_MISSING: _Template = (None, None)


def _resolve_pending(collectives: list[Collective], context: ScanContext) -> None:
    """Decode the long explicit lists the scan left pending (together; the exact reader,
    which raises with line and column, for any not in XLA's form) and put them in place."""
    pending = list(context.pending_groups.values())
    if not pending:
        return
    context.pending_groups.clear()
    cache = context.group_cache
    for item, groups in zip(pending, decode_explicit_lists([p.text for p in pending]),
                            strict=True):
        if groups is None:
            groups = decode_groups(item.text, item.line, item.column, context)
        item.result = cache[item.text] = groups
    for c in collectives:
        found = c.replica_groups
        if found.__class__ is PendingGroups:
            c.replica_groups = found.result
    templates = context.templates
    for key, template in templates.items():
        if template is not None and template[0] is not None:
            found = template[0][0]
            if found.__class__ is PendingGroups:
                templates[key] = ((found.result, *template[0][1:]), template[1])


def _known_mode(c: Collective) -> CollectiveOpGroupMode | None:
    """The group mode of a freshly decoded sync or start collective (None for async wrappers,
    whose mode follows the op they wrap, and for modes that raise)."""
    if c.opcode in ASYNC_OPCODES:
        return None
    try:
        return c.mode
    except InvalidArgumentError:
        return None


def _read_line(
    text: str,
    start: int,
    line: int,
    computation: str | None,
    context: ScanContext,
    append: Callable[[Collective], None],
) -> int:
    """Read the instruction at the newline ``start`` with the general reader; append it when
    it is a collective and return the offset just past it."""
    collective, handled_to = read_line(text, start + 1, line, computation, context)
    if collective is not None:
        _note(collective, context)
        append(collective)
    return handled_to


def _template(
    c: Collective, text: str, pos: int, line_start: int, context: ScanContext
) -> DecodedAttributes | None:
    """Decode the attributes after channel_id (at ``pos``) into ``c``, check them, and return
    them as a template for lines with the same attribute text; None when the line needs the
    general reader (attributes out of XLA's order, or text the regex cannot place)."""
    end = _long_groups_end(text, pos)
    if end < 0:
        m = _ATTRIBUTES.match(text, pos)
        if m is None:  # pragma: no cover - every group of the regex is optional
            return None
        g, spans, offset, begin = m.groups(), m, 0, m.start(1)
    else:
        # A long explicit list is cut out with str.find (a regex walk over thousands of ids
        # is slow), and the rest of the line read by a regex.
        begin = pos + len(_LONG_GROUPS)
        if text.find("\n", begin, end) >= 0:
            return None
        after = _REST_AFTER_LONG_GROUPS.match(text, end + 2)
        if after is None:  # pragma: no cover - every group of the regex is optional
            return None
        g, spans, offset = (text[begin:end + 2], *after.groups()), after, 1

    def column(group: int) -> int:
        return (spans.start(group - offset) if group > 1 else begin) - line_start

    if _LATE_KEYS.search(g[8]) or g[8].count("{") != g[8].count("}"):
        return None
    line = c.line
    if g[0] is not None:
        if offset and g[0] not in context.group_cache:
            # A long explicit list: read with the others of this scan when it ends.
            pending = context.pending_groups.get(g[0])
            if pending is None:
                pending = context.pending_groups[g[0]] = PendingGroups(g[0], line, column(1))
            c.replica_groups = pending  # type: ignore[assignment]
        else:
            c.replica_groups = decode_groups(g[0], line, column(1), context)
        c.groups_text = g[0]
    if g[1]:
        c.constrain_layout = g[1] == "true"
    if g[3]:
        c.use_global_device_ids = g[3] == "true"
    if g[2] is not None or g[4] is not None:
        group = 3 if g[2] is not None else 5
        c.dimensions = decode_int_list(g[group - 1], "dimensions", line, column(group), context)
    if g[5] is not None:
        c.source_target_pairs = decode_pairs(g[5], line, column(6), context)
    if g[6] is not None:
        c.slice_sizes = decode_slice_sizes(g[6], line, column(7), context)
    if g[7]:
        c.to_apply = g[7][1:] if g[7][0] == "%" else g[7]
    finish(c)
    return c.decoded()


_LONG_GROUPS = ", replica_groups="


def _after_long_list(rest: str) -> int:
    """Where to look for metadata in ``rest``: past the first group of a long explicit list
    written first (metadata comes after the collective attributes), else 0."""
    if len(rest) > 512 and rest.startswith(_LONG_GROUPS + "{{"):
        return max(rest.find("}"), 0)
    return 0


def _long_groups_end(text: str, pos: int) -> int:
    """The offset of the closing "}}" of an explicit replica-group list of more than 256
    characters written at ``pos`` (``, replica_groups={{...}}``), else -1."""
    if not text.startswith(_LONG_GROUPS + "{{", pos):
        return -1
    begin = pos + len(_LONG_GROUPS)
    # The first "}" ends a list of one group (a memchr-fast search); else search on.
    end = text.find("}", begin)
    if end >= 0 and text[end + 1:end + 2] != "}":
        end = text.find("}}", end)
    return end if end - begin > 256 else -1


def _note(collective: Collective, context: ScanContext) -> None:
    """Record what ``Linker`` needs from a collective read by the general reader."""
    if (
        collective.is_root
        and collective.computation is not None
        and collective.opcode not in ASYNC_OPCODES
    ):
        context.root_collectives[collective.computation] = collective
    if collective.opcode not in SYNC_OPCODES:
        context.needs_link = True


def _operands(
    text: str, line: int, column: int
) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    """Operand names and inline shapes (empty when none is written) of an operand list that
    starts at ``column`` of ``line``."""
    pairs = [operand_name(op) for op, _ in split_operands(text, line, column)]
    names = tuple(name for name, _ in pairs)
    shapes = tuple(shape for _, shape in pairs)
    return names, (shapes if any(shapes) else ())

"""Each kind of attribute value is read by one reader, whichever path reads the line (the
one-line fast path or the general reader): its verdict and values are XLA's, checked here
against jaxlib's own parser (``hlo_module_from_text``) on texts where readers used to differ.
"""

from __future__ import annotations

import re

import pytest

import meshtopo as mt
from meshtopo import hlo
from meshtopo.hlo._value_checks import INT_LIST_ATTRIBUTES

from ._text import ADD

pytestmark = pytest.mark.jax


def _module(attributes: str) -> str:
    """A module whose root is an all-reduce with ``attributes`` after ``to_apply=%add`` (an
    all-gather when they start with ``dimensions=``)."""
    call = ("all-gather(%p), replica_groups={}, " if attributes.startswith("dimensions=")
            else "all-reduce(%p), to_apply=%add")
    return (f"HloModule m, replica_count=4\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n"
            f"  %p = f32[8]{{0}} parameter(0)\n  ROOT %r = f32[8]{{0}} {call}{attributes}\n}}\n")


def _xla_error(text: str) -> tuple[str, int, int] | None:
    """(message, line, column) of XLA's first parse error, or None when it reads ``text``."""
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    try:
        hlo_module_from_text(text)
    except Exception as error:  # jaxlib raises its own status error
        found = re.search(r"was parsing (\d+):(\d+): error: ([^\n]*)", str(error))
        assert found is not None, str(error)
        return found.group(3), int(found.group(1)), int(found.group(2))
    return None


def _verdict(text: str, fast_paths: bool, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """meshtopo's first error message, or None when it reads ``text``."""
    monkeypatch.setenv("MESHTOPO_HLO_FAST_PATHS", "1" if fast_paths else "0")
    try:
        hlo.parse_module(text)
    except mt.MeshtopoError as error:
        return str(error)
    return None


# Attribute texts after ``to_apply=%add`` on an all-reduce (``dimensions=``: on an all-gather).
REFUSED = {
    "form feed inside groups": ", replica_groups={{0,\f1},{2,3}}",
    "vertical tab after a comma": ", replica_groups={{0,1},{2,3}},\vchannel_id=1",
    "form feed before a comma": ", replica_groups={{0,1},{2,3}}\f, channel_id=1",
    "escape CUnescape refuses": ', replica_groups={}, frontend_attributes={a="\\q"}',
    "frontend value not a string": ", replica_groups={}, frontend_attributes={a=1}",
    "frontend values without a comma": ', replica_groups={}, frontend_attributes={a="1" b="2"}',
    "frontend trailing comma": ', replica_groups={}, frontend_attributes={a="1",}',
    "frontend quoted name": ', replica_groups={}, frontend_attributes={"a"="1"}',
    "frontend name apart from its '='": ', replica_groups={}, frontend_attributes={a ="1"}',
    "metadata string with a bad escape": ', replica_groups={}, metadata={op_name="\\q"}',
    "dimensions without braces": "dimensions=0",
}
ACCEPTED = {
    "channel id past int64": ", replica_groups={}, channel_id=9223372036854775808",
    "channel id uint64's maximum": ", replica_groups={}, channel_id=18446744073709551615",
    "group id uint64's maximum": ", replica_groups={{0,18446744073709551615},{2,3}}",
    "metadata int uint64's maximum": ", replica_groups={}, metadata={source_line=18446744073709551615}",
    "frontend JSON dictionary": ', replica_groups={}, frontend_attributes={a={"x": "}"}}',
    "frontend name written twice": ', replica_groups={}, frontend_attributes={a="1",a="2"}',
    "metadata escapes XLA prints": ', replica_groups={}, metadata={op_name="a\\"b\\\\c\\101"}',
}


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "general"])
@pytest.mark.parametrize("attributes", list(REFUSED.values()), ids=list(REFUSED))
def test_refused_as_xla_refuses(attributes: str, fast_paths: bool,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    text = _module(attributes)
    assert _xla_error(text) is not None
    assert _verdict(text, fast_paths, monkeypatch) is not None


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "general"])
@pytest.mark.parametrize("attributes", list(ACCEPTED.values()), ids=list(ACCEPTED))
def test_accepted_as_xla_accepts(attributes: str, fast_paths: bool,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    text = _module(attributes)
    assert _xla_error(text) is None
    assert _verdict(text, fast_paths, monkeypatch) is None


def test_integers_past_int64_are_xla_s_int64() -> None:
    """XLA's lexer reads a decimal up to uint64's maximum as the int64 of the same bits."""
    module = hlo.parse_module(_module(
        ", replica_groups={{0,18446744073709551615},{2,3}}, channel_id=9223372036854775808"))
    c = module.collectives[0]
    assert c.replica_groups.replica_groups == [[0, -1], [2, 3]]
    assert c.channel_id == -(2**63)


def test_string_escapes_are_absl_s() -> None:
    """Frontend attributes and metadata decode their strings as absl's ``CUnescape``."""
    module = hlo.parse_module(_module(
        ', replica_groups={}, frontend_attributes={a="\\u00e9\\x41"}, '
        'metadata={op_name="x\\101\\ty"}'))
    c = module.collectives[0]
    assert c.frontend_attributes == {"a": "\u00e9A"}
    assert c.metadata == {"op_name": "xA\ty"}


@pytest.mark.parametrize(("attributes", "message"), [
    ("dimensions={0,a}", "expects integer"),
    ("dimensions={0 1}", "expects a list to end with kRbrace"),
    ("dimensions={0,}", "expects integer"),
    (", replica_groups={}, frontend_attributes={a=1}",
     "error parsing attribute frontend_attributes"),
    (', replica_groups={}, frontend_attributes={a="1" b="2"}',
     "expects '}' at the end of frontend attributes"),
    (', replica_groups={}, frontend_attributes={"a"="1"}', "expects attribute name"),
    (", replica_groups={{0x1}}", "expects a list to end with kRbrace"),
    (", replica_groups={{0,1}{2,3}}", "expects a list to end with kRbrace"),
    (", replica_groups={{0,1},}", "expects a list to end with kRbrace"),
    (", replica_groups={{0,a}}", "expects integer"),
], ids=["dims-ident", "dims-no-comma", "dims-trailing-comma", "frontend-int",
        "frontend-no-comma", "frontend-quoted-name", "groups-dxd", "groups-no-comma",
        "groups-trailing-comma", "groups-ident"])
def test_error_is_xla_s(attributes: str, message: str) -> None:
    """Where the one reader of a kind refuses a value, it says what XLA says, where XLA
    says it."""
    text = _module(attributes)
    expected = _xla_error(text)
    assert expected is not None and expected[0] == message
    with pytest.raises(mt.HloParseError) as raised:
        hlo.parse_module(text)
    assert (raised.value.message, raised.value.line, raised.value.column) == expected


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "general"])
def test_printed_shape_pattern_takes_no_layout_the_reader_refuses(
        fast_paths: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path's pattern of printed shapes takes only layouts the shape reader takes:
    a layout item ``Tx`` is read, and refused, token by token."""
    text = _module(", replica_groups={}").replace("f32[8]{0} parameter", "f32[8]{0:Tx} parameter")
    assert _xla_error(text) is not None
    assert _verdict(text, fast_paths, monkeypatch) is not None


@pytest.mark.parametrize(("size", "padding", "read"), [
    (15, "0_0_1", True), (6, "-1_-1", True), (1, "0_0_-1", False),
], ids=["interior", "negative-edges", "negative-interior"])
def test_padding_is_xla_s_pad_token(size: int, padding: str, read: bool) -> None:
    """A pad's padding is XLA's pad token (the token table's): an interior padding is no
    negative number."""
    text = (f"HloModule m\nENTRY %main {{\n  %p = f32[8]{{0}} parameter(0)\n"
            f"  %z = f32[] constant(0)\n"
            f"  ROOT %r = f32[{size}]{{0}} pad(%p, %z), padding={padding}\n}}\n")
    assert (_xla_error(text) is None) == read
    if read:
        hlo.parse_module(text)
    else:
        with pytest.raises(mt.HloParseError):
            hlo.parse_module(text)


@pytest.mark.parametrize("text", [
    "{{0,1},{2,3}}", "{ { 0 , 1 } , { 2 } }", "{}", "{{}}", "{{0,1},{}}", "{{-1,18446744073709551615}}",
    "{{0,1},}", "{{0,1}{2,3}}", "{,{0,1}}", "{{0,1.5}}", "{{0 1}}", "{{0,a}}", "{0,1}", "{{0,1}",
    "{{0,\f1}}", "{{99999999999999999999}}", "{{0,1}} x",
])
def test_explicit_groups_and_pairs_read_one_grammar(text: str) -> None:
    """Replica groups (read by the groups' scanner, below the HLO layer) and
    ``source_target_pairs`` (read by ``_values.parse_int_lists``) are lists of integer
    lists with one grammar: each takes the texts the other takes, as the same lists."""
    from meshtopo.hlo._int_lists import parse_int_lists

    try:
        pairs: list[list[int]] | None = parse_int_lists(text, 1, 1)
    except mt.HloParseError:
        pairs = None
    try:
        groups: list[list[int]] | None = mt.CollectiveDeviceList.parse(text).replica_groups
    except mt.HloParseError:
        groups = None
    assert pairs == groups


def _first_with_int_list(key: str) -> tuple[str, int] | None:
    """A corpus module XLA reads that writes ``key={N,...}``, and where the list's first
    integer starts."""
    from ._corpus import corpus

    pattern = re.compile(r",\s*" + key + r"=\{([0-9][0-9,]*)\}")
    for _, text in corpus():
        found = pattern.search(text)
        if found is not None and len(text) < 8000 and _xla_error(text) is None:
            return text, found.start(1)
    return None


@pytest.mark.parametrize("key", sorted(INT_LIST_ATTRIBUTES))
def test_integer_lists_are_refused_as_xla_refuses_them(key: str) -> None:
    """Every attribute XLA reads as a braced integer list is read by the one reader of them:
    ``{0 1,2}`` (two integers without a comma) is refused in XLA's words at XLA's token."""
    found = _first_with_int_list(key)
    if found is None:
        pytest.skip(f"no corpus module writes {key}")
    text, at = found
    broken = text[:at] + "0 " + text[at:]
    expected = _xla_error(broken)
    assert expected is not None and expected[0] == "expects a list to end with kRbrace"
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(broken)
    assert (info.value.message, info.value.line, info.value.column) == expected


# Shardings as XLA prints them and as hand-written texts get them wrong; XLA's verdict,
# message, line and column on each come from jaxlib.
SHARDINGS = [
    "{replicated}", "{maximal device=1}", "{manual}", "{unknown}", "{devices=[2,1]0,1}",
    "{devices=[2,1]<=[2]}", "{devices=[2,2]<=[2,2]T(1,0)}", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}",
    "{devices=[2,2]0,1,2,3 last_tile_dims={manual}}", "{{replicated}, {maximal device=0}}", "{}",
    '{devices=[2,1]0,1 metadata={op_name="a"}}', '{replicated metadata={{op_name="a"}, {}}}',
    "{devices=[2,1]0,1 shard_as 1}", "{mesh['x'=2], [{'x'}]}", "{maximal_mesh[device_id=1]}",
    "{mesh['x'=2,'y'=2], device_ids=([4]), [{'x'},{'y'}]}", "{mesh['x'=4], [{'x':(1)2}]}",
    # refused
    "{replicatedx}", "{foo}", "replicated", "{devices=[2,1]0}", "{maximal}", "{maximal device=}",
    "{replicated metadata={x=1}}", "{devices=[2,1]0,1 shard_like}", "{devices=[2,1]<=[2,1]}",
    "{devices=[2,2]0,1,2,3 last_tile_dims={foo}}", "{devices=[2,1]<=[2,1]T(2,0)}",
    "{devices=[2,1]<=[2,1]T(-1,0)}", "{devices=[2,1]<=[]}", "{replicated device=1}",
    "{devices=[0]}", "{{replicated} {manual}}", "{{replicated},}", "{devices=[2,1]0,1 , }",
    "{mesh['x'=2], [{?,'x'}]}", "{maximal_mesh[device=1]}", "{maximal_mesh[device_id=1], foo={}}",
    "{mesh['x'=2], [{'x'}], foo={}}", "{mesh['x'=2], [{'x'}] replicated={}}",
    "{devices=[2,1]0,1 metadata={op_name=1}}", "{devices=[2,1]<=[2,1]T(1)}",
]


def _read_as_xla_reads(text: str, fast_paths: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """``text`` read where XLA reads it, refused with XLA's message, line and column where
    XLA refuses it, by the fast paths or the general reader alone."""
    expected = _xla_error(text)
    monkeypatch.setenv("MESHTOPO_HLO_FAST_PATHS", "1" if fast_paths else "0")
    if expected is None:
        hlo.parse_module(text)
        return
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    assert (info.value.message, info.value.line, info.value.column) == expected


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "general"])
@pytest.mark.parametrize("sharding", SHARDINGS)
def test_sharding_is_read_as_xla_reads_it(sharding: str, fast_paths: bool,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``sharding`` is read by its one reader, token by token: taken where XLA takes it,
    refused in XLA's words at XLA's line and column where XLA refuses it."""
    text = _module(f", replica_groups={{}}, sharding={sharding}")
    _read_as_xla_reads(text, fast_paths, monkeypatch)


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "general"])
def test_an_error_recorded_in_a_sharding_is_the_one_reported(
        fast_paths: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """XLA's parser records an error in a named mesh written without ``device_ids`` and reads
    on (the sharding is taken); when the text is refused later, that error is reported."""
    taken = _module(", replica_groups={}, sharding={mesh['x'=2], replicated}")
    refused = taken.replace("replicated}", "replicated}, channel_id=x")
    expected = _xla_error(refused)
    assert _xla_error(taken) is None and expected is not None
    assert expected[0] == "expects attribute name"
    monkeypatch.setenv("MESHTOPO_HLO_FAST_PATHS", "1" if fast_paths else "0")
    hlo.parse_module(taken)
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(refused)
    assert (info.value.message, info.value.line, info.value.column) == expected


SLICES = ["{[0:4], [0:4]}", "{[0:4:1], [4:8]}", "{[-1:4], [0:4]}", "{}", "{[0: :2], [0:4]}",
          "{[0:4] [0:4]}", "{[0:4],}", "{[0:4:1:1], [0:4]}", "{[], [0:4]}", "{[0:4], [0,4]}",
          "{(0:4), [0:4]}", "[0:4]", "{[a:4], [0:4]}", "{[0:4]x, [0:4]}", "{[0:4.5], [0:4]}",
          "{[0x4], [0:4]}", "{[1_2:4]}", "{[0:99999999999999999999.5]}"]


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "general"])
@pytest.mark.parametrize("ranges", SLICES)
def test_slice_ranges_are_read_as_xla_reads_them(ranges: str, fast_paths: bool,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A slice's ``slice`` is read token by token as XLA's ``ParseSliceRanges`` reads it
    (integers in a range lexed as XLA lexes them in a list: ``4.5`` and ``0x4`` start with
    an integer and end there)."""
    text = ("HloModule m\nENTRY %main (p: f32[8,8]) -> f32[4,4] {\n  %p = f32[8,8]{1,0} "
            f"parameter(0)\n  ROOT %r = f32[4,4]{{1,0}} slice(%p), slice={ranges}\n}}\n")
    _read_as_xla_reads(text, fast_paths, monkeypatch)


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "general"])
@pytest.mark.parametrize("sizes", ["{1,8}", "{1,,8}", "{1 8}", "{{1,8}}", "{1,8,}", "{}"])
def test_a_gather_s_slice_sizes_are_an_integer_list(sizes: str, fast_paths: bool,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``slice_sizes`` is read by the grammar of its opcode: a gather's integer list (a
    collective-permute's is a list of lists)."""
    text = ("HloModule m\nENTRY %main (p: f32[8,8], i: s32[2,1]) -> f32[2,8] {\n"
            "  %p = f32[8,8]{1,0} parameter(0)\n  %i = s32[2,1]{1,0} parameter(1)\n"
            "  ROOT %g = f32[2,8]{1,0} gather(%p, %i), offset_dims={1}, collapsed_slice_dims={0}, "
            f"start_index_map={{0}}, index_vector_dim=1, slice_sizes={sizes}\n}}\n")
    _read_as_xla_reads(text, fast_paths, monkeypatch)


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "general"])
@pytest.mark.parametrize("attributes", [
    ", channel_id=x", ", channel_id=1.5", ", channel_id=\u0661", ", channel_id=-3",
    ", use_global_device_ids=yes, channel_id=1, replica_groups={}", ", constrain_layout=1",
    ", constrain_layout=false"])
def test_scalar_values_are_read_as_their_type(attributes: str, fast_paths: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An attribute XLA reads as one integer, boolean or string token is refused as XLA
    refuses another token there (``expects integer``, ``expects true or false``)."""
    _read_as_xla_reads(_module(attributes), fast_paths, monkeypatch)


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "general"])
@pytest.mark.parametrize("value", ["exponent_bits=x, mantissa_bits=2", "exponent_bits=5, mantissa_bits=2",
                                   "exponent_bits=5, mantissa_bits=true"])
def test_reduce_precision_bits_are_integers(value: str, fast_paths: bool,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    text = ("HloModule m\nENTRY %main (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
            f"  ROOT %r = f32[8]{{0}} reduce-precision(%p), {value}\n}}\n")
    _read_as_xla_reads(text, fast_paths, monkeypatch)

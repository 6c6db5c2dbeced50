"""Where a value, a group and a statement end is decided by XLA's tokens: a string in either
quote hides the brackets in it, a string or comment the lexer cannot end is an error token
that whatever reads it refuses in its own words. Each text is compared with XLA's parser
(jaxlib's ``hlo_module_from_text``): read where it reads it, else refused at its line and
column, in its words."""

from __future__ import annotations

import pytest

import meshtopo as mt
from meshtopo import hlo

from ._xla_agreement import agrees_in_xla_words, agrees_with_xla, module_text

pytestmark = pytest.mark.jax

_READ = {
    "a single-quoted string in metadata": "metadata={op_name='x'}",
    "a single-quoted '}' in frontend attributes": "frontend_attributes={a='}', b=\"c\"}",
    "a single-quoted '}' in a sharding's metadata":
        "sharding={replicated metadata={op_name='}'}}",
    "a single-quoted '{' in a backend config string": "backend_config='{'",
}

_REFUSED = {
    "an unterminated string in metadata": 'metadata={op_name="x}',
    "a string XLA's lexer cannot unescape": 'metadata={op_name="\\q"}',
    "an unterminated comment for a value": "metadata=/* {}",
    "an unterminated comment after a value": 'frontend_attributes={a="x"} /* c',
    "an unterminated comment in a group": "frontend_attributes={a=/* \"x\"}",
}


@pytest.mark.parametrize("name", sorted(_READ))
def test_read_where_xla_reads(name: str) -> None:
    text = module_text(f"ROOT %r = f32[8]{{0}} copy(%p), {_READ[name]}")
    agrees_with_xla(text)
    assert hlo.parse_module(text).computations["main"].root.name == "r"


@pytest.mark.parametrize("name", sorted(_REFUSED))
def test_refused_where_and_as_xla_refuses(name: str) -> None:
    text = module_text(f"ROOT %r = f32[8]{{0}} copy(%p), {_REFUSED[name]}")
    with pytest.raises(mt.HloParseError):  # XLA refuses every one
        hlo.parse_module(text)
    agrees_in_xla_words(text)


_BODY = "  %p = f32[8]{0} parameter(0)\n  ROOT %r = f32[8]{0} copy(%p)\n}\n"
_PLACES = {
    "before the entry's '{'": "HloModule m\n\nENTRY %main (p: f32[8]) -> f32[8] /* {\n" + _BODY,
    "before an instruction's name": "HloModule m\n\nENTRY %main {\n  /* " + _BODY,
    "before an instruction's '='": "HloModule m\n\nENTRY %main {\n  %p /* " + _BODY[4:],
    "before an instruction's shape": "HloModule m\n\nENTRY %main {\n  %p = /* " + _BODY[7:],
    "before a parameter's number": "HloModule m\n\nENTRY %main {\n  %p = f32[8]{0} "
                                   "parameter(/* " + _BODY[27:],
}


@pytest.mark.parametrize("name", sorted(_PLACES))
def test_an_unterminated_comment_is_refused_by_what_reads_it(name: str) -> None:
    """At each place, XLA's parser refuses the comment's error token as the token it
    expects there (not as a comment)."""
    with pytest.raises(mt.HloParseError):  # XLA refuses every one
        hlo.parse_module(_PLACES[name])
    agrees_in_xla_words(_PLACES[name])

"""A convolution's ``sparsity_config={...}`` checked token by token as XLA's parser reads it,
refused in XLA's words at XLA's token.

Grammar (names and '=' one token, no ',' between entries, an entry written again taking the
place of the first): ``'{' ( ('lhs=' | 'rhs=') TENSOR )* '}'``, where a TENSOR is
``'{' ( 'sparsity=' NxM | 'dimension=' INT | 'stride=' INT )* '}'``. An entry's unknown name
and a sparsity that is an integer or ``NxMx...`` rather than ``NxM`` are refused at the
token after them, as XLA reads on before it judges them.

>>> check_sparsity_config("{lhs={sparsity=1x4 dimension=1 stride=1} rhs={sparsity=3x4}}", 1, 1)
>>> check_sparsity_config("{rhs={sparsity=3 dimension=0}}", 1, 1)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 1:18: expects 'num_non_zero:block_size'
"""

from __future__ import annotations

from ._token_cursor import TokenCursor, value_check
from ._tokens import TokKind

K = TokKind


def _sparsity_config(c: TokenCursor) -> None:
    """XLA's ``ParseSparsityConfig`` at the cursor."""
    c.expect(K.kLbrace, "expected '{' to start SparsityConfig")
    while c.kind != K.kRbrace:
        if c.attribute_name() not in ("lhs", "rhs"):
            raise c.error("unknown attribute")
        _tensor(c)
    c.lex()


def _tensor(c: TokenCursor) -> None:
    """One operand's ``{sparsity=NxM dimension=D stride=S}``."""
    c.expect(K.kLbrace, "expected '{' to start TensorSparsityConfig")
    while c.kind != K.kRbrace:
        name = c.attribute_name()
        if name == "sparsity":
            if c.kind not in (K.kInt, K.kDxD):
                raise c.error("expects token type kInt or kDxD")
            pair = c.kind == K.kDxD and c.word.count("x") == 1
            c.lex()
            if not pair:
                raise c.error("expects 'num_non_zero:block_size'")
        elif name in ("dimension", "stride"):
            c.integer()
        else:
            raise c.error("unknown attribute")
    c.lex()


check_sparsity_config = value_check(_sparsity_config, "a convolution's sparsity config")

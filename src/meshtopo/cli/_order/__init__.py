"""``meshtopo order``: every device's collective schedule and the hang or garbage its order
would cause.

``_command`` is the click command and its text; ``_evidence`` is what ``--traces`` and hang
logs add to the answer (straggler skew, the predictions the logs confirm).
"""

from ._command import order as order

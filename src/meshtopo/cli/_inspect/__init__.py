"""``meshtopo inspect``: every collective of an HLO dump, its mode, its groups and the devices
they name.

``_command`` is the click command and its terminal table and JSON; ``_rows`` reads a file into
one row per collective (device groups shared per pattern); ``_cells`` holds the cells the
terminal table and the HTML page share; ``_html`` writes ``inspect --html``'s page.
"""

from ._command import inspect_command as inspect_command

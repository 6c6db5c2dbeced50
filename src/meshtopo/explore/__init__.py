"""The local web explorer: dial a mesh and watch the library's group arithmetic and checks.

``make_server`` binds an ``ExplorerServer`` (loopback by default) serving one JSON API over the
library (see ``meshtopo.explore._api`` and docs/explorer-api.md) plus the page in ``static/``.
Layering: this package imports ``meshtopo``, ``meshtopo.hlo``, ``meshtopo.order`` (with
``issue_order``) and ``meshtopo.topology`` (presets and ``group_tiers``
for the ``cluster`` field); nothing imports it but the CLI.
"""

from __future__ import annotations

from ._api import API_VERSION as API_VERSION
from ._server import DEFAULT_DEVICE_LIMIT as DEFAULT_DEVICE_LIMIT
from ._server import DEFAULT_MAX_BODY as DEFAULT_MAX_BODY
from ._server import DEFAULT_PORT as DEFAULT_PORT
from ._server import ExplorerServer as ExplorerServer
from ._server import InitialDump as InitialDump
from ._server import make_server as make_server
from ._server import serve_in_thread as serve_in_thread

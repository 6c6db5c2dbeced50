"""``meshtopo run`` and ``meshtopo replay``: an HLO module's entry computation executed on every
device, or its communication replayed.

``_command`` holds both commands; ``_launcher`` reads the place torchrun, srun or mpirun give
this process.
"""

from ._command import replay as replay
from ._command import run as run

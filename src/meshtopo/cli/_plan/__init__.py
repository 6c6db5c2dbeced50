"""``meshtopo plan`` and ``meshtopo calibrate``: a mesh's collectives on a physical cluster, and
a cluster's cost model fitted to nccl-tests logs.

``_command`` holds both commands; ``_program`` prices a program's collectives
(``plan --program FILE``).
"""

from ._command import calibrate_command as calibrate_command
from ._command import plan_command as plan_command

"""``Mesh``: a named device mesh with its collectives' device lists (``_mesh_grid``).

>>> mesh = Mesh({"data": 2, "model": 4})
>>> mesh.replica_groups(over="model").replica_groups
[[0, 1, 2, 3], [4, 5, 6, 7]]
"""

from ._mesh_grid import Mesh as Mesh

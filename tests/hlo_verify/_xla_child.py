"""Child process: compile StableHLO programs with XLA's client and report each one's error.

Reads ``[{"text", "replicas", "partitions"}]`` as JSON on stdin and prints
``[error text or null]``. Run in its own interpreter (XLA may abort the process on bad input).
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    import jax
    import numpy as np
    from jax._src.lib import xla_client as xc

    results: list[str | None] = []
    for case in json.loads(sys.stdin.read()):
        replicas, partitions = case["replicas"], case["partitions"]
        options = xc.CompileOptions()
        options.num_replicas = replicas
        options.num_partitions = partitions
        options.device_assignment = xc.DeviceAssignment.create(
            np.arange(replicas * partitions).reshape(replicas, partitions))
        options.executable_build_options.use_spmd_partitioning = partitions > 1
        devices = jax.devices()[: replicas * partitions]
        try:
            devices[0].client.compile_and_load(
                case["text"], executable_devices=xc.DeviceList(tuple(devices)),
                compile_options=options)
            results.append(None)
        except Exception as error:  # any compile error is the measurement
            results.append(str(error))
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()

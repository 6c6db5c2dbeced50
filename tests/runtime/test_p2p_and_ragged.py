"""send/recv and ragged-all-to-all, which XLA's CPU client does not run ("HLO opcode ... is not
supported by XLA:CPU ThunkEmitter"), against their definitions, on both backends.

send/recv (XLA's send/recv thunks): the pairs of ``_xla_send_recv_source_target_pairs`` are
partition ids with a channel (replica ids without), in every replica (partition); a device
that is a target receives its source's buffer, a recv without a source gives zeros; send and
recv launch, their -done forms wait, so a ring of sends posted before any done completes.
ragged-all-to-all (XLA's RaggedAllToAll): update i of sender s to peer j copies rows
``input_offsets[j*U+i] ...`` (``send_sizes``) of s's input into j's output at
``output_offsets[j*U+i]``; rows nobody writes keep the output operand's values. The
expected values here are computed from those sentences, element by element. torch runs fork
their processes from one torch server (``torch_server``)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.hlo import element_dtype
from meshtopo.runtime import RendezvousError


def _send_recv(replicas: int, partitions: int, channel: bool) -> str:
    """A ring of send/recv over partitions (channel) or replicas (none), then a second pair
    from 0 to the last id, waited in the other order (recv-done first)."""
    n = partitions if channel else replicas
    ring = ",".join(f"{{{i},{(i + 1) % n}}}" for i in range(n))
    last = f"{{{{0,{n - 1}}}}}"
    c = "channel_id={}, " if channel else ""
    send = "(f32[3], u32[], token[])"
    return f"""HloModule p2p, replica_count={replicas}, num_partitions={partitions}

ENTRY %main (p: f32[3]) -> (f32[3], f32[3]) {{
  %p = f32[3] parameter(0)
  %tok = token[] after-all()
  %snd1 = {send} send(%p, %tok), {c.format(1)}frontend_attributes={{_xla_send_recv_source_target_pairs="{{{ring}}}"}}
  %r1 = {send} recv(%tok), {c.format(1)}frontend_attributes={{_xla_send_recv_source_target_pairs="{{{ring}}}"}}
  %sd1 = token[] send-done(%snd1), {c.format(1)}
  %rd1 = (f32[3], token[]) recv-done(%r1), {c.format(1)}
  %v = f32[3] get-tuple-element(%rd1), index=0
  %two = f32[3] add(%v, %v)
  %snd2 = {send} send(%two, %tok), {c.format(2)}frontend_attributes={{_xla_send_recv_source_target_pairs="{last}"}}
  %r2 = {send} recv(%tok), {c.format(2)}frontend_attributes={{_xla_send_recv_source_target_pairs="{last}"}}
  %rd2 = (f32[3], token[]) recv-done(%r2), {c.format(2)}
  %sd2 = token[] send-done(%snd2), {c.format(2)}
  %w = f32[3] get-tuple-element(%rd2), index=0
  ROOT %t = (f32[3], f32[3]) tuple(%v, %w)
}}
""".replace(", \n", "\n").replace("), \n", ")\n")


def _expected_send_recv(table: np.ndarray, channel: bool, inputs: dict) -> dict:
    """Each device's (v, w) from the definition in the module docstring."""
    replicas, partitions = table.shape
    n = partitions if channel else replicas
    out = {}
    for r in range(replicas):
        for p in range(partitions):
            me = p if channel else r

            def device(i: int, r: int = r, p: int = p) -> int:
                return int(table[r, i] if channel else table[i, p])

            v = inputs[device((me - 1) % n)][0]
            sender_v = inputs[device((0 - 1) % n)][0]
            w = 2 * sender_v if me == n - 1 else np.zeros(3, np.float32)
            out[int(table[r, p])] = (v, w)
    return out


P2P_CASES = [(1, 2, True, [[0, 1]]), (2, 2, False, [[2, 0], [3, 1]]),
             (2, 4, True, [[3, 1, 0, 2], [6, 4, 7, 5]]),
             (4, 2, False, [[0, 4], [1, 5], [2, 6], [3, 7]]), (1, 8, True, [list(range(8))])]


def _inputs(table: np.ndarray) -> dict[int, list[np.ndarray]]:
    return {int(d): [np.arange(3, dtype=np.float32) + 10 * int(d)] for d in table.flat}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("replicas", "partitions", "channel", "table"), P2P_CASES,
                         ids=["1x2", "2x2-cross-replica", "2x4-permuted", "4x2-cross-replica",
                              "1x8"])
def test_send_recv_on_local_follows_the_definition(replicas: int, partitions: int,
                                                    channel: bool, table: list) -> None:
    array = np.array(table)
    module = mt.hlo.parse_module(_send_recv(replicas, partitions, channel),
                                 device_assignment=array)
    outputs = mt.runtime.execute(module, _inputs(array), timeout=10)
    expected = _expected_send_recv(array, channel, _inputs(array))
    assert sorted(outputs) == sorted(expected)
    for device, (v, w) in expected.items():
        np.testing.assert_array_equal(outputs[device][0], v, err_msg=f"device {device}")
        np.testing.assert_array_equal(outputs[device][1], w, err_msg=f"device {device}")


RAGGED = """HloModule ragged, replica_count={r}, num_partitions={p}

ENTRY %main (x: {t}[{n},2], o: {t}[{n},2], io: s64[{shape}], ss: s64[{shape}], oo: s64[{shape}], rs: s64[{shape}]) -> {t}[{n},2] {{
  %x = {t}[{n},2] parameter(0)
  %o = {t}[{n},2] parameter(1)
  %io = s64[{shape}] parameter(2)
  %ss = s64[{shape}] parameter(3)
  %oo = s64[{shape}] parameter(4)
  %rs = s64[{shape}] parameter(5)
  ROOT %ra = {t}[{n},2] ragged-all-to-all(%x, %o, %io, %ss, %oo, %rs), {attributes}
}}
"""


def _ragged_case(groups: list[list[int]], updates: int, rank2: bool, t: str = "s32"
                 ) -> tuple[int, dict[int, list[np.ndarray]]]:
    """Rows and inputs for groups of device ids (in rank order): update i of rank s to rank
    j has (s + 2j + i) % 3 rows; a sender packs its updates after a gap row each; a receiver
    lays senders' updates out in rank order after one untouched row."""
    size = len(groups[0])
    sizes = {(s, j, i): (s + 2 * j + i) % 3 for s in range(size) for j in range(size)
             for i in range(updates)}
    rows = 2 + 3 * size * updates
    inputs: dict[int, list[np.ndarray]] = {}
    for group in groups:
        for s, device in enumerate(group):
            io, ss, oo, rs = [], [], [], []
            cursor = 1
            for j in range(size):
                for i in range(updates):
                    io.append(cursor)
                    ss.append(sizes[s, j, i])
                    cursor += sizes[s, j, i] + 1
                    # Where j puts (s, i): after everything j receives from lower ranks.
                    before = sum(sizes[q, j, u] for q in range(s) for u in range(updates))
                    oo.append(1 + before + sum(sizes[s, j, u] for u in range(i)))
                    rs.append(sizes[j, s, i])
            shape = (size, updates) if rank2 else (size * updates,)
            dtype = element_dtype(t, "the test")
            data = (np.arange(rows * 2).reshape(rows, 2) + 1000 * device).astype(dtype)
            inputs[device] = [data, np.full((rows, 2), -1 - device).astype(dtype)] + [
                np.array(v, np.int64).reshape(shape) for v in (io, ss, oo, rs)]
    return rows, inputs


def _expected_ragged(groups: list[list[int]], updates: int, inputs: dict) -> dict:
    """Each receiver's output from the definition in the module docstring."""
    out = {}
    for group in groups:
        for j, receiver in enumerate(group):
            result = inputs[receiver][1].copy()
            for sender in group:
                x, _, io, ss, oo, _ = inputs[sender]
                io, ss, oo = io.reshape(-1), ss.reshape(-1), oo.reshape(-1)
                for i in range(updates):
                    k = j * updates + i
                    for row in range(int(ss[k])):
                        result[oo[k] + row] = x[io[k] + row]
            out[receiver] = result
    return out


RAGGED_CASES = [
    # (replicas, partitions, attributes, groups as device ids under the default table, U, rank 2)
    (1, 2, "channel_id=1, replica_groups={{0,1}}", [[0, 1]], 1, False),
    (2, 2, "replica_groups={{1,0}}", [[1, 0], [3, 2]], 3, True),
    (2, 4, "channel_id=1, replica_groups={{3,0,2,1}}", [[6, 0, 4, 2], [7, 1, 5, 3]], 2, True),
    (4, 2, "replica_groups={{1,0},{3,2}}", [[1, 0], [3, 2], [5, 4], [7, 6]], 2, False),
    (1, 8, "channel_id=1, replica_groups=[1,8]<=[8]", [list(range(8))], 1, False),
]


def _ragged_module(case: tuple, t: str = "s32") -> tuple[mt.hlo.Module, dict, dict]:
    replicas, partitions, attributes, groups, updates, rank2 = case
    rows, inputs = _ragged_case(groups, updates, rank2, t)
    size = len(groups[0])
    shape = f"{size},{updates}" if rank2 else f"{size * updates}"
    module = mt.hlo.parse_module(RAGGED.format(r=replicas, p=partitions, n=rows, t=t,
                                               shape=shape, attributes=attributes))
    return module, inputs, _expected_ragged(groups, updates, inputs)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", RAGGED_CASES, ids=["1x2", "2x2-cross-replica-rank2",
                                                    "2x4-rank2", "4x2-cross-replica",
                                                    "1x8-iota"])
def test_ragged_all_to_all_on_local_follows_the_definition(case: tuple) -> None:
    module, inputs, expected = _ragged_module(case)
    outputs = mt.runtime.execute(module, inputs, timeout=10)
    assert sorted(outputs) == sorted(expected)
    for device, value in expected.items():
        np.testing.assert_array_equal(outputs[device], value, err_msg=f"device {device}")


@pytest.mark.usefixtures("torch_server")
@pytest.mark.timeout(180)
@pytest.mark.parametrize("size", [2, 4, 8], ids=["2-processes", "4-processes", "8-processes"])
def test_send_recv_and_ragged_on_torch_equal_the_definition(size: int) -> None:
    replicas, partitions, channel, table = next(c for c in P2P_CASES
                                                if c[0] * c[1] == size)
    array = np.array(table)
    module = mt.hlo.parse_module(_send_recv(replicas, partitions, channel),
                                 device_assignment=array)
    outputs = mt.runtime.execute(module, _inputs(array), backend="torch", timeout=30)
    for device, (v, w) in _expected_send_recv(array, channel, _inputs(array)).items():
        np.testing.assert_array_equal(outputs[device][0], v, err_msg=f"device {device}")
        np.testing.assert_array_equal(outputs[device][1], w, err_msg=f"device {device}")
    ragged = next(c for c in RAGGED_CASES if c[0] * c[1] == size)
    module, inputs, expected = _ragged_module(ragged, "bf16" if size == 4 else "s32")
    outputs = mt.runtime.execute(module, inputs, backend="torch", timeout=30)
    for device, value in expected.items():
        np.testing.assert_array_equal(outputs[device], value, err_msg=f"device {device}")


def test_ragged_sizes_that_do_not_match_are_refused() -> None:
    module, inputs, _ = _ragged_module(RAGGED_CASES[0])
    inputs[1][5] = inputs[1][5] + 1  # device 1 expects one row more than device 0 sends
    with pytest.raises(mt.MeshtopoError, match=r"rank 0 sends updates of \[\d\] rows where "
                                               r"recv_sizes expects \[\d\]"):
        mt.runtime.execute(module, inputs, timeout=10)


# Device 1 waits for a recv whose send sits in a branch device 0 does not take.
MISSING_SEND = """HloModule missing, num_partitions=2

%sends (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  %tok = token[] after-all()
  %s = (f32[2], u32[], token[]) send(%a, %tok), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  %sd = token[] send-done(%s), channel_id=1
  ROOT %c = f32[2] copy(%a)
}

%skips (b: f32[2]) -> f32[2] {
  ROOT %b = f32[2] parameter(0)
}

ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2] parameter(0)
  %one = u32[] constant(1)
  %branch = s32[] convert(%one)
  %c = f32[2] conditional(%branch, %p, %p), branch_computations={%sends, %skips}
  %tok = token[] after-all()
  %r = (f32[2], u32[], token[]) recv(%tok), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  %rd = (f32[2], token[]) recv-done(%r), channel_id=1
  ROOT %v = f32[2] get-tuple-element(%rd), index=0
}
"""


@pytest.mark.usefixtures("torch_server")
@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["local", "torch"])
def test_a_recv_whose_send_never_comes_is_the_rendezvous_error(
        backend: str, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    module = mt.hlo.parse_module(MISSING_SEND)
    with pytest.raises(RendezvousError) as caught:
        mt.runtime.execute(module, backend=backend, timeout=2)
    message = str(caught.value)
    assert "instruction %r (recv) on device 1" in message
    assert "device(s) [0] never arrived" in message
    assert caught.value.missing == [0]
    assert caught.value.waited >= 2.0  # never gives up before the timeout
    # XLA's stuck warning at half the timeout: from the worker's stderr, or the log here.
    stuck = capfd.readouterr().err if backend == "torch" else caplog.text
    assert "[id=1] This thread has been waiting for `channel_id=1 0->1` for " in stuck
    assert "Arrived: devices [1]; not arrived: devices [0]." in stuck


def test_host_transfers_and_self_pairs_are_refused() -> None:
    text = _send_recv(1, 2, True)
    host = text.replace("%snd1 = (f32[3], u32[], token[]) send(%p, %tok), channel_id=1, ",
                        "%snd1 = (f32[3], u32[], token[]) send(%p, %tok), channel_id=1, "
                        "is_host_transfer=true, ")
    with pytest.raises(mt.MeshtopoError, match=r"instruction %snd1 \(send\): host transfers are "
                                               r"not executed"):
        mt.runtime.Plan(mt.hlo.parse_module(host))
    self_pair = text.replace('"{{0,1},{1,0}}"', '"{{0,0}}"')
    with pytest.raises(mt.MeshtopoError, match=r"a pair \{i,i\}\) is not executed"):
        mt.runtime.Plan(mt.hlo.parse_module(self_pair))


def test_without_ml_dtypes_bf16_is_refused_and_numpy_types_still_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now fails
    bf16 = mt.hlo.parse_module(_send_recv(1, 2, True).replace("f32", "bf16"))
    with pytest.raises(mt.MeshtopoError, match="element type bf16 needs the ml_dtypes package "
                                               r"\(installed with jax; pip install ml_dtypes\)"):
        mt.runtime.execute(bf16, timeout=10)
    outputs = mt.runtime.execute(mt.hlo.parse_module(_send_recv(1, 2, True)), timeout=10)
    assert outputs[1][0].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.usefixtures("torch_server")
@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["local", "torch"])
def test_replay_launches_send_recv_in_order_and_waits_for_them(backend: str) -> None:
    """A replay launches the ring and the second pair as the order has them, waits for each
    transfer after the last collective and times every one; none is skipped."""
    table = np.array([[3, 1, 0, 2]])
    module = mt.hlo.parse_module(_send_recv(1, 4, True), device_assignment=table)
    result = mt.runtime.replay(module, backend=backend, timeout=20)
    replay = result.replay
    assert replay.skipped == []
    assert {d: replay.orders[d] for d in (3, 2)} == {
        3: ["snd1", "r1", "snd2", "r2"], 2: ["snd1", "r1", "snd2", "r2"]}
    assert sorted(result.seconds) == [0, 1, 2, 3]
    for device, seconds in result.seconds.items():
        assert sorted(seconds) == sorted(replay.orders[device]), device
        assert all(s >= 0 for s in seconds.values())
    assert replay.steps["snd1"].bytes == 12


def test_pairs_xla_cannot_read_are_refused_in_its_words() -> None:
    text = _send_recv(1, 2, True).replace('"{{0,1},{1,0}}"', '"{{0,1,2}}"', 1)
    with pytest.raises(mt.MeshtopoError, match=r"instruction %snd1 \(send\): send is not "
                                               r"executed: XLA cannot read its "
                                               r"_xla_send_recv_source_target_pairs: Incorrect "
                                               r"element size : "
                                               r"\{\{0,1,2\}\}$"):
        mt.runtime.Plan(mt.hlo.parse_module(text))

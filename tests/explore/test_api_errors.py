"""Bad input: every refusal is a 4xx JSON error with a clear message, never a 500."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshtopo.explore import make_server, serve_in_thread
from meshtopo.explore._groups import GROUP_FIELDS

from .conftest import Client


def error_of(reply: Any, status: int) -> dict[str, Any]:
    assert reply.status == status, reply.body
    assert set(reply.body) == {"error"}
    return reply.body["error"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b"{not json",
            "request body is not JSON: Expecting property name enclosed in double quotes at line 1 column 2",
        ),
        (b"[1, 2]", "request body must be a JSON object, got an array"),
        (b"\xff\xfe", "request body is not UTF-8: invalid start byte"),
        (b"[" * 100_000, "request body is nested too deeply"),
    ],
    ids=["not-json", "array", "not-utf8", "deep"],
)
def test_bodies_that_are_not_json_objects(client: Client, body: bytes, message: str) -> None:
    assert error_of(client.post("/api/groups", body), 400) == {
        "kind": "BadRequest",
        "message": message,
    }


@pytest.mark.parametrize(
    ("path", "body", "status", "kind"),
    [
        ("/api/groups", b"{not json", 400, "BadRequest"),
        ("/api/groups", b'{"groups": "{{0,1}"}', 400, "HloParseError"),
        ("/api/groups", b'{"replicas": 100000, "partitions": 100000}', 413, "LimitError"),
        ("/api/hlo", b'{"text": "HloModule m\\nENTRY e {"}', 400, "HloParseError"),
        ("/api/order", b'{"text": "x", "programs": []}', 400, "BadRequest"),
        ("/api/nowhere", b"{}", 404, "NotFound"),
    ],
    ids=["not-json", "groups-text", "limit", "hlo-text", "order-fields", "no-endpoint"],
)
def test_a_refusal_asked_for_in_the_body_is_a_200_naming_its_status(
    client: Client, path: str, body: bytes, status: int, kind: str
) -> None:
    headers = {"Content-Type": "application/json"}
    plain = client.request("POST", path, body, headers)
    in_body = client.request("POST", path, body, {**headers, "X-Meshtopo-Refusal": "body"})
    assert plain.status == status and plain.body["error"]["kind"] == kind
    # The same refusal, with the status it stands for, in a 200 a browser does not log.
    assert in_body.status == 200
    assert in_body.body == {"error": {**plain.body["error"], "status": status}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"replicas": "2"}, "field 'replicas' must be an integer, got the string \"2\""),
        ({"replicas": True}, "field 'replicas' must be an integer, got a boolean (true)"),
        ({"replicas": 2.5}, "field 'replicas' must be an integer, got the number 2.5"),
        ({"replicas": 2.0}, "field 'replicas' must be an integer, got the number 2.0"),
        ({"replicas": ""}, "field 'replicas' is empty; give an integer of at least 1"),
        ({"partitions": " "}, "field 'partitions' is empty; give an integer of at least 1"),
        ({"partitions": 0}, "field 'partitions' must be at least 1, got 0"),
        ({"channel_id": "yes"}, "field 'channel_id' must be a boolean, got a string"),
        (
            {"use_global_device_ids": "true"},
            "field 'use_global_device_ids' must be true, false or null, got a string",
        ),
        ({"groups": 5}, "field 'groups' must be a string, got an integer"),
        (
            {"include": ["nope"]},
            "field 'include' must be an array drawn from 'cells', 'steps', 'modes', 'findings'",
        ),
        ({"mesh": []}, "field 'mesh' must be an object, got an array"),
        ({"mesh": {"axes": []}}, "field 'mesh.axes' must be a non-empty array of {name, size}"),
        (
            {"mesh": {"axes": [{"name": "x", "size": 2}, {"name": "x", "size": 2}]}},
            "mesh axis name 'x' appears twice; names must differ",
        ),
        (
            {"mesh": {"axes": [{"name": "x", "size": 4}]}, "replicas": 3},
            "the mesh mesh['x'=4] has 4 devices, which 3 replicas do not divide; pick a replica "
            "count that divides the mesh size",
        ),
        (
            {"mesh": {"axes": [{"name": "x", "size": 4}], "device_order": [0, 1, 1, 3]}},
            "field 'mesh.device_order' lists id 1 twice (entries 1 and 2); it must be a "
            "permutation of 0..3 (4 distinct ids, one per mesh position)",
        ),
        (
            {"mesh": {"axes": [{"name": "x", "size": 4}], "device_order": [0, 1, 2]}},
            "field 'mesh.device_order' has 3 ids for 4 mesh positions; it must be a "
            "permutation of 0..3 (4 distinct ids, one per mesh position)",
        ),
        (
            {"mesh": {"axes": [{"name": "x", "size": 4}], "device_order": [0, 1, 2, 4]}},
            "field 'mesh.device_order' entry 3 is 4, outside 0..3; it must be a "
            "permutation of 0..3 (4 distinct ids, one per mesh position)",
        ),
        (
            {"device_assignment": "mesh"},
            "field 'device_assignment' is 'mesh' but no 'mesh' is given",
        ),
        (
            {"mesh": {"axes": [{"name": "x", "size": 4}], "device_order": "sideways"}},
            "field 'mesh.device_order' must be 'default', 'reversed' or an array, got 'sideways'",
        ),
        ({"over": ["x"]}, "field 'over' needs a 'mesh' to pick axes from"),
        (
            {"mesh": {"axes": [{"name": "x", "size": 4}]}, "over": ["z"]},
            "field 'over' names axis 'z', which the mesh does not have; its axes are 'x'",
        ),
        (
            {"mesh": {"axes": [{"name": "x", "size": 4}]}, "over": ["x"], "groups": "{}"},
            "give either 'groups' (text) or 'over' (mesh axes), not both",
        ),
        (
            {"replicas": 2, "partitions": 2, "device_assignment": [[0, 1]]},
            "field 'device_assignment' must be a 2 x 2 table (one row per replica, one device "
            "id per partition), got 1 rows",
        ),
        (
            {"device_assignment": "column_major"},
            "field 'device_assignment' must be 'default', 'row_major', 'mesh' or a table "
            "[replica][partition] of device ids, got 'column_major'",
        ),
        (
            {"mesh": {"axes": [{"name": "x", "size": 2}], "device_order": [2**70, 0]}},
            "field 'mesh.device_order' entry 0 is 1180591620717411303424, which does not fit in "
            "int64",
        ),
        (
            {"device_assignment": [["0"]]},
            "field 'device_assignment[0]' must hold integers only; entry 0 is a string",
        ),
    ],
)
def test_wrong_field_types_and_values(client: Client, body: dict[str, Any], message: str) -> None:
    assert error_of(client.post("/api/groups", body), 400)["message"] == message


def test_unknown_fields_are_named(client: Client) -> None:
    error = error_of(client.post("/api/groups", {"replica": 2}), 400)
    assert error["message"].startswith("unknown field 'replica'; known fields are 'replicas'")


def test_unknown_opcode(client: Client) -> None:
    error = error_of(client.post("/api/groups", {"opcode": "add"}), 400)
    assert error["message"].startswith("field 'opcode' must be null or one of all-reduce,")


def test_malformed_groups_point_at_line_and_column(client: Client) -> None:
    error = error_of(client.post("/api/groups", {"groups": "{{0,1},\n {2,x}}"}), 400)
    assert error["kind"] == "HloParseError"
    assert (error["line"], error["column"]) == (2, 5)


def test_duplicate_devices_in_a_custom_assignment_are_refused(client: Client) -> None:
    body = {"replicas": 1, "partitions": 2, "device_assignment": [[0, 0]]}
    error = error_of(client.post("/api/groups", body), 400)
    assert error["kind"] == "InvalidArgumentError"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"replicas": 300, "partitions": 300},
            "the grid 300 x 300 has 90000 devices, more than the explorer's device limit of "
            "65536; dial a smaller grid or restart the explorer with --device-limit N",
        ),
        (
            {"mesh": {"axes": [{"name": "x", "size": 1 << 40}]}},
            "mesh axis 'x' has 1099511627776 devices, more than the explorer's device limit of "
            "65536; dial a smaller grid or restart the explorer with --device-limit N",
        ),
        (
            {"groups": "[65536,1024]<=[67108864]"},
            "the replica groups [65536,1024]<=[67108864] hold 67108864 ids, more than the "
            "explorer's device limit of 65536",
        ),
    ],
    ids=["grid", "mesh-axis", "iota"],
)
def test_sizes_above_the_device_limit(client: Client, body: dict[str, Any], message: str) -> None:
    error = error_of(client.post("/api/groups", body), 413)
    assert error == {"kind": "LimitError", "message": message}


def test_sizes_above_the_library_limit(client: Client) -> None:
    body = {"groups": "[1000000000,1000000000]<=[1000000000000000000]"}
    error = error_of(client.post("/api/groups", body), 413)
    assert error["kind"] == "LimitError"
    assert "more than the device limit" in error["message"]


def test_body_above_the_cap_is_refused_with_the_limit() -> None:
    server = make_server(port=0, max_body=1 << 20)
    serve_in_thread(server)
    try:
        body = json.dumps({"groups": "{" + "{0}," * 300_000 + "{0}}"}).encode()
        assert len(body) > 1 << 20
        error = error_of(Client(server).post("/api/groups", body), 413)
    finally:
        server.shutdown()
        server.server_close()
    assert error == {
        "kind": "BodyTooLarge",
        "message": f"request body is {len(body)} bytes, more than the limit of 1048576 bytes; "
                   "start the explorer with --max-body BYTES to take larger dumps",
    }


def test_a_64_mb_dump_is_taken_by_default(client: Client) -> None:
    # Read in full and answered: a text that is not HLO is a parse error, not a 413.
    body = json.dumps({"text": "x" * 64_000_000}).encode()
    error = error_of(client.post("/api/hlo", body), 400)
    assert error["kind"] == "HloParseError"


def test_a_huge_declared_length_is_refused_without_reading(client: Client) -> None:
    with socket.create_connection((client.host, client.port), timeout=10) as raw:
        raw.sendall(
            b"POST /api/groups HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n{"
        )
        chunks = []
        while chunk := raw.recv(65536):
            chunks.append(chunk)
        answer = b"".join(chunks).decode()
    assert answer.startswith("HTTP/1.1 413 ")
    assert '"kind":"BodyTooLarge"' in answer


@pytest.mark.parametrize(
    "length", [b"+2", b"1_0", b"\xb2", b"-1", b"0x2", b"9" * 19, b"2 2"]
)
def test_content_length_is_ascii_digits(client: Client, length: bytes) -> None:
    with socket.create_connection((client.host, client.port), timeout=10) as raw:
        raw.sendall(b"POST /api/groups HTTP/1.1\r\nHost: x\r\nContent-Length: " + length
                    + b"\r\n\r\n{}")
        chunks = []
        while chunk := raw.recv(65536):
            chunks.append(chunk)
        answer = b"".join(chunks).decode()
    assert answer.startswith("HTTP/1.1 400 ")
    assert json.loads(answer.split("\r\n\r\n", 1)[1])["error"]["message"] == (
        f"bad Content-Length {length.decode('latin-1')!r}")


def test_content_length_may_carry_white_space(client: Client) -> None:
    with socket.create_connection((client.host, client.port), timeout=10) as raw:
        raw.sendall(b"POST /api/groups HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length:   2 \t\r\n"
                    b"Connection: close\r\n\r\n{}")
        chunks = []
        while chunk := raw.recv(65536):
            chunks.append(chunk)
        answer = b"".join(chunks).decode()
    assert answer.startswith("HTTP/1.1 200 ")


def test_chunked_bodies_are_refused(client: Client) -> None:
    reply = client.request(
        "POST", "/api/groups", b"2\r\n{}\r\n0\r\n\r\n", {"Transfer-Encoding": "chunked"}
    )
    assert error_of(reply, 411)["kind"] == "LengthRequired"


def test_wrong_paths_and_methods(client: Client) -> None:
    assert error_of(client.get("/api/groups"), 405)["message"] == "/api/groups takes POST"
    assert error_of(client.post("/api/info", {}), 405)["kind"] == "MethodNotAllowed"
    assert error_of(client.post("/api/nothing", {}), 404)["kind"] == "NotFound"
    assert error_of(client.get("/nothing.html"), 404)["kind"] == "NotFound"


@pytest.mark.parametrize(
    "path",
    [
        "/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/static/../_server.py",
        "/_server.py",
        "//etc/passwd",
        "/..%2f_api.py",
    ],
)
def test_no_path_reaches_the_file_system(client: Client, path: str) -> None:
    assert client.get(path).status == 404


def test_static_files_come_from_the_package_and_name_no_network(client: Client) -> None:
    for path, kind in [
        ("/", "text/html"),
        ("/app.js", "text/javascript"),
        *((f"/{name}.js", "text/javascript")
          for name in ("url", "api", "dial", "layout", "grid", "canvas", "links", "steps",
                       "dump", "order", "programs", "fielderror")),
        ("/style.css", "text/css"),
        ("/favicon.svg", "image/svg+xml"),
    ]:
        reply = client.get(path)
        assert reply.status == 200
        assert reply.headers["Content-Type"].startswith(kind)
        # The SVG namespace URI is a name, not a fetch.
        text = reply.body.decode().replace("http://www.w3.org/2000/svg", "")
        for needle in ("http://", "https://", "//fonts.", "@import", "cdn"):
            assert needle not in text, (path, needle)


def test_requests_naming_another_host_are_refused(client: Client) -> None:
    reply = client.request("GET", "/api/info", headers={"Host": "attacker.example:8737"})
    assert error_of(reply, 403) == {
        "kind": "Forbidden",
        "message": "this server answers only to 127.0.0.1 or localhost",
    }
    reply = client.request("POST", "/api/groups", b"{}", {"Host": "attacker.example"})
    assert reply.status == 403
    assert client.request("GET", "/", headers={"Host": "localhost:8737"}).status == 200


def test_server_binds_loopback_by_default() -> None:
    server = make_server(port=0)
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert server.url.startswith("http://127.0.0.1:")
    finally:
        server.server_close()


def test_limits_are_configurable() -> None:
    server = make_server(port=0, device_limit=16, max_body=64)
    serve_in_thread(server)
    try:
        client = Client(server)
        error = error_of(client.post("/api/groups", {"replicas": 4, "partitions": 8}), 413)
        assert "device limit of 16" in error["message"]
        error = error_of(client.post("/api/groups", {"groups": "{" * 80}), 413)
        assert error["kind"] == "BodyTooLarge"
    finally:
        server.shutdown()
        server.server_close()


def test_a_half_sent_request_does_not_stop_the_server(client: Client) -> None:
    with socket.create_connection((client.host, client.port), timeout=5) as raw:
        raw.sendall(b"POST /api/groups HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
    assert client.get("/api/info").status == 200


def _handlers_running() -> bool:
    return any("process_request" in thread.name for thread in threading.enumerate())


def test_a_client_resetting_its_connection_is_no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    server = make_server(port=0)
    serve_in_thread(server)
    try:
        client = Client(server)
        with socket.create_connection((client.host, client.port), timeout=5) as raw:
            raw.sendall(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert raw.recv(65536).startswith(b"HTTP/1.1 200")
            # Close with a reset, as a browser drops a kept-alive connection.
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        deadline = time.monotonic() + 30
        while _handlers_running() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _handlers_running()
        assert client.get("/api/info").status == 200
    finally:
        server.shutdown()
        server.server_close()
    assert capfd.readouterr().err == ""


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_fields = st.sampled_from(GROUP_FIELDS)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.dictionaries(_fields, _json, max_size=5))
def test_arbitrary_json_never_fails_with_500(client: Client, body: dict[str, Any]) -> None:
    reply = client.post("/api/groups", body)
    assert reply.status in (200, 400, 413), reply.body
    if reply.status != 200:
        assert reply.body["error"]["message"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(alphabet="{}[]<=T(),0123456789 'mesh=xy:", max_size=30))
def test_arbitrary_group_text_never_fails_with_500(client: Client, text: str) -> None:
    reply = client.post("/api/groups", {"replicas": 2, "partitions": 4, "groups": text})
    assert reply.status in (200, 400, 413), reply.body


_hlo_text = st.lists(
    st.sampled_from(
        [
            "HloModule m, replica_count=2, num_partitions=2\n",
            "ENTRY e {\n",
            "}\n",
            "  p = f32[4] parameter(0)\n",
            "  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=add\n",
            "  c = f32[4] collective-permute(p), source_target_pairs={{0,1}}\n",
            "  g = f32[8] all-gather(p), channel_id=1, replica_groups=[1,2]<=[2], dimensions={0}\n",
            "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n",
            "{{",
            "}}",
            "replica_groups=",
            "[2,2]<=[4]",
            "%",
            "=",
            "\n",
            "ROOT ",
            "channel_id=0, ",
        ]
    ),
    max_size=12,
).map("".join)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_hlo_text)
def test_arbitrary_hlo_text_never_fails_with_500(client: Client, text: str) -> None:
    reply = client.post("/api/hlo", {"text": text})
    assert reply.status in (200, 400, 413), reply.body


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"])
@pytest.mark.parametrize("path", ["/api/groups", "/api/info", "/"])
def test_other_methods_are_a_json_405(client: Client, method: str, path: str) -> None:
    reply = client.request(method, path, b"{}", {"Content-Type": "application/json"})
    assert reply.headers["Allow"] == "GET, HEAD, POST"
    assert error_of(reply, 405) == {
        "kind": "MethodNotAllowed",
        "message": f"method {method!r} is not allowed; this server takes GET, HEAD and POST",
    }


def test_head_answers_as_get_without_a_body(client: Client) -> None:
    got = client.get("/api/info")
    head = client.request("HEAD", "/api/info")
    assert head.status == 200 and head.body == b""
    assert head.headers["Content-Length"] == got.headers["Content-Length"]
    assert client.request("HEAD", "/style.css").headers["Content-Type"] == "text/css; charset=utf-8"
    assert client.request("HEAD", "/api/groups").status == 405

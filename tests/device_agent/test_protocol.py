"""The frame format, tensors and hex fields, without sockets; and a fuzz of the frame parser."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench_device.protocol import (
    CLEAR_TEXT_VERSION,
    FIRST_VERSION,
    MAGIC,
    MAX_HEADER,
    PREFIX_SIZE,
    SUPPORTED_VERSIONS,
    VERSION,
    Err,
    FrameError,
    Msg,
    ProtocolError,
    decode_frame,
    encode_prefix,
    negotiate_version,
    frame_bytes,
    hex_field,
    ok,
    pack_tensors,
    parse_prefix,
    unpack_tensors,
)


def test_a_frame_survives_encoding_and_decoding():
    header = {"type": Msg.PUSH_CHUNK, "id": 7, "sha256": "ab" * 32, "offset": 12, "name": "ünï"}
    payload = bytes(range(256)) * 3
    data = frame_bytes(header, payload) + b"next frame"
    frame, used = decode_frame(data)
    assert frame.header == header and bytes(frame.payload) == payload
    assert frame.type == Msg.PUSH_CHUNK and frame.id == 7
    assert data[used:] == b"next frame"
    # A frame carries version 2 unless it is of a connection whose hello chose another.
    assert data[:4] == MAGIC and data[4] == FIRST_VERSION == 2
    assert decode_frame(frame_bytes(header, payload, version=3))[0].header == header
    assert struct.unpack(">IQ", data[8:PREFIX_SIZE]) == (len(json.dumps(
        header, separators=(",", ":"), ensure_ascii=False).encode()), len(payload))


def test_every_malformed_prefix_and_header_is_a_frame_error_with_its_code():
    good = frame_bytes({"type": "hello", "id": 1})
    cases = {
        "bad magic": (b"XXXX" + good[4:], Err.BAD_FRAME),
        "version 1 (clear text)": (good[:4] + b"\x01" + good[5:], Err.BAD_FRAME),
        "version 5": (good[:4] + b"\x05" + good[5:], Err.BAD_FRAME),
        "oversized header": (encode_prefix(MAX_HEADER + 1, 0), Err.TOO_LARGE),
        "oversized payload": (encode_prefix(2, 1 << 40) + b"{}", Err.TOO_LARGE),
        "not json": (encode_prefix(5, 0) + b"{nope", Err.BAD_FRAME),
        "not utf-8": (encode_prefix(4, 0) + b'"\xff"', Err.BAD_FRAME),
        "json array": (encode_prefix(2, 0) + b"[]", Err.BAD_FRAME),
        "json number": (encode_prefix(1, 0) + b"7", Err.BAD_FRAME),
        "truncated": (good[:-3], Err.BAD_FRAME),
        "short prefix": (good[:10], Err.BAD_FRAME),
        "deep nesting": (encode_prefix(60000, 0) + b"[" * 60000, Err.BAD_FRAME),
    }
    for name, (data, code) in cases.items():
        with pytest.raises(FrameError) as error:
            decode_frame(data)
        assert error.value.code == code, name


@pytest.mark.parametrize("text,reason", [
    (b'{"type":"hello","id":1,"x":NaN}', "NaN"),
    (b'{"type":"hello","id":1,"x":Infinity}', "Infinity"),
    (b'{"type":"hello","id":1,"x":[-Infinity]}', "-Infinity"),
    (b'{"type":"hello","id":1,"x":1e400}', "1e400"),
    (b'{"type":"hello","id":1,"type":"auth"}', "'type' appears twice"),
    (b'{"type":"hello","id":1,"id":2}', "'id' appears twice"),
    (b'{"type":"x","id":1,"tensors":[{"name":"a","name":"b"}]}', "'name' appears twice"),
])
def test_headers_with_nan_infinity_or_a_key_given_twice_are_bad_frames(text, reason):
    with pytest.raises(FrameError) as error:
        decode_frame(encode_prefix(len(text), 0) + text)
    assert error.value.code == Err.BAD_FRAME and reason in error.value.message


def test_strict_headers_still_take_every_ordinary_number():
    text = b'{"type":"x","id":9007199254740991,"a":-0.5,"b":1e300,"c":12345678901234567890}'
    frame, _ = decode_frame(encode_prefix(len(text), 0) + text)
    assert frame.header["a"] == -0.5 and frame.header["b"] == 1e300
    assert frame.header["c"] == 12345678901234567890


@pytest.mark.parametrize("hello,supported,chosen", [
    ({}, (1,), 1),                                # a host that predates negotiation
    ({"protocol": 1}, (1,), 1),
    ({"protocol": 2}, (1, 2), 2),
    ({"protocol": 5}, (1, 2), 2),
    ({"protocol": 1}, (1, 2), 1),
    ({"versions": [1, 2]}, (1, 2, 3), 2),
    ({"versions": [3]}, (1, 2, 3), 3),
    ({"versions": [2], "protocol": 1}, (1, 2), 2),  # the list wins over 'protocol'
])
def test_hello_chooses_the_highest_version_both_ends_speak(hello, supported, chosen):
    assert negotiate_version(hello, supported) == chosen


def test_no_version_in_common_names_what_this_end_speaks():
    with pytest.raises(ProtocolError) as error:
        negotiate_version({"versions": [3, 4]}, (1, 2))
    assert error.value.code == Err.UNSUPPORTED_VERSION
    assert error.value.extra == {"versions": [1, 2]}
    assert "3, 4" in error.value.message and "1, 2" in error.value.message
    with pytest.raises(ProtocolError) as error:
        negotiate_version({"protocol": 1}, (2,))
    assert error.value.code == Err.UNSUPPORTED_VERSION


def test_the_agent_can_set_a_lower_payload_limit():
    with pytest.raises(FrameError) as error:
        parse_prefix(encode_prefix(2, 1001), max_payload=1000)
    assert error.value.code == Err.TOO_LARGE
    assert parse_prefix(encode_prefix(2, 1000), max_payload=1000) == (2, 1000)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_crash_the_parser(data):
    try:
        frame, used = decode_frame(data)
    except FrameError as error:
        assert error.code in (Err.BAD_FRAME, Err.TOO_LARGE)
    else:
        assert isinstance(frame.header, dict) and used <= len(data)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(header=st.binary(max_size=300), payload=st.binary(max_size=50),
       header_len_delta=st.integers(-5, 5), payload_len_delta=st.integers(-5, 5))
def test_frames_with_a_valid_prefix_and_random_contents_never_crash_the_parser(
        header, payload, header_len_delta, payload_len_delta):
    # Random bytes rarely get past the magic; these always do, and test the rest.
    header_len = max(0, len(header) + header_len_delta)
    payload_len = max(0, len(payload) + payload_len_delta)
    data = encode_prefix(header_len, payload_len) + header + payload
    try:
        frame, _ = decode_frame(data)
    except FrameError as error:
        assert error.code in (Err.BAD_FRAME, Err.TOO_LARGE)
    else:
        assert isinstance(frame.header, dict)


@settings(max_examples=60, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
                    max_leaves=20).map(lambda value: {"type": "x", "value": value}),
       st.binary(max_size=64))
def test_any_json_header_round_trips(header, payload):
    frame, _ = decode_frame(frame_bytes(header, payload))
    assert frame.header == header and bytes(frame.payload) == payload


def test_tensors_of_every_dtype_round_trip_without_copies():
    tensors = {
        "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
        "i64": np.array([[-1, 2**40]], dtype=np.int64),
        "u8": np.arange(5, dtype=np.uint8),
        "f16": np.array([1.5, -2.0], dtype=np.float16),
        "b": np.array([True, False]),
        "scalar": np.float64(3.25),
        "empty": np.zeros((0, 3), np.float32),
        "big_endian": np.arange(4, dtype=">i4"),
        "strided": np.arange(20, dtype=np.int32).reshape(4, 5)[:, ::2],
    }
    packed = pack_tensors(tensors)
    payload = packed.payload()
    assert len(payload) == packed.nbytes
    unpacked = unpack_tensors(packed.descriptors, payload)
    for name, value in tensors.items():
        np.testing.assert_array_equal(unpacked[name], value)
        assert unpacked[name].shape == np.asarray(value).shape
    assert unpacked["big_endian"].dtype.name == "int32"
    # Unpacking views the payload in place.
    data = bytearray(payload)
    view = unpack_tensors(packed.descriptors, data)["u8"]
    data[packed.descriptors[2]["offset"]] = 99
    assert view[0] == 99


def test_tensors_packed_at_odd_offsets_come_out_aligned_for_the_runtime():
    packed = pack_tensors([("bytes", np.arange(5, dtype=np.uint8)),
                           ("floats", np.arange(6, dtype=np.float32))])
    assert packed.descriptors[1]["offset"] == 5  # tightly packed, as the protocol says
    floats = unpack_tensors(packed.descriptors, packed.payload())["floats"]
    assert floats.flags.aligned and floats.tolist() == list(range(6))


def test_tensor_descriptions_that_do_not_fit_the_payload_are_refused():
    packed = pack_tensors({"x": np.ones((2, 2), np.float32)})
    payload = packed.payload()
    good = packed.descriptors[0]
    bad = [
        "not a list",
        [dict(good, dtype="object")],
        [dict(good, dtype="float64")],
        [dict(good, shape=[2, 3])],
        [dict(good, shape=[-2, -2])],
        [dict(good, offset=8)],
        [dict(good, nbytes=True)],
        [dict(good, name="")],
        [good, good],
        [7],
    ]
    for descriptors in bad:
        with pytest.raises(ProtocolError) as error:
            unpack_tensors(descriptors, payload)
        assert error.value.code == Err.BAD_REQUEST, descriptors
    with pytest.raises(ProtocolError):
        pack_tensors({"o": np.array([object()], dtype=object)})


def test_replies_are_named_after_their_requests():
    assert ok(Msg.PUSH_BEGIN) == "push.begin.ok"
    assert set(Msg.BEFORE_AUTH) <= set(Msg.REQUESTS)
    assert len(set(Err.ALL)) == len(Err.ALL) == 14 and Err.UNSUPPORTED_VERSION in Err.ALL
    assert Err.SCRIPT_EXITED in Err.ALL
    # Version 3's and 4's messages are requests too, and need their version.
    debugging = {Msg.DEBUG_START, Msg.DEBUG_STOP, Msg.DEBUG_TUNNEL}
    slots = {Msg.SLOT_DEPLOY, Msg.SLOT_LIST, Msg.SLOT_RUN, Msg.SLOT_REMOVE}
    assert set(Msg.SINCE) == debugging | slots and set(Msg.SINCE) <= set(Msg.REQUESTS)
    assert {Msg.SINCE[kind] for kind in debugging} == {3}
    assert {Msg.SINCE[kind] for kind in slots} == {4}
    # The local inference endpoint serves running and listing slots only.
    assert set(Msg.LOCAL_INFERENCE) == {Msg.SLOT_RUN, Msg.SLOT_LIST}
    # What a host says about a link is never an agent's reply.
    assert Err.CERTIFICATE_CHANGED not in Err.ALL and Err.NOT_PAIRED not in Err.ALL
    # A connection without a pinned certificate may only say hello and pair.
    assert set(Msg.BEFORE_AUTH) == {Msg.HELLO, Msg.PAIR_BEGIN, Msg.PAIR_FINISH, Msg.CLOSE}


def test_a_clear_text_frame_of_version_1_is_built_for_old_hosts_and_refused_as_input():
    header = {"type": "error", "id": None, "code": Err.UNSUPPORTED_VERSION, "versions": [2]}
    old = frame_bytes(header, version=CLEAR_TEXT_VERSION)
    current = frame_bytes(header)
    assert old[:4] == current[:4] == MAGIC
    assert (old[4], current[4]) == (1, 2) and old[5:] == current[5:]
    with pytest.raises(FrameError) as error:
        decode_frame(old)
    assert error.value.code == Err.BAD_FRAME and "version 1" in error.value.message
    assert decode_frame(current)[0].header == header


def test_the_versions_this_end_speaks_leave_version_1_hosts_out():
    assert VERSION == 4 and SUPPORTED_VERSIONS == (2, 3, 4) and CLEAR_TEXT_VERSION == 1
    for hello in ({}, {"protocol": 1}, {"versions": [1]}):  # what version 1 hosts send
        with pytest.raises(ProtocolError) as error:
            negotiate_version(hello)
        assert error.value.code == Err.UNSUPPORTED_VERSION
        assert error.value.extra == {"versions": [2, 3, 4]}
    assert negotiate_version({"versions": [1, 2]}) == 2  # a version 2 host stays at 2
    assert negotiate_version({"protocol": 2}) == 2
    assert negotiate_version({"protocol": 3}) == 3
    assert negotiate_version({"versions": [2, 3]}) == 3  # a version 3 host stays at 3
    assert negotiate_version({"versions": [2, 3, 4]}) == 4


def test_a_hex_field_gives_its_bytes_and_refuses_anything_else():
    assert hex_field({"cert": "00ff10"}, "cert", 3) == b"\x00\xff\x10"
    assert hex_field({"cert": "ABcd"}, "cert", 2) == b"\xab\xcd"
    for header in ({}, {"cert": None}, {"cert": ""}, {"cert": 1234}, {"cert": ["ab"]},
                   {"cert": "abc"}, {"cert": "zz"}, {"cert": "aabbccdd"}):
        with pytest.raises(ProtocolError) as error:
            hex_field(header, "cert", 3)
        assert error.value.code == Err.BAD_REQUEST and "'cert'" in error.value.message, header

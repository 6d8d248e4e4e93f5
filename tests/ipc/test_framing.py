import json
import struct

import pytest

from workbench.ipc.framing import MAX_FRAME_BYTES, FrameDecoder, FrameError, encode_frame


def test_a_frame_split_anywhere_decodes_to_the_same_message():
    frame = encode_frame({"jsonrpc": "2.0", "id": 1, "method": "hub.ping", "params": {"text": "é✓"}})
    for cut in range(1, len(frame)):
        decoder = FrameDecoder()
        assert decoder.feed(frame[:cut]) == []
        assert decoder.feed(frame[cut:]) == [json.loads(frame[4:])]


def test_several_frames_in_one_read_all_come_out_in_order():
    data = b"".join(encode_frame({"id": i}) for i in range(5))
    assert [m["id"] for m in FrameDecoder().feed(data)] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "data, reason",
    [
        (struct.pack(">I", 3) + b"abc", "not UTF-8 JSON"),
        (struct.pack(">I", 2) + b"\xff\xfe", "not UTF-8 JSON"),
        (struct.pack(">I", 2) + b"[]", "not an object"),
        (struct.pack(">I", MAX_FRAME_BYTES + 1), "limit"),
    ],
)
def test_garbage_is_a_frame_error_that_says_what_is_wrong(data, reason):
    with pytest.raises(FrameError, match=reason):
        FrameDecoder().feed(data)


def test_a_message_over_the_limit_is_refused_before_sending():
    with pytest.raises(FrameError):
        encode_frame({"blob": "x" * (MAX_FRAME_BYTES + 1)})

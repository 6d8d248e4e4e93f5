"""Binary files are shown as a hex dump: offsets, bytes in hex, printable ASCII."""

from workbench.editor.hex_dump import format_byte_size, hex_dump
from workbench.editor.textfile import looks_binary


def test_each_row_has_offset_sixteen_bytes_and_the_ascii_column():
    rows = hex_dump(bytes(range(0x41, 0x41 + 16)) + b"\x00\x7fhi\n").split("\n")
    assert rows[0] == (
        "00000000  41 42 43 44 45 46 47 48  49 4a 4b 4c 4d 4e 4f 50  |ABCDEFGHIJKLMNOP|"
    )
    assert rows[1].startswith("00000010  00 7f 68 69 0a ")
    assert rows[1].endswith("|..hi.|")


def test_a_short_last_row_keeps_the_ascii_column_aligned():
    rows = hex_dump(b"x" * 20).split("\n")
    assert len(rows) == 2
    assert rows[0].index("|") == rows[1].index("|")
    assert rows[1] == "00000010  78 78 78 78" + " " * 39 + "|xxxx|"


def test_offsets_start_where_asked_and_empty_data_gives_no_rows():
    assert hex_dump(b"\xff", first_offset=0x1230).startswith("00001230  ff")
    assert hex_dump(b"") == ""


def test_sizes_read_the_way_people_say_them():
    assert format_byte_size(1) == "1 byte"
    assert format_byte_size(512) == "512 bytes"
    assert format_byte_size(64 * 1024) == "64 KiB"
    assert format_byte_size(int(1.2 * 2**20)) == "1.2 MiB"
    assert format_byte_size(3 * 2**30) == "3 GiB"


def test_nul_bytes_mean_binary_unless_a_bom_says_utf16():
    assert looks_binary(b"\x89HDF\x00\x00")
    assert not looks_binary(b"plain text\n")
    assert not looks_binary(b"\xff\xfeh\x00i\x00")

"""Reading and writing files keeps encodings, line endings and BOMs byte for byte."""

import codecs

import pytest

from workbench.editor import EditorError, read_text_file, write_text_file

SAMPLES = {
    "utf-8": "naïve café ☕\nsecond line\n".encode("utf-8"),
    "utf-8 with BOM": codecs.BOM_UTF8 + "naïve café\nline\n".encode("utf-8"),
    "utf-16 LE with BOM": codecs.BOM_UTF16_LE + "naïve ☕\r\nline\r\n".encode("utf-16-le"),
    "utf-16 BE with BOM": codecs.BOM_UTF16_BE + "naïve ☕\nline\n".encode("utf-16-be"),
    "utf-32 LE with BOM": codecs.BOM_UTF32_LE + "wide\n".encode("utf-32-le"),
    "latin-1": "Grüße aus Köln, façade, déjà vu, ½ £ ©\n".encode("latin-1"),
    "crlf": b"one\r\ntwo\r\nthree\r\n",
    "cr": b"one\rtwo\rthree",
    "empty": b"",
    "no final newline": b"x = 1",
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_unedited_file_saves_byte_identical(tmp_path, name):
    path = tmp_path / "sample.txt"
    path.write_bytes(SAMPLES[name])
    loaded = read_text_file(path)
    assert loaded.is_text
    assert "\r" not in loaded.text
    write_text_file(path, loaded.text, loaded.encoding, loaded.eol, loaded.has_bom)
    assert path.read_bytes() == SAMPLES[name]


def test_bom_and_encoding_are_detected(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(SAMPLES["utf-16 LE with BOM"])
    loaded = read_text_file(path)
    assert (loaded.encoding, loaded.eol, loaded.has_bom) == ("utf-16-le", "\r\n", True)
    assert loaded.text == "naïve ☕\nline\n"


def test_latin1_file_is_not_read_as_utf8(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(SAMPLES["latin-1"])
    loaded = read_text_file(path)
    assert loaded.encoding != "utf-8"
    assert "Grüße" in loaded.text


def test_dominant_line_ending_wins(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"a\r\nb\r\nc\nd\r\n")
    loaded = read_text_file(path)
    assert loaded.eol == "\r\n"
    assert loaded.text == "a\nb\nc\nd\n"


def test_file_with_nul_bytes_is_not_text(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"PK\x03\x04\x00\x00\xff\xfe binary")
    loaded = read_text_file(path)
    assert not loaded.is_text
    assert "PK" in loaded.text


def test_saving_a_character_the_encoding_cannot_hold_names_it_and_suggests_utf8(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"ok\n")
    with pytest.raises(EditorError) as error:
        write_text_file(path, "ok\nsnow ☃\n", "latin-1")
    message = str(error.value)
    assert "U+2603" in message and "line 2" in message and "UTF-8" in message
    assert path.read_bytes() == b"ok\n"


def test_missing_file_says_it_does_not_exist(tmp_path):
    with pytest.raises(EditorError, match="does not exist"):
        read_text_file(tmp_path / "gone.py")


def test_folder_is_refused_with_a_clear_message(tmp_path):
    with pytest.raises(EditorError, match="is a folder"):
        read_text_file(tmp_path)


def test_unreadable_file_mentions_permission(tmp_path, monkeypatch):
    path = tmp_path / "secret.txt"
    path.write_text("x")

    def refuse(self):
        raise PermissionError(13, "Permission denied")

    # Tests may run as root, which ignores permission bits, so the refusal is simulated.
    monkeypatch.setattr(type(path), "read_bytes", refuse)
    with pytest.raises(EditorError, match="permission"):
        read_text_file(path)


def test_saving_into_a_vanished_folder_is_an_editor_error(tmp_path):
    with pytest.raises(EditorError, match="does not exist"):
        write_text_file(tmp_path / "gone" / "a.txt", "x")

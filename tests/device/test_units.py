"""Quantities as the Devices panel and ``workbench device`` both write them."""

from __future__ import annotations

from workbench.device.units import memory_text


def test_memory_is_written_in_binary_units():
    assert memory_text(8 * 2**30) == "8.0 GiB"
    assert memory_text(int(7.6 * 2**30)) == "7.6 GiB"
    assert memory_text(512 * 2**20) == "512.0 MiB"
    assert memory_text(3 * 2**40) == "3.0 TiB"
    assert memory_text(2048 * 2**40) == "2048.0 TiB"
    assert memory_text(900) == "900 bytes"


def test_an_unknown_memory_size_is_a_dash():
    assert memory_text(None) == memory_text(-1) == memory_text("8 GB") == "–"


def test_the_unknown_mark_is_the_one_every_table_uses():
    from workbench.device.units import EMPTY

    assert memory_text(None) == EMPTY == "–"

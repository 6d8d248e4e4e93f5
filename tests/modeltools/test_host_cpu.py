"""Whether this computer's int8 kernels can saturate: x86 CPUs without VNNI can, ARM and x86
with VNNI cannot, and the Quantize report says so in one line exactly when the measured accuracy
may understate the device's."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.modeltools.quantization import host_cpu
from workbench.modeltools.quantization.evaluation import Comparison
from workbench.modeltools.quantization.host_cpu import (flags_from_cpuinfo,
                                                        int8_kernels_can_saturate,
                                                        saturation_note)
from workbench.modeltools.quantization.summary import quantize_report

EPYC_AVX2 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx avx2 fma bmi2\n"
XEON_VNNI = "processor\t: 0\nflags\t\t: sse2 avx2 avx512f avx512bw avx512_vnni amx_int8\n"
CORTEX_A76 = "processor\t: 0\nFeatures\t: fp asimd aes crc32 atomics asimddp\nCPU part\t: 0xd0b\n"


def test_flags_are_read_from_linux_cpuinfo_on_x86_and_arm():
    assert "avx2" in flags_from_cpuinfo(EPYC_AVX2) and "avx512_vnni" not in flags_from_cpuinfo(EPYC_AVX2)
    assert {"avx512_vnni", "amx_int8"} <= flags_from_cpuinfo(XEON_VNNI)
    assert "asimddp" in flags_from_cpuinfo(CORTEX_A76)
    assert flags_from_cpuinfo("processor\t: 0\n") is None


@pytest.mark.parametrize("machine, flags, saturates", [
    ("x86_64", {"avx2"}, True),                                    # AVX2 only: VPMADDUBSW
    ("x86_64", {"avx2", "avx512f", "avx512bw"}, True),             # AVX-512 without VNNI
    ("x86_64", {"avx2", "avx512f", "avx512_vnni"}, False),
    ("AMD64", {"avx2", "avx_vnni"}, False),                        # Windows' name, AVX-VNNI
    ("aarch64", {"asimd", "asimddp"}, False),                      # a phone or a Graviton
    ("arm64", {"asimd"}, False),                                   # Apple silicon, no dot product
])
def test_only_x86_cpus_without_vnni_can_saturate(machine, flags, saturates):
    assert int8_kernels_can_saturate(machine, flags) is saturates
    assert (saturation_note("static", False, machine, flags) is not None) is saturates


def test_an_x86_cpu_whose_flags_are_unknown_counts_as_one_that_can_saturate(monkeypatch):
    monkeypatch.setattr(host_cpu, "cpu_flags", lambda: None)
    assert int8_kernels_can_saturate("AMD64")
    assert "may lack" in saturation_note("dynamic", False, "AMD64")
    assert not int8_kernels_can_saturate("arm64")


def test_the_note_is_one_line_naming_reduce_range_and_stays_away_from_fp16_and_reduced_weights():
    note = saturation_note("static", False, "x86_64", {"avx2"})
    assert "\n" not in note and "has no VNNI" in note and "--reduce-range" in note
    assert "understate the device's" in note
    assert saturation_note("dynamic", False, "x86_64", {"avx2"}) == note
    assert saturation_note("static", True, "x86_64", {"avx2"}) is None
    assert saturation_note("fp16", False, "x86_64", {"avx2"}) is None


@pytest.mark.parametrize("machine, cpuinfo, noted, instructions", [
    ("x86_64", EPYC_AVX2, True, "avx2"),
    ("x86_64", XEON_VNNI, False, "amx_int8, avx512_vnni, avx2"),
    ("aarch64", CORTEX_A76, False, "asimddp"),
])
def test_the_quantize_report_warns_exactly_on_a_cpu_that_can_saturate(monkeypatch, machine,
                                                                     cpuinfo, noted, instructions):
    monkeypatch.setattr(host_cpu.platform, "machine", lambda: machine)
    monkeypatch.setattr(host_cpu, "cpu_flags", lambda: flags_from_cpuinfo(cpuinfo))
    comparison = Comparison(samples=10, accuracy_fp32=95.0, accuracy_quantized=93.0,
                            agreement=99.0, max_abs_diff=0.1, latency_fp32=None,
                            latency_quantized=None)

    def report(mode: str, reduce_range: bool):
        return quantize_report(Path("m.onnx"), Path("m.int8.onnx"), mode, "int8", (100, 30),
                               comparison, [], None, "test.npz", [], reduce_range=reduce_range)

    plain = report("static", False)
    notes = [w for w in plain.warnings if "VNNI" in w]
    assert notes == ([saturation_note("static", False)] if noted else [])
    if noted:  # the CLI and the tool window show the report's warnings as they are
        assert f"warning: {notes[0]}" in plain.to_text().splitlines()
    assert plain.figures["cpu_int8_instructions"] == instructions
    # Calibration cannot win back what saturating kernels lose: the drop's advice says so first.
    drop = next(w for w in plain.warnings if w.startswith("accuracy dropped by 2 points"))
    assert ("--reduce-range, then try --calibration-method" in drop) is noted
    assert not any("VNNI" in w for w in report("dynamic", True).warnings)
    assert not any("VNNI" in w for w in report("fp16", False).warnings)

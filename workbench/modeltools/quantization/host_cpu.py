"""What this computer's CPU means for the int8 figures the Quantize tool measures.

onnxruntime multiplies uint8 activations by int8 weights (QLinearConv, MatMulInteger). On x86
CPUs without VNNI (AVX2, or AVX-512 without VNNI) it does so with VPMADDUBSW, which adds two
uint8 x int8 products into a signed 16-bit value: 255 x 127 x 2 does not fit, and the sum
saturates. The model file is the same; only the arithmetic of this computer is off, so the
accuracy measured here can be lower than a phone's (ARM's int8 instructions widen to 32 bits, as
VNNI does). Weights of 7 bits (``reduce_range``) keep the sums in range.

Qt-free and cheap: the flags are read once, from ``/proc/cpuinfo`` on Linux and ``sysctl`` on
macOS; elsewhere (Windows) they are unknown.
"""

from __future__ import annotations

import functools
import platform
import sys
from typing import Iterable

X86_MACHINES = frozenset({"x86_64", "amd64", "x64", "i386", "i486", "i586", "i686", "x86"})
# Instructions that add uint8 x int8 products into 32 bits, without saturating. Every CPU with
# AMX int8 also has AVX-512 VNNI; it is listed for CPUs whose flags a virtual machine trims.
EXACT_INT8_FLAGS = ("amx_int8", "avx512_vnni", "avx_vnni")
# The int8 dot-product instruction sets the report names, best first: x86's, then ARM's (i8mm
# matrix multiply, asimddp dot product).
INT8_FLAGS = (*EXACT_INT8_FLAGS, "avx2", "i8mm", "asimddp")
# macOS spells the flags its own way (sysctl machdep.cpu.*features).
MACOS_FLAG_NAMES = {"avx2": "avx2", "avx512vnni": "avx512_vnni", "avxvnni": "avx_vnni",
                    "amx_int8": "amx_int8", "amxint8": "amx_int8"}

SATURATION_NOTE = ("this computer's x86 CPU {lacks} VNNI: onnxruntime's int8 kernels on it can "
                   "saturate, so the accuracy measured here may understate the device's; "
                   "--reduce-range (7-bit weights) avoids that")


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags in Linux's spelling (``avx2``, ``avx512_vnni``), or None when
    this system does not tell them."""
    if sys.platform.startswith("linux"):
        return _linux_flags()
    if sys.platform == "darwin":
        return _macos_flags()
    return None


def _linux_flags() -> frozenset[str] | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            return flags_from_cpuinfo(info.read())
    except OSError:
        return None


def flags_from_cpuinfo(text: str) -> frozenset[str] | None:
    """The flags of the first processor in a Linux ``/proc/cpuinfo`` text (x86 names them
    "flags", ARM "Features"), or None when it has neither."""
    for line in text.splitlines():
        if line.startswith(("flags", "Features")) and ":" in line:
            return frozenset(line.split(":", 1)[1].split())
    return None


def _macos_flags() -> frozenset[str] | None:
    import subprocess

    try:
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
                             capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    words = out.lower().split()
    if not words:  # Apple silicon has no machdep.cpu.features
        return None
    return frozenset(MACOS_FLAG_NAMES.get(w.replace(".", "_"), w) for w in words)


def is_x86(machine: str | None = None) -> bool:
    """Whether ``machine`` (default: this computer's, as ``platform.machine()`` names it) is an
    x86 CPU."""
    return (machine if machine is not None else platform.machine()).lower() in X86_MACHINES


def cpu_int8_instructions(flags: Iterable[str] | None = None) -> list[str]:
    """The int8 dot-product instruction sets among ``flags`` (default: this CPU's), best first;
    empty when there are none or the flags are unknown."""
    known = cpu_flags() if flags is None else frozenset(flags)
    return [f for f in INT8_FLAGS if f in (known or ())]


def int8_instructions_figure() -> str:
    """This CPU's int8 instruction sets as the report shows them: "avx512_vnni, avx2", "none
    found", or "unknown" where the system does not tell."""
    if cpu_flags() is None:
        return "unknown"
    return ", ".join(cpu_int8_instructions()) or "none found"


def int8_kernels_can_saturate(machine: str | None = None,
                              flags: Iterable[str] | None = None) -> bool:
    """Whether onnxruntime's uint8 x int8 kernels can saturate on a CPU: an x86 one without VNNI.
    ``machine`` and ``flags`` default to this computer's. An x86 CPU whose flags this system
    does not tell counts as one that can: the note that follows costs less than a silent
    accuracy drop. ARM and other CPUs never saturate."""
    if not is_x86(machine):
        return False
    known = cpu_flags() if flags is None else frozenset(flags)
    return known is None or not any(f in known for f in EXACT_INT8_FLAGS)


def saturation_note(mode: str, reduce_range: bool, machine: str | None = None,
                    flags: Iterable[str] | None = None) -> str | None:
    """The report's one line when the int8 accuracy measured on this computer may understate
    the device's (an int8 ``mode`` on a CPU that can saturate, without ``reduce_range``), or
    None."""
    if mode == "fp16" or reduce_range or not int8_kernels_can_saturate(machine, flags):
        return None
    known = cpu_flags() if flags is None else frozenset(flags)
    lacks = "has no" if known is not None else "may lack (this system does not tell its flags)"
    return SATURATION_NOTE.format(lacks=lacks)

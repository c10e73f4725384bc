"""The C allocator's settings for a training process (glibc on Linux only).

An update gathers, multiplies and frees tensors of 10-40 MB per minibatch
(the legal pairs' torso rows and head rows, their products and gradients).
glibc serves a block that large from fresh ``mmap`` pages, or trims the freed
heap back to the system, so every minibatch paid its page faults again: a
20,000 x 256 product took 30-40 ms where its arithmetic takes ~3. Keeping
freed memory in the heap (a fixed ``mmap`` threshold at glibc's ceiling and a
1 GiB trim threshold) made the reference update ~1.5x faster on this
project's 2-core CPU (bench/README.md, "Page faults"). The cost is that a
training process holds on to memory it has freed: up to 1 GiB at the top of
each malloc arena, more where freed blocks under 32 MiB lie between live ones.
mallopt's settings hold for the whole process and are not undone.
"""

from __future__ import annotations

import ctypes
import platform
import sys

#: mallopt's parameter numbers (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: glibc refuses an mmap threshold above half its 64 MiB heap size on 64-bit systems
MMAP_THRESHOLD = 32 * 2**20
#: freed memory at the heap's top kept up to this much before it goes back to the system
TRIM_THRESHOLD = 2**30


def keep_freed_memory() -> bool:
    """Set glibc's thresholds (above) for this process; False where there is no glibc or it refused."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # the mmap threshold first: setting either one fixes both (no more dynamic thresholds)
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1

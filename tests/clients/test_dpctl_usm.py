#!/usr/bin/env python3
"""clients/dpctl_usm: SYCL's OpenCL adapter (Intel's DPC++ runtime, through
dpctl) on the remote device, as SYCL programs use it: its USM aspects,
shared, device and host allocations, an OpenCL C kernel on all three, and
copies in and out, with exact results.

Usage (through run_remote.sh): test_dpctl_usm.py
Skips (exit 77) where dpctl is not installed for this interpreter
(tests/clients/setup_sycl.sh installs it into build/venv-sycl)."""

import os
import sys

NAME = "clients/dpctl_usm"

try:
    import numpy as np
    import dpctl
    import dpctl.memory as dpm
    import dpctl.program as dpp
except ImportError as e:
    print(f"{NAME}: SKIP: dpctl is not installed ({e})")
    sys.exit(77)


def fail(msg):
    print(f"{NAME}: FAIL: {msg}")
    sys.exit(1)


# No "opencl:*": in the 2026 runtime the OpenCL adapter is in the UR loader, and a
# selector naming the backend finds no device (doc/clients.md, SYCL); the ICD
# directory of run_remote.sh leaves PoCL's platform alone anyway.
os.environ.setdefault("ONEAPI_DEVICE_SELECTOR", "*:*")
devs = [d for d in dpctl.get_devices() if "pocl-remote" in d.name]
if not devs:
    fail(f"no remote device among {[d.name for d in dpctl.get_devices()]}")
d = devs[0]
aspects = (d.has_aspect_usm_device_allocations,
           d.has_aspect_usm_shared_allocations,
           d.has_aspect_usm_host_allocations)
if aspects != (True, True, True):
    fail(f"USM aspects (device, shared, host): {aspects}")
q = dpctl.SyclQueue(d)
n = 1000
a = dpm.MemoryUSMShared(4 * n, queue=q)
b = dpm.MemoryUSMDevice(4 * n, queue=q)
c = dpm.MemoryUSMHost(4 * n, queue=q)
np.frombuffer(a, dtype="i4")[:] = np.arange(n, dtype="i4")
b.copy_from_host((np.arange(n, dtype="i4") * 5).tobytes())
prog = dpp.create_program_from_source(q, """
__kernel void combine (__global int *c, __global const int *a,
                       __global const int *b)
{ size_t i = get_global_id (0); c[i] = a[i] + 2 * b[i]; }""")
q.submit(prog.get_sycl_kernel("combine"), [c, a, b], [n]).wait()
got = np.frombuffer(c, dtype="i4")
want = np.arange(n, dtype="i4") * 11
if not np.array_equal(got, want):
    bad = int(np.nonzero(got != want)[0][0])
    fail(f"combine: element {bad} is {got[bad]}, expected {want[bad]}")
back = np.frombuffer(b.copy_to_host(), dtype="i4")
if not np.array_equal(back, np.arange(n, dtype="i4") * 5):
    fail("the device allocation read back differs from what was written")
print(f"{NAME}: PASS: {d.name}: USM aspects, shared, device and host "
      f"allocations, a kernel on all three, copies in and out")

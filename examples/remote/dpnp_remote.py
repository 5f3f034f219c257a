#!/usr/bin/env python3
"""dpnp (NumPy on SYCL) on a remote device: the SYCL runtime sees PoCL's remote
device as an OpenCL device; arrays live on the server, dpnp's kernels run
there. What dpnp hands to oneMKL (sin, matmul) runs on this host, as oneMKL
does for any CPU device, on the server's memory, which the remote device reads
and writes back as the host touches it (doc/device-info.md, Unified shared
memory).

Run it with examples/remote/run_dpnp.sh, which starts a pocld on loopback over
Intel's OpenCL CPU runtime and points this program at it. Checks the results
exactly and prints OK, or a FAIL line and exits 1.
"""

import sys

import dpctl
import dpnp


def remote_device():
    """The first SYCL device whose name marks it as PoCL's remote device."""
    for dev in dpctl.get_devices():
        if "pocl-remote" in dev.name:
            return dev
    return None


def main():
    dev = remote_device()
    if dev is None:
        print("dpnp_remote: FAIL: no remote device among %s" % dpctl.get_devices())
        return 1
    print("dpnp_remote: device %s (%s)" % (dev.name, dev.backend))
    n = 1 << 20
    try:
        x = dpnp.arange(n, dtype=dpnp.int64, device=dev)  # made on the server
        y = x * 3 + 1                                      # elementwise, there
        total = int(dpnp.sum(y))                           # reductions, there
        top = int(dpnp.max(y))
        even = int(dpnp.count_nonzero(y % 2 == 0))
        # oneMKL: sin(0) and sin(pi/2) exactly; a matrix product of small
        # integers, exact in float32
        s = dpnp.sin(dpnp.asarray([0.0, dpnp.pi / 2], dtype=dpnp.float32, device=dev))
        sines = [float(v) for v in dpnp.asnumpy(s)]
        m = dpnp.arange(16, dtype=dpnp.float32, device=dev).reshape(4, 4)
        trace = int(dpnp.trace(dpnp.matmul(m, m)))
    except Exception as exc:  # the runtime's own error, named: e.g. no USM on the device
        print("dpnp_remote: FAIL: %s: %s" % (type(exc).__name__, exc))
        return 1
    want = (3 * n * (n - 1) // 2 + n, 3 * (n - 1) + 1, n // 2)
    if (total, top, even) != want:
        print("dpnp_remote: FAIL: sum, max, evens %s, expected %s" % ((total, top, even), want))
        return 1
    # trace(m @ m) = sum over i, k of m[i][k] * m[k][i], m[i][k] = 4i + k
    want_trace = sum((4 * i + k) * (4 * k + i) for i in range(4) for k in range(4))
    if sines != [0.0, 1.0] or trace != want_trace:
        print("dpnp_remote: FAIL: sin %s, trace of m @ m %d, expected [0.0, 1.0] and %d"
              % (sines, trace, want_trace))
        return 1
    print("dpnp_remote: y = 3x + 1 over %d elements: sum %d, max %d, %d even; "
          "oneMKL's sin and matmul on the host: OK" % (n, total, top, even))
    return 0


if __name__ == "__main__":
    sys.exit(main())

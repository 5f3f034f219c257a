#!/usr/bin/env python3
"""dpnp (NumPy on SYCL) on a remote device: the SYCL runtime sees PoCL's remote
device as an OpenCL device; arrays live on the server, dpnp's kernels run there.

Run it with examples/remote/run_dpnp.sh, which starts a pocld on loopback over
Intel's OpenCL CPU runtime and points this program at it. Checks every result
against NumPy on the host and prints OK, or a FAIL line and exits 1.
"""

import sys

import dpctl
import dpnp
import numpy


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
        x = dpnp.arange(n, dtype=dpnp.float32, device=dev)  # made on the server
        y = dpnp.sin(x) ** 2 + dpnp.cos(x) ** 2             # elementwise, there
        total = float(dpnp.sum(y))                          # a reduction, there
        a = dpnp.reshape(x[: 256 * 256] / n, (256, 256))
        prod = dpnp.asnumpy(a @ a.T)                        # a matmul, then to the host
    except Exception as exc:  # the runtime's own error, named: e.g. no USM on the device
        print("dpnp_remote: FAIL: %s: %s" % (type(exc).__name__, exc))
        return 1
    xa = numpy.arange(n, dtype=numpy.float32)
    ah = (xa[: 256 * 256] / n).reshape(256, 256)
    if abs(total - n) > 1e-3 * n or not numpy.allclose(prod, ah @ ah.T, rtol=1e-4):
        print("dpnp_remote: FAIL: sum %g (expected %d) or the matmul differs" % (total, n))
        return 1
    print("dpnp_remote: sum(sin^2 + cos^2) over %d elements = %.0f, 256x256 matmul "
          "matches NumPy: OK" % (n, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())

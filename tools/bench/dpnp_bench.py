#!/usr/bin/env python3
"""dpnp workloads on the one SYCL device the environment leaves (tools/bench.sh
sycl-dpnp runs it natively on Intel's OpenCL CPU runtime and through remote).
  dpnp_bench.py LABEL [N [REPS]]
Prints one line per workload, 'LABEL WORKLOAD: median X ms (min Y ms, REPS runs)':
  elementwise: arange(N) float32, sin^2 + cos^2, sum to a host float
  matmul:      a 512x512 float32 product of arrays made on the device, waited for
Two warm-up runs of each first (kernel builds). Exits 1 with the runtime's error
named if the device cannot run them (e.g. no USM).
"""

import statistics
import sys
import time

import dpctl
import dpnp


def elementwise(dev, n):
    x = dpnp.arange(n, dtype=dpnp.float32, device=dev)
    return float(dpnp.sum(dpnp.sin(x) ** 2 + dpnp.cos(x) ** 2))


def matmul(dev, a, b):
    c = a @ b
    c.sycl_queue.wait()


def timed(fn, reps):
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def main():
    label = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 22
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    dev = dpctl.select_default_device()
    print("%s device: %s" % (label, dev.name), flush=True)
    try:
        a = dpnp.reshape(dpnp.arange(512 * 512, dtype=dpnp.float32, device=dev), (512, 512))
        b = a.T / (512 * 512)
        work = (("elementwise", "n=%d" % n, lambda: elementwise(dev, n)),
                ("matmul", "512x512", lambda: matmul(dev, a, b)))
        for name, size, fn in work:
            med, low = timed(fn, reps)
            print("%s %s %s: median %.3f ms (min %.3f ms, %d runs)"
                  % (label, name, size, med, low, reps), flush=True)
    except Exception as exc:
        print("%s failed: %s: %s" % (label, type(exc).__name__, exc), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""dpnp workloads on the one SYCL device the environment leaves (tools/bench.sh
sycl-dpnp runs it natively on Intel's OpenCL CPU runtime and through remote).
  dpnp_bench.py LABEL [N [REPS]]
Prints one line per workload, 'LABEL WORKLOAD: median X ms (min Y ms, REPS runs)':
  elementwise: arange(N) float32, 3x + 1, its sum to a host float
  reductions:  the max and the count of elements above N/2 of that arange
  onemkl-sin:  sin of that arange and its sum: oneMKL's vector math, which runs
               on the host for a CPU device, on device memory (through remote,
               read from the server as it is touched and written back;
               doc/device-info.md, Unified shared memory)
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
    return float(dpnp.sum(x * 3 + 1))


def reductions(x, n):
    return float(dpnp.max(x)), int(dpnp.count_nonzero(x > n // 2))


def onemkl_sin(x):
    return float(dpnp.sum(dpnp.sin(x)))


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
        x = dpnp.arange(n, dtype=dpnp.float32, device=dev)
        work = (("elementwise", "n=%d" % n, lambda: elementwise(dev, n)),
                ("reductions", "n=%d" % n, lambda: reductions(x, n)),
                ("onemkl-sin", "n=%d" % n, lambda: onemkl_sin(x)))
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

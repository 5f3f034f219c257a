#!/usr/bin/env bash
# PoCL-R's benchmarks (doc/benchmarks.md): each subcommand measures the remote
# device against the same device natively and against the loopback TCP round
# trip (RTT) measured in the same run, with fresh pocld, and prints the ratios.
#   tools/bench.sh SUBCOMMAND [ARGS...]
#   tools/bench.sh help          the list below
# The subcommands live in tools/bench/local.sh (this machine, PoCL's pthread
# device) and tools/bench/gpu.sh (a GPU machine, NVIDIA's OpenCL); their
# environment is described at the top of each file.

usage() {
  cat <<'EOF'
usage: tools/bench.sh SUBCOMMAND [ARGS...]

On this machine (loopback, the build's pthread device; BUILD_DIR, POCLD, POCLD_ENV):
  summary [ITERATIONS]          remote_bench: no-op, 100-kernel chain, 64 MiB write/read,
                                migrations between two pocld
  overhead [-n LOG2] [-i ITERATIONS] [-g] [-m MOVES] [PART...]
                                overhead_bench: no-op, stream kernels, chain, event chain,
                                a program built again, 100-kernel command buffer, 4-byte
                                and 16 MiB-1 GiB migrations (PARTs noop stream chain
                                events build cmdbuf migrate);
                                TRACE=1|DIR traces both pocld and sums the trace by stage
  chain [CHAINS]                the chain, thousands back to back, with the CPU per chain
                                of the client and of pocld's session; COUNTS=1 adds perf's
                                sendmsg, recvfrom and context switches
  sycl-chain [CHAINS]           the same chain as a SYCL runtime submits it: an out-of-order
                                queue, each kernel waiting for the previous one's event
  sycl-dpnp [N [REPS]]          dpnp (Intel's SYCL runtime): arange, 3x + 1 and a sum over N
                                floats, a max and a count, oneMKL's sin, natively on Intel's
                                OpenCL CPU runtime and through remote over it
  sycl [N [REPS]]               the SYCL figures in one run: sycl-dpnp, then overhead's
                                parts events (the out-of-order chain) and cmdbuf
  usm [ITERATIONS]              usm_bench: a kernel launch on USM device, host and shared
                                allocations of 4 KiB to 16 MiB (pthread: on SVM natively)
  matmul [N]                    examples/remote/matmul on one and two remote devices
  reconnect [ROUNDS]            a no-op right after fault_proxy cuts every connection
  security [ITERATIONS [ROUNDS]]
                                plain, pre-shared key, TLS, both, taking turns
  transports [ITERATIONS [WAY...]]
                                migrations and the client's transfers over the link,
                                lanes, UCX over TCP and UCX shared memory
  pointcloud [FRAMES [W H]]     the stream -> HEVC -> points chain, four configurations
  all [ITERATIONS [MATMUL_N]]   summary, overhead, matmul, reconnect, security
  ab ROUNDS SIDE SIDE... -- SUBCOMMAND [ARGS...]
                                A/B: SUBCOMMAND once per SIDE (VAR=VALUE words, "-" for
                                none; BUILD_DIR=<another tree's build>, POCLD=...) in turn,
                                ROUNDS rounds

On a GPU machine (POCL_TARBALL=<Debian 12's pocl.tar.xz>; one device call each):
  gpu [ITERATIONS]              two pocld (on two GPUs where there are two): the example,
                                the API tests, summary and overhead against NVIDIA, lane
                                counts, matmul on 1 and 2 GPUs, traced runs; QUICK=1: one
                                server's figures only
  gpu-overhead [PART...]        overhead between the pocld of GPU 0 and GPU 1, ROUNDS
                                rounds; OLD=DIR[:DIR...] alternates with other checkouts;
                                TRACE=1, CLIENT_CPUS, POCLD_CPUS, SERVER_ICD
  gpu-matmul N [SETTING...]     matmul on all GPUs, ROUNDS rounds, per pocld setting
                                (NAME=VAR=VALUE,...) and with OLD=DIR; MIGRATIONS=1, TRACE=1
  gpu-multi                     one pocld per GPU: matmul on 1, 2, 4 ... GPUs and its
                                parallel efficiency, migrations GPU 0 <-> GPU 1, traced
                                rounds; FFMPEG_DIR adds the pointcloud across two GPUs
  gpu-transports [ITERATIONS]   transports with Debian 12's UCX carried along (UCX_ROOT)
  gpu-custom pack DIR           (on Debian 12) FFmpeg's libraries and test data into DIR
  gpu-custom run DIR            the HEVC decoder natively and through pocld, the pointcloud
                                chain with NVIDIA's GPU computing
EOF
}

sub=${1:-help}
shift || true
case $sub in
  summary | overhead | usm | chain | sycl | sycl-chain | sycl-dpnp | matmul | reconnect | security | transports | pointcloud | all | ab)
    group=local ;;
  gpu | gpu-overhead | gpu-matmul | gpu-multi | gpu-transports | gpu-custom)
    group=gpu ;;
  help | -h | --help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/common.sh
source "$here/bench/common.sh"
# shellcheck source=/dev/null
source "$here/bench/$group.sh"
"cmd_${sub//-/_}" "$@"

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Optional GPU kernels of topo-calibrate (gpu_kernels.cu, built when CMake has the CUDA
 * language; gpu_kernels_none.c otherwise): an empty kernel for the launch floor, an SM-driven
 * copy for device and peer copy bandwidth, and a ping-pong between two GPUs for one-hop latency.
 * C interface; streams are cudaStream_t passed as void*. Each launcher returns 0 or a cudaError_t value
 * (gpu_kernels_none.c: -1, with topo_cal_kernels_available() = 0). Called by gpu_devices.c and
 * gpu_p2p.c.
 */
#ifndef TOPO_CALIBRATE_GPU_KERNELS_H
#define TOPO_CALIBRATE_GPU_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int topo_cal_kernels_available(void);
int topo_cal_kernel_empty(void *stream);
/* Copies bytes (a multiple of 16, both pointers 16-byte aligned) with `blocks` x 512 threads. */
int topo_cal_kernel_copy(void *dst, const void *src, size_t bytes, int blocks, void *stream);
/* One thread; `iters` round trips. The initiator writes i into peer_flag and waits for i in
 * my_flag; the other side echoes. Both flags start at 0 (the caller clears them). The initiator
 * writes the elapsed %globaltimer ns into *result_ns (device memory), or -1 when a wait took
 * longer than timeout_ns (the peer never answered); the echo side writes nothing. */
int topo_cal_kernel_pingpong(volatile int *my_flag, volatile int *peer_flag, int iters,
                             int initiator, unsigned long long timeout_ns, long long *result_ns,
                             void *stream);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU kernels of topo-calibrate (interface and contracts in gpu_kernels.h): empty kernel, SM copy,
 * two-GPU ping-pong over peer memory. Built for sm_90 (plus PTX) when CMake has CUDA.
 */
#include <cuda_runtime.h>

#include "gpu_kernels.h"

static __device__ __forceinline__ unsigned long long globaltimer(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

static __global__ void empty_kernel(void) {}

static __global__ void copy_kernel(int4 *__restrict__ dst, const int4 *__restrict__ src, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

static __global__ void pingpong_kernel(volatile int *my_flag, volatile int *peer_flag, int iters,
                                       int initiator, unsigned long long timeout_ns,
                                       long long *result_ns) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long start = globaltimer();
  for (int i = 1; i <= iters; i++) {
    if (initiator) {
      *peer_flag = i;
      __threadfence_system();
    }
    unsigned long long wait_from = globaltimer();
    while (*my_flag < i) {
      if (globaltimer() - wait_from > timeout_ns) {
        if (initiator) *result_ns = -1;
        return;
      }
    }
    if (!initiator) {
      *peer_flag = i;
      __threadfence_system();
    }
  }
  if (initiator) *result_ns = (long long)(globaltimer() - start);
}

extern "C" int topo_cal_kernels_available(void) { return 1; }

extern "C" int topo_cal_kernel_empty(void *stream) {
  empty_kernel<<<1, 1, 0, (cudaStream_t)stream>>>();
  return (int)cudaGetLastError();
}

extern "C" int topo_cal_kernel_copy(void *dst, const void *src, size_t bytes, int blocks, void *stream) {
  if (blocks < 1) blocks = 1;
  copy_kernel<<<blocks, 512, 0, (cudaStream_t)stream>>>((int4 *)dst, (const int4 *)src, bytes / sizeof(int4));
  return (int)cudaGetLastError();
}

extern "C" int topo_cal_kernel_pingpong(volatile int *my_flag, volatile int *peer_flag, int iters,
                                        int initiator, unsigned long long timeout_ns,
                                        long long *result_ns, void *stream) {
  pingpong_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(my_flag, peer_flag, iters, initiator, timeout_ns,
                                                     result_ns);
  return (int)cudaGetLastError();
}

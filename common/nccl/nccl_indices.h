/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The indices NCCL gives its collectives, algorithms and protocols: the values every plugin ABI
 * version carries (ncclFunc_t, NCCL_ALGO_*, NCCL_PROTO_*). Our own declarations, written from
 * shared/reference/nccl-plugin-abi.md (section 1.1). Nothing here is also declared by NCCL's public
 * <nccl.h>, so code built against real NCCL (topo-calibrate) includes it as the plugins do.
 * Names, sizes and factors for these indices: common/nccl_vocab.h.
 */
#ifndef TOPO_NCCL_INDICES_H
#define TOPO_NCCL_INDICES_H

/* Values are stable across versions; only ids 0..4 ever reach a tuner. NCCL 2.28 adds 8..10
 * (lowered to p2p: a profiler sees them as p2p events); 2.29 adds 11..14, not named here. */
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7,
  ncclFuncAlltoAll = 8,
  ncclFuncScatter = 9,
  ncclFuncGather = 10,
} ncclFunc_t;
#define NCCL_NUM_FUNCTIONS 5 /* tuned functions */

#define NCCL_ALGO_UNDEF          -1
#define NCCL_ALGO_TREE           0
#define NCCL_ALGO_RING           1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN  3
#define NCCL_ALGO_NVLS           4
#define NCCL_ALGO_NVLS_TREE      5
#define NCCL_ALGO_PAT            6
#define NCCL_NUM_ALGORITHMS      7 /* 6 on NCCL 2.22 (no PAT): always index with the numAlgo passed */

#define NCCL_PROTO_UNDEF   -1
#define NCCL_PROTO_LL      0
#define NCCL_PROTO_LL128   1
#define NCCL_PROTO_SIMPLE  2
#define NCCL_NUM_PROTOCOLS 3

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MPI launch (built with -DTOPO_CALIBRATE_MPI=ON when CMake finds MPI): mpirun / srun start one
 * process per rank, as nccl-tests does; this file only maps MPI ranks to GPUs (local rank within
 * the host), counts the hosts, and broadcasts the first NCCL unique id. Everything after that
 * goes over NCCL (gpu_comms.c). NCCL_HOSTID set per rank by the launcher still counts as a node.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"

static int mpi_share_id(void *ctx, void *id, size_t len) {
  (void)ctx;
  return MPI_Bcast(id, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

int topo_cal_launch_mpi(const topo_cal_options *o, int *argc, char ***argv) {
  if (MPI_Init(argc, argv) != MPI_SUCCESS) {
    fprintf(stderr, "topo-calibrate: error: MPI_Init failed\n");
    return 1;
  }
  int rank = 0, size = 1, local = 0, local_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  /* Hosts: distinct NCCL_HOSTID values when set, else shared-memory domains. */
  int leader = local == 0, nodes = 0;
  MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  topo_cal_proc proc = {.nprocs = size,
                        .proc = rank,
                        .nodes = nodes,
                        .local_first = rank,
                        .nlocal = 1,
                        .nranks = size,
                        .device_base = local,
                        .share_id = mpi_share_id,
                        .share_ctx = NULL};
  topo_cal_log_setup(NULL, o->verbose, rank != 0);
  topo_cal_results res;
  topo_cal_results_init(&res);
  int rc = topo_cal_run(o, &proc, &res);
  topo_cal_results_free(&res);
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the binary trace reader over arbitrary bytes (header, blocks, CRC, resync,
// strings, footer). The same entry point replays the seed corpus in the normal build (CTest).
#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  topo_trace_reader *r;
  if (topo_trace_reader_open_memory(data, size, "fuzz", 1, &r) != TOPO_OK) return 0;
  const topo_trace_record *rec;
  volatile uint64_t sink = 0;
  while ((rec = topo_trace_reader_next(r))) {
    sink += rec->type;
    if (rec->type == TOPO_REC_KERNEL) sink += topo_trace_reader_string(r, rec->kernel.name_id)[0];
    if (rec->type == TOPO_REC_MARK) sink += topo_trace_reader_string(r, rec->mark.name_id)[0];
  }
  const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
  if (info->records > size / TOPO_TRACE_RECORD_SIZE) __builtin_trap(); /* never invents records */
  topo_trace_reader_close(r);
  (void)sink;
  return 0;
}

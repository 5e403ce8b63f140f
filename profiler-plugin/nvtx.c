// SPDX-License-Identifier: Apache-2.0
// NVTX emitter: one start/end range per collective in our own "topo" domain (start/end, not
// push/pop: a range starts on the enqueuing thread and ends wherever the collective completes),
// a category and an ARGB colour per collective type, a message with bytes, algorithm, protocol,
// channels and seq, and at completion a mark carrying the GPU duration (us) as payload whose
// message is the registered name of the collective. Header-only NVTX3: with no tool attached
// nvtxDomainCreateA returns NULL and nothing else is called. The core starts it at a generation's
// first init; the core's record of a collective opens and ends its range (nvtx.h).
#include <stdio.h>
#include <string.h>

#include "nvtx.h"

#include "nccl_vocab.h"

#ifdef TOPO_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

#define NFUNC TOPO_NCCL_NUM_FUNCS
static const uint32_t colors[NFUNC] = {0xff4e79a7, 0xfff28e2b, 0xff59a14f, 0xffb07aa1,
                                       0xffe15759, 0xff76b7b2, 0xffedc948, 0xff9c755f,
                                       0xffff9da7, 0xffbab0ac, 0xff8cd17d};

static nvtxDomainHandle_t domain;
static nvtxStringHandle_t func_strings[NFUNC];

int topo_nvtx_init(void) {
  domain = nvtxDomainCreateA("topo");
  if (!domain) return 0;
  for (int i = 0; i < NFUNC; i++) {
    const char *name = topo_nccl_func_name(i, TOPO_NCCL_EVENT);
    nvtxDomainNameCategoryA(domain, (uint32_t)i + 1, name);
    func_strings[i] = nvtxDomainRegisterStringA(domain, name);
  }
  return 1;
}

static const char *func_name(int f) {
  return f < NFUNC ? topo_nccl_func_name(f, TOPO_NCCL_EVENT) : "Unknown";
}

uint64_t topo_nvtx_coll_start(const topo_rec_coll *r) {
  if (!domain) return 0;
  char msg[160];
  const char *algo =
      r->algo < NCCL_NUM_ALGORITHMS ? topo_nccl_algo_name(r->algo, TOPO_NCCL_EVENT) : "?";
  const char *proto =
      r->proto < NCCL_NUM_PROTOCOLS ? topo_nccl_proto_name(r->proto, TOPO_NCCL_EVENT) : "?";
  if (r->type == TOPO_REC_P2P)
    snprintf(msg, sizeof msg, "%s %llu B peer %d ch %u seq %llu", func_name(r->func),
             (unsigned long long)r->bytes, r->peer, r->nchannels, (unsigned long long)r->seq);
  else
    snprintf(msg, sizeof msg, "%s %llu B %s/%s ch %u seq %llu", func_name(r->func),
             (unsigned long long)r->bytes, algo, proto, r->nchannels, (unsigned long long)r->seq);
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = r->func < NFUNC ? (uint32_t)r->func + 1 : 0;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = r->func < NFUNC ? colors[r->func] : 0xff808080;
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = r->bytes;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = msg;
  uint64_t id = nvtxDomainRangeStartEx(domain, &a);
  return id ? id : 1; /* 0 means "no range" to the core */
}

void topo_nvtx_coll_end(uint64_t range, const topo_rec_coll *r) {
  if (!domain) return;
  nvtxDomainRangeEnd(domain, range);
  if (!(r->flags & TOPO_COLL_F_GPU_TIMED) || r->func >= NFUNC) return;
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = (uint32_t)r->func + 1;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = colors[r->func];
  a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
  a.payload.dValue = (double)(r->gpu_stop_ns - r->gpu_start_ns) / 1e3;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = func_strings[r->func];
  nvtxDomainMarkEx(domain, &a);
}
#else
int topo_nvtx_init(void) { return 0; }
uint64_t topo_nvtx_coll_start(const topo_rec_coll *r) {
  (void)r;
  return 0;
}
void topo_nvtx_coll_end(uint64_t range, const topo_rec_coll *r) {
  (void)range;
  (void)r;
}
#endif

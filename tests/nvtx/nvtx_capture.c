// SPDX-License-Identifier: Apache-2.0
// A test-only NVTX tool: loaded by NVTX3 through NVTX_INJECTION64_PATH, it fills the CORE2
// callback slots (domains, registered strings, categories, start/end ranges, marks, push/pop)
// and appends one line per call to the file named by TOPOTEST_NVTX_CAPTURE, so tests can check
// every NVTX call the profiler makes without Nsight. Idempotent: every NVTX copy in the process
// (one per binary that includes the headers) may call InitializeInjectionNvtx2.
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#define MAX_STRINGS 4096
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static uintptr_t ndomains;
static char *strings[MAX_STRINGS];
static uintptr_t nstrings;
static atomic_ullong nranges;

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...) {
  pthread_mutex_lock(&lock);
  if (out) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
  }
  pthread_mutex_unlock(&lock);
}

static const char *message(const nvtxEventAttributes_t *a, char *buf, size_t n) {
  if (!a) return "";
  switch (a->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "";
  case NVTX_MESSAGE_TYPE_REGISTERED: {
    uintptr_t id = (uintptr_t)a->message.registered;
    pthread_mutex_lock(&lock);
    snprintf(buf, n, "reg:%s", id && id < MAX_STRINGS && strings[id] ? strings[id] : "?");
    pthread_mutex_unlock(&lock);
    return buf;
  }
  default: return "";
  }
}

static void payload(const nvtxEventAttributes_t *a, char *buf, size_t n) {
  switch (a ? a->payloadType : 0) {
  case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
    snprintf(buf, n, "u64:%" PRIu64, a->payload.ullValue);
    break;
  case NVTX_PAYLOAD_TYPE_DOUBLE: snprintf(buf, n, "f64:%.3f", a->payload.dValue); break;
  default: snprintf(buf, n, "none");
  }
}

static nvtxDomainHandle_t NVTX_API domain_create(const char *name) {
  pthread_mutex_lock(&lock);
  uintptr_t id = ++ndomains;
  pthread_mutex_unlock(&lock);
  emit("DOMAIN dom=%" PRIuPTR " name=%s", id, name ? name : "");
  return (nvtxDomainHandle_t)id;
}

static nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t d, const char *s) {
  pthread_mutex_lock(&lock);
  uintptr_t id = nstrings + 1 < MAX_STRINGS ? ++nstrings : 0;
  if (id) strings[id] = strdup(s ? s : "");
  pthread_mutex_unlock(&lock);
  emit("STRING dom=%" PRIuPTR " id=%" PRIuPTR " text=%s", (uintptr_t)d, id, s ? s : "");
  return (nvtxStringHandle_t)id;
}

static void NVTX_API name_category(nvtxDomainHandle_t d, uint32_t cat, const char *name) {
  emit("CATEGORY dom=%" PRIuPTR " cat=%u name=%s", (uintptr_t)d, cat, name ? name : "");
}

static nvtxRangeId_t NVTX_API range_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  nvtxRangeId_t id = atomic_fetch_add(&nranges, 1) + 1;
  char m[256], p[64];
  payload(a, p, sizeof p);
  emit("START dom=%" PRIuPTR " id=%" PRIu64 " cat=%u color=%08x payload=%s msg=%s", (uintptr_t)d,
       id, a ? a->category : 0, a ? a->color : 0, p, message(a, m, sizeof m));
  return id;
}

static void NVTX_API range_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  emit("END dom=%" PRIuPTR " id=%" PRIu64, (uintptr_t)d, id);
}

static void NVTX_API mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char m[256], p[64];
  payload(a, p, sizeof p);
  emit("MARK dom=%" PRIuPTR " cat=%u payload=%s msg=%s", (uintptr_t)d, a ? a->category : 0, p,
       message(a, m, sizeof m));
}

static int NVTX_API push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char m[256];
  emit("PUSH dom=%" PRIuPTR " msg=%s", (uintptr_t)d, message(a, m, sizeof m));
  return 0;
}

static int NVTX_API pop(nvtxDomainHandle_t d) {
  emit("POP dom=%" PRIuPTR, (uintptr_t)d);
  return 0;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  pthread_mutex_lock(&lock);
  if (!out) {
    const char *path = getenv("TOPOTEST_NVTX_CAPTURE");
    out = fopen(path ? path : "/dev/null", "a");
  }
  pthread_mutex_unlock(&lock);
  const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
  if (!cb) return 0;
  NvtxFunctionTable table = NULL;
  unsigned int size = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) return 0;
#define SLOT(id, fn) \
  if ((unsigned)(id) < size) *table[id] = (NvtxFunctionPointer)(fn)
  SLOT(NVTX_CBID_CORE2_DomainCreateA, domain_create);
  SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, register_string);
  SLOT(NVTX_CBID_CORE2_DomainNameCategoryA, name_category);
  SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, range_start);
  SLOT(NVTX_CBID_CORE2_DomainRangeEnd, range_end);
  SLOT(NVTX_CBID_CORE2_DomainMarkEx, mark);
  SLOT(NVTX_CBID_CORE2_DomainRangePushEx, push);
  SLOT(NVTX_CBID_CORE2_DomainRangePop, pop);
  emit("INIT");
  return 1;
}

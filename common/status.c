// SPDX-License-Identifier: Apache-2.0
// Names for the internal status codes (see status.h).
#include "status.h"

const char *topo_status_str(topo_status status) {
  switch (status) {
  case TOPO_OK: return "ok";
  case TOPO_ERR_NOMEM: return "out of memory";
  case TOPO_ERR_IO: return "I/O error";
  case TOPO_ERR_PARSE: return "malformed input";
  case TOPO_ERR_INVALID: return "invalid argument";
  case TOPO_ERR_UNSUPPORTED: return "unsupported";
  case TOPO_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

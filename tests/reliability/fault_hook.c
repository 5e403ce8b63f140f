// SPDX-License-Identifier: Apache-2.0
// Linked only into the fault-injection builds of the plugins (tests/reliability): exports the
// plugin's own copy of the allocation hook (common/alloc.h), which the shipped plugin keeps
// hidden, so a test can make the N-th allocation inside a dlopen'ed plugin fail.
#include "alloc.h"
#include "export.h"

TOPO_EXPORT void topo_test_alloc_fail_after(long n);
TOPO_EXPORT long topo_test_alloc_count(void);

void topo_test_alloc_fail_after(long n) { topo_alloc_fail_after(n); }
long topo_test_alloc_count(void) { return topo_alloc_count(); }

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fit/: `topo-report fit`: a tuner profile (common/profile) fitted to the collectives of a
 * finished rp_report. Imports model/ only; beside render/, called by main.c.
 */
#ifndef TOPO_REPORT_FIT_H
#define TOPO_REPORT_FIT_H

#include <stdio.h>

#include "report.h"

/* `topo-report fit`: write a tuner profile for the traces' collectives to out_path (fit.c says
 * what goes in). base_path (NULL = none) is the profile refined: its terms stay where the traces
 * measured nothing. The file appears whole or not at all (temporary file in its directory, then
 * rename). TOPO_OK when something was written; TOPO_ERR_INVALID when the traces held nothing
 * usable (nothing written); TOPO_ERR_IO / TOPO_ERR_NOMEM on failure (nothing written). */
topo_status rp_fit(const rp_report *r, const char *gpu, const char *base_path, const char *out_path,
                   FILE *summary);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every topo command line shares: glibc's getopt_long, read with opterr = 0 and an optstring
 * that starts with ':', and one wording for misuse. Exit codes alike in every tool: 0 done, 1
 * nothing usable or a failure a script should see, 2 misuse (TOPO_CLI_*). Subcommands, where a
 * tool has them, come first, in the style of git ("topo-report export --chrome ...").
 * Callers: topo-calibrate's options.c, topo-tune, topo-report. Thread-safety: getopt_long's
 * state is global: one parse at a time.
 */
#ifndef TOPO_CLI_H
#define TOPO_CLI_H

#include <getopt.h>
#include <stddef.h>

enum { TOPO_CLI_DONE = 0, TOPO_CLI_FAILED = 1, TOPO_CLI_MISUSE = 2 };

/* Restart getopt_long on a new argv (a second parse in one process, as tests do). */
void topo_cli_reset(void);

/* The misuse line for getopt_long's '?' or ':' answer `c`, without the program name and without
 * "(try --help)": "unknown option '--bogus'", "option --iters needs a value", "option --quick
 * takes no value", "unknown option '-x'". `opts` is the table given to getopt_long. */
void topo_cli_misuse(int c, char **argv, const struct option *opts, char *buf, size_t len);

#endif

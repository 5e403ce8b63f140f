/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rule every topo command line keeps, in one place: glibc's getopt_long, read with opterr = 0
 * and an optstring that starts with ':', one wording for misuse, and one exit code per outcome:
 *   0 (TOPO_CLI_DONE)    it produced what was asked, from usable input;
 *   1 (TOPO_CLI_FAILED)  the input was unusable or an output failed: one line on stderr,
 *                        "PROG: error: WHAT", saying what (topo_cli_error);
 *   2 (TOPO_CLI_MISUSE)  the command line is wrong: one line, "PROG: WHAT (try --help)"
 *                        (topo_cli_usage); an option a subcommand cannot honour is misuse.
 * Warnings about input that is damaged yet usable go through TOPO_WARN ("PROG: warning: ...").
 * Every line is escaped (topo_log_escape): a quoted path, argument or file line never writes
 * raw control bytes to the terminal. Subcommands, where a tool has them, come first, in the
 * style of git ("topo-report export --chrome ..."). Callers: every tool's main (topo-report,
 * topo-tune, topo-demo, topo-calibrate, topo-profiler-cost). Thread-safety: getopt_long's state
 * is global: one parse at a time; the helpers that print may be called from any thread.
 */
#ifndef TOPO_CLI_H
#define TOPO_CLI_H

#include <getopt.h>
#include <stddef.h>

enum { TOPO_CLI_DONE = 0, TOPO_CLI_FAILED = 1, TOPO_CLI_MISUSE = 2 };

/* The tool's name, the first word of each of its stderr lines; also routes TOPO_WARN (and
 * TOPO_INFO when verbose) to stderr under that name. Call first in main, again to change
 * verbosity. `program` must outlive the process (a literal). */
void topo_cli_init(const char *program, int verbose);

/* "PROG: WHAT (try --help)" on stderr; returns TOPO_CLI_MISUSE. */
int topo_cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "PROG: error: WHAT" on stderr; returns TOPO_CLI_FAILED. */
int topo_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Input checks that may find nothing usable: topo_cli_hold keeps the warnings they give
 * (log.h); topo_cli_release prints them (the input was usable: they stand beside the output);
 * topo_cli_error_held prints instead one line, "PROG: error: WHAT: FIRST WARNING (and N more
 * warnings)", drops the rest and returns TOPO_CLI_FAILED. */
void topo_cli_hold(void);
/* Prints at most `max` held warnings (< 0: all) and a line counting the rest. */
void topo_cli_release(int max);
int topo_cli_error_held(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Restart getopt_long on a new argv (a second parse in one process, as tests do). */
void topo_cli_reset(void);

/* The misuse line for getopt_long's '?' or ':' answer `c`, without the program name and without
 * "(try --help)": "unknown option '--bogus'", "option --iters needs a value", "option --quick
 * takes no value", "unknown option '-x'". `opts` is the table given to getopt_long. */
void topo_cli_misuse(int c, char **argv, const struct option *opts, char *buf, size_t len);

/* topo_cli_misuse's line printed by topo_cli_usage; returns TOPO_CLI_MISUSE. */
int topo_cli_getopt_error(int c, char **argv, const struct option *opts);

/* The long name of option `val` in `opts` ("json" for OPT_JSON), or "?" when it has none. */
const char *topo_cli_option_name(const struct option *opts, int val);

#endif

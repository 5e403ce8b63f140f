/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streaming reader of the binary per-rank trace (common/trace_format.h). Used by topo-report,
 * its benchmark and fuzz target. It validates the header, checks each block's CRC-32C before
 * handing out its records, assembles string records into a table, and keeps the drop counts of
 * the footer or, when the writer was killed, of the last STATS record.
 *
 * Damage never stops it early: a truncated, corrupt or unknown-version file gives one warning
 * per problem (TOPO_WARN, naming the file and byte offset, at most TOPO_TRACE_READER_MAX_WARN
 * per file) and every block that checks out is still delivered; after a corrupt region it
 * resynchronises on the next block header whose checksum holds. Every length and count is
 * checked before use; no input makes it read out of bounds or allocate more than
 * TOPO_TRACE_READER_MAX_STRING_BYTES for strings plus one block buffer (256 KiB).
 *
 * Work: every input byte is read and checksummed a bounded number of times, however the file
 * is damaged (info.checked_bytes counts the checksummed bytes). Memory: one block buffer, one
 * input window (1 MiB), a ring of prefix checksums (32 KiB) and the string table; nothing grows
 * with the number of records. A suspended reader holds only its position, counts and strings:
 * many files can be read in turns under a small limit on open descriptors. Thread-safety: a
 * reader is used by one thread at a time; distinct readers are independent. Little-endian hosts
 * only (as is the format).
 */
#ifndef TOPO_TRACE_READER_H
#define TOPO_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "trace_format.h"

#define TOPO_TRACE_READER_MAX_WARN         8
#define TOPO_TRACE_READER_MAX_STRING_BYTES (16u << 20)
#define TOPO_TRACE_READER_MAX_STRING_LEN   4096

typedef struct topo_trace_reader topo_trace_reader;

/* What the reader saw, for reports and tests. Counts are final once next() returned 0. */
typedef struct topo_trace_reader_info {
  uint64_t file_bytes;     /* size of the input */
  uint64_t blocks;         /* blocks whose checksum held (delivered) */
  uint64_t records;        /* records delivered */
  uint64_t bad_blocks;     /* blocks skipped (checksum, bad header) */
  uint64_t skipped_bytes;  /* bytes not delivered: corrupt regions and truncated tails */
  uint32_t problems;       /* problems found (warnings given or suppressed) */
  int header_ok;           /* 1 when the header was valid: records can be delivered */
  int footer;              /* 1 when a valid footer ended the file */
  int truncated;           /* 1 when the file ended inside a block, header or footer */
  uint64_t footer_records; /* records the writer says it wrote (footer, else last STATS) */
  uint64_t dropped[TOPO_DROP_KINDS]; /* from the footer, else the last STATS record */
  uint64_t checked_bytes;            /* bytes run through the checksum (about file_bytes) */
  int io_error; /* errno of a failed read or reopen: the rest was not read (0 none) */
  uint64_t first_problem_offset; /* byte offset of the first problem (valid if problems) */
  topo_status first_problem;     /* TOPO_OK, TOPO_ERR_PARSE, TOPO_ERR_UNSUPPORTED, TOPO_ERR_IO */
  char first_message[256];       /* the first problem's message (without the file name) */
} topo_trace_reader_info;

/* Open a trace file. TOPO_ERR_IO when it cannot be opened or is no regular file (warned unless
 * quiet; errno says why), TOPO_ERR_NOMEM. Otherwise
 * TOPO_OK and *out is a reader even when the header is bad (info.header_ok tells; next() then
 * returns 0). `quiet` != 0 stores problems in info without warning (tests, fuzzing). */
topo_status topo_trace_reader_open(const char *path, int quiet, topo_trace_reader **out);
/* The same over `size` bytes at `data` (not copied: they must outlive the reader); `name`
 * labels messages. */
topo_status topo_trace_reader_open_memory(const void *data, size_t size, const char *name,
                                          int quiet, topo_trace_reader **out);
void topo_trace_reader_close(topo_trace_reader *r); /* NULL-safe */
/* Releases a file reader's descriptor and buffers between blocks; the next read reopens the
 * same file (same device and inode) and goes on where it stopped. Reopening can fail (the file
 * was removed or replaced, no descriptor left): that is a problem with info.io_error set, and
 * the reader ends. Returns 1 when released; 0 for memory readers, readers already suspended,
 * and while records of the current block remain for topo_trace_reader_next. */
int topo_trace_reader_suspend(topo_trace_reader *r);

/* The validated header (strings NUL-terminated), or NULL when the header was not usable. */
const topo_trace_header *topo_trace_reader_header(const topo_trace_reader *r);

/* The next checked block's records: returns their count (>= 1) and sets *records; 0 at the end
 * of the usable data. The records stay valid until the next call. */
size_t topo_trace_reader_next_block(topo_trace_reader *r, const topo_trace_record **records);
/* One record at a time over the same blocks; NULL at the end. */
const topo_trace_record *topo_trace_reader_next(topo_trace_reader *r);

/* Text of string `id` from the records delivered so far ("" when unknown). Stable until close. */
const char *topo_trace_reader_string(const topo_trace_reader *r, uint32_t id);

/* Byte offset of the next unread byte (progress). */
uint64_t topo_trace_reader_offset(const topo_trace_reader *r);
const topo_trace_reader_info *topo_trace_reader_info_get(const topo_trace_reader *r);

#endif

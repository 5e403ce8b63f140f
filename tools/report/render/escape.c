// SPDX-License-Identifier: Apache-2.0
// Strings as the output formats need them: JSON string literals (always valid JSON, whatever
// bytes a trace held) and HTML text. Called by every renderer that writes JSON or HTML
// (render_json.c, render_html.c, render_kernels.c, render_next.c, export_chrome.c, dump.c).
#include <stdio.h>

#include "report_render.h"

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF), 0 when it is not one. */
static int utf8_len(const unsigned char *p) {
  unsigned char c = p[0];
  int n;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c < 0x80) return 1;
  else if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (int k = 2; k < n; k++)
    if (p[k] < 0x80 || p[k] > 0xbf) return 0;
  return n;
}

void rp_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    int n = utf8_len(p);
    if (!n) { /* not UTF-8: one U+FFFD per invalid byte, so the output is always valid JSON */
      fputs("\\ufffd", f);
      p++;
      continue;
    }
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fwrite(p, 1, (size_t)n, f);
    p += n;
  }
  fputc('"', f);
}

/* Text for HTML: <, >, & and " as entities. */
void rp_html_esc(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else if (*s == '"') fputs("&quot;", f);
    else fputc(*s, f);
  }
}

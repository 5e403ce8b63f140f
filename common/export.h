/* SPDX-License-Identifier: Apache-2.0 */
/* The one way a symbol leaves a plugin: everything else is hidden (-fvisibility=hidden). */
#ifndef TOPO_EXPORT_H
#define TOPO_EXPORT_H
#define TOPO_EXPORT __attribute__((visibility("default")))
/* Data one file of a library defines and others read directly: declared hidden, so that the reads
 * are plain PC-relative loads rather than loads through the GOT. */
#define TOPO_HIDDEN __attribute__((visibility("hidden")))
#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The one way a symbol leaves a plugin: everything else is hidden (-fvisibility=hidden). */
#ifndef TOPO_EXPORT_H
#define TOPO_EXPORT_H
#define TOPO_EXPORT __attribute__((visibility("default")))
#endif

// SPDX-License-Identifier: Apache-2.0
/* The ioqos_build_info gauge both daemons expose on /metrics. The version is
 * CMake's project(VERSION), passed to every translation unit as IOQOS_VERSION
 * (the one place it is written; see CMakeLists.txt). */
#ifndef IOQOS_BUILDINFO_H
#define IOQOS_BUILDINFO_H

#include <stdio.h>

/* Writes HELP, TYPE and the one sample
 *   ioqos_build_info{binary="BINARY",version="IOQOS_VERSION"} 1
 * binary is a fixed program name (no escaping is done). */
void ioq_build_info_write(FILE *f, const char *binary);

#endif

// SPDX-License-Identifier: Apache-2.0
#include "base/buildinfo.h"

void ioq_build_info_write(FILE *f, const char *binary) {
  fprintf(f,
          "# HELP ioqos_build_info Always 1; the labels name the running binary and its version.\n"
          "# TYPE ioqos_build_info gauge\n"
          "ioqos_build_info{binary=\"%s\",version=\"%s\"} 1\n",
          binary, IOQOS_VERSION);
}

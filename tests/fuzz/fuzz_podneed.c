// SPDX-License-Identifier: Apache-2.0
/* Fuzzes a pod's ioqos needs from Pod JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grant/podneed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ioq_pod_need n;
  ioq_err e = {0};
  if (ioq_pod_need_parse((const char *)data, size, &n, &e) == 0) {
    if (!n.class_name[0])
      abort(); /* the class is never empty */
  } else if (!e.msg[0]) {
    abort();
  }
  return 0;
}

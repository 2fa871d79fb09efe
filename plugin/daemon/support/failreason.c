// SPDX-License-Identifier: Apache-2.0
/* Names of the failure reasons (failreason.h). */
#include "failreason.h"

const char *fail_reason_name(enum fail_reason r) {
  static const char *const names[FAIL_COUNT_] = {
      "none",  "invalid-ids", "pod-not-listed",   "pod-resources-api", "pod-lookup", "grant",
      "uid",   "cgroup-not-found", "controller",  "write",             "verify"};
  return (unsigned)r < FAIL_COUNT_ ? names[r] : "?";
}

enum fail_reason fail_reason_counted(enum fail_reason r) {
  return r > FAIL_NONE && r < FAIL_COUNT_ ? r : FAIL_WRITE;
}

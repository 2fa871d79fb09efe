// SPDX-License-Identifier: Apache-2.0
/* Why a pod's grant is not in place: the one list of reasons behind the
 * PreStart answer, the Events (IoqosEnforceFailed names the reason), the
 * log lines and ioqos_enforcement_errors_total{reason}. The pod table
 * (podtable.h) sets FAIL_GRANT..FAIL_VERIFY in its result; PreStart adds
 * the reasons found before a pod is known (FAIL_INVALID_IDS..FAIL_POD_LOOKUP).
 * The names are metric label values and Event text: keep them stable. */
#ifndef IOQOS_PLUGIN_FAILREASON_H
#define IOQOS_PLUGIN_FAILREASON_H

enum fail_reason {
  FAIL_NONE = 0,
  FAIL_INVALID_IDS, /* PreStart IDs fail validation */
  FAIL_NOT_LISTED,  /* no pod holds the IDs in the pod resources List */
  FAIL_PODRES,      /* pod resources API call failed */
  FAIL_POD_LOOKUP,  /* API server lookup of the pod failed */
  FAIL_GRANT,       /* the IDs do not make a valid grant (unknown disk, ...) */
  FAIL_UID,         /* the pod has no usable UID */
  FAIL_CGROUP,      /* pod cgroup not found */
  FAIL_CONTROLLER,  /* io controller not available for the pod cgroup */
  FAIL_WRITE,       /* the kernel refused a write */
  FAIL_VERIFY,      /* read-back differs */
  FAIL_COUNT_
};
#define FAIL_FIRST_ FAIL_INVALID_IDS /* the first reason that is a failure */

/* "none", "invalid-ids", "pod-not-listed", ...; "?" out of range. */
const char *fail_reason_name(enum fail_reason r);
/* The reason to count for a failed apply: r, or FAIL_WRITE when the
 * failure left none (out of memory and the like). */
enum fail_reason fail_reason_counted(enum fail_reason r);

#endif

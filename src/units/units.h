// SPDX-License-Identifier: Apache-2.0
/* The two ioqos resources, their unit sizes, Kubernetes quantity parsing and
 * the unit ID codec.
 *
 * A unit is one device-plugin "device". Its ID names the disk it belongs to,
 * so any set of IDs kubelet hands out maps back to per-disk grants without
 * extra state:  ID = DISK "-" RES "-" INDEX   e.g. "nvme0n1-bw-17", "dm-0-iops-3"
 * RES is "bw" or "iops"; INDEX is decimal without leading zeros; the whole ID
 * is at most 63 characters (device plugin limit). Parsing splits at the last
 * two dashes, so disk names that contain dashes (dm-0) round-trip.
 */
#ifndef IOQOS_UNITS_H
#define IOQOS_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

enum ioq_resource { IOQ_RES_BANDWIDTH = 0, IOQ_RES_IOPS = 1, IOQ_RES_COUNT = 2 };

#define IOQ_RESOURCE_BANDWIDTH "ioqos/bandwidth"
#define IOQ_RESOURCE_IOPS "ioqos/iops"
#define IOQ_UNIT_ID_MAX 63
#define IOQ_DISK_NAME_MAX 48 /* leaves room for "-iops-" + 8 digits within 63 */

/* Bounds on what is advertised, per resource. kubelet refuses gRPC messages
 * over 4 MiB, and every ListAndWatch message carries all units of the
 * resource. One Device encodes as at most IOQ_DEVICE_ENCODED_MAX bytes:
 * field tag + length (2), ID tag + length + <= 63 characters (65), health
 * tag + length + "Unhealthy" (11). 25000 units are then at most 1.95 MB, under
 * half the limit; the node total counts every disk. The index of a unit is
 * below 25000 (5 digits), so with a disk name of at most IOQ_DISK_NAME_MAX
 * characters an ID is at most 48 + 6 + 5 = 59 characters (asserted below). */
#define IOQ_MAX_UNITS_PER_NODE 25000u
#define IOQ_MAX_UNITS_PER_DISK IOQ_MAX_UNITS_PER_NODE
#define IOQ_DEVICE_ENCODED_MAX (2u + 2u + IOQ_UNIT_ID_MAX + 2u + 9u)
#define IOQ_GRPC_MESSAGE_MAX (4u << 20)
_Static_assert(IOQ_MAX_UNITS_PER_NODE * IOQ_DEVICE_ENCODED_MAX < IOQ_GRPC_MESSAGE_MAX / 2,
               "a full ListAndWatch message must stay under half of kubelet's limit");
_Static_assert(IOQ_DISK_NAME_MAX + sizeof "-iops-" - 1 + 5 <= IOQ_UNIT_ID_MAX &&
                   IOQ_MAX_UNITS_PER_DISK <= 100000u,
               "unit IDs must fit 63 characters");

#define IOQ_DEFAULT_UNIT_BW_BYTES (1024u * 1024u) /* 1 unit = 1 MiB/s */
#define IOQ_DEFAULT_UNIT_IOPS 100u                /* 1 unit = 100 IOPS */

/* "ioqos/bandwidth" / "ioqos/iops" */
const char *ioq_resource_name(enum ioq_resource r);
/* "bandwidth" / "iops" (for human messages) */
const char *ioq_resource_short(enum ioq_resource r);
/* Accepts the full resource name; returns -1 if it is not an ioqos resource. */
int ioq_resource_from_name(const char *name, enum ioq_resource *out);

/* Unit sizes: bytes/s per bandwidth unit, IOPS per iops unit. */
struct ioq_unit_sizes {
  uint64_t size[IOQ_RES_COUNT];
};
void ioq_unit_sizes_default(struct ioq_unit_sizes *u);

/* Parses a Kubernetes quantity that must be a whole number ("200", "2k",
 * "1Ki", "3M"; "1.5k" = 1500 is fine, "0.5" is not). Extended resources are
 * integers, so fractional results are rejected. */
IOQ_MUST_CHECK
int ioq_parse_quantity_int(const char *s, uint64_t *out, ioq_err *e);

/* True if `name` is a valid disk name for unit IDs: 1..IOQ_DISK_NAME_MAX chars
 * from [A-Za-z0-9._!+] and '-', and neither "." nor ".." (it is a path component). */
bool ioq_disk_name_valid(const char *name);

/* Formats a unit ID into out (size >= IOQ_UNIT_ID_MAX + 1). */
IOQ_MUST_CHECK
int ioq_unit_id_format(char *out, size_t outsz, const char *disk, enum ioq_resource r,
                       uint32_t index, ioq_err *e);

struct ioq_unit_id {
  char disk[IOQ_DISK_NAME_MAX + 1];
  enum ioq_resource res;
  uint32_t index;
};
/* Parses an ID; anything not produced by ioq_unit_id_format is rejected with
 * a message saying what is wrong (never guessed). */
IOQ_MUST_CHECK
int ioq_unit_id_parse(const char *id, struct ioq_unit_id *out, ioq_err *e);

/* Sets of unit IDs (a pod may hold tens of thousands): sorted in strcmp
 * order with qsort, looked up with bsearch, so matching two sets is
 * O(n log n), never a scan per ID. */
void ioq_ids_sort(const char **ids, size_t n);
/* Index of id in a sorted array, -1 if absent. */
long ioq_ids_find(const char *const *sorted, size_t n, const char *id);

#endif

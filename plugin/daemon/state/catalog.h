// SPDX-License-Identifier: Apache-2.0
/* The units this node advertises: per managed disk, how many bandwidth and
 * IOPS units exist and whether they are healthy. Thread-safe.
 *
 * Unit IDs are "DISK-bw-N" / "DISK-iops-N", N = 0 .. units-1 (units.h), so
 * the catalog stores counts, never ID lists. A disk that a later probe no
 * longer finds keeps its units (kubelet and running pods still hold those
 * IDs) but they turn Unhealthy; every change of a resource's list bumps that
 * resource's generation, which the ListAndWatch streams follow. */
#ifndef IOQOS_PLUGIN_CATALOG_H
#define IOQOS_PLUGIN_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe/disk.h"
#include "base/error.h"
#include "units/iolimit.h"
#include "units/units.h"

struct cat_disk {
  struct ioq_disk disk;        /* the last probe's facts (name, devices, caps, capacity) */
  struct ioq_devno dev;        /* throttled device */
  uint64_t units[IOQ_RES_COUNT];
  bool healthy;
  char why[320];               /* reason when unhealthy */
};

struct catalog;

struct catalog *catalog_new(void);
void catalog_free(struct catalog *c);

/* Takes a fresh probe of `n` disks. Units of a disk that is not enforceable,
 * or has a fault (a broken capacity source), are listed Unhealthy with the
 * probe's reason. Disks missing from the probe
 * stay, Unhealthy with the reason of their selector's fault when
 * catalog_set_faults was given one (call it first), else `missing_reason`
 * (NULL: "not found by the last probe").
 * Returns true if any list changed. */
bool catalog_update(struct catalog *c, const struct ioq_disk *disks, size_t n,
                    const char *missing_reason);

/* Drops a disk and its units from the lists, as if it had never been
 * probed (the config in force no longer selects it and no pod holds its
 * units). Returns false for an unknown name. */
bool catalog_forget(struct catalog *c, const char *name);

/* The selector fault, among f[0..n), of a disk a probe lost: the one whose
 * selector had selected it (the default disk has the only selector). NULL:
 * none, so the config no longer selects the disk. */
const struct ioq_select_fault *catalog_fault_of(const struct ioq_select_fault *f, size_t n,
                                                const struct ioq_disk *d);

/* Marks one disk unhealthy (healthy=false) or healthy again; no-op for
 * unknown names. Returns true if something changed. */
bool catalog_set_health(struct catalog *c, const char *disk, bool healthy, const char *why);

/* The configured selectors the last probe could not turn into a disk
 * (probe.h). set: replaces them, true if they changed; get: a malloc'd copy
 * (caller frees), count returned. */
bool catalog_set_faults(struct catalog *c, const struct ioq_select_fault *f, size_t n);
size_t catalog_faults(struct catalog *c, struct ioq_select_fault **out);

uint64_t catalog_generation(struct catalog *c, enum ioq_resource r);
/* Units of r on all disks, and on healthy disks only. */
void catalog_totals(struct catalog *c, enum ioq_resource r, uint64_t *all, uint64_t *healthy);

/* A copy of every disk (malloc'd array, caller frees). */
size_t catalog_snapshot(struct catalog *c, struct cat_disk **out);
/* Copy of one disk; false if unknown. */
bool catalog_get(struct catalog *c, const char *name, struct cat_disk *out);
/* The healthy disks' probe facts (malloc'd in *out, NULL on OOM; the DRA
 * slice offers these, and a claim may name only these). Returns how many. */
size_t catalog_healthy_disks(struct catalog *c, struct ioq_disk **out);

/* The ListAndWatchResponse for r, packed (malloc'd copy), and the generation
 * it reflects. -1 only on OOM. */
int catalog_list_packed(struct catalog *c, enum ioq_resource r, uint8_t **data, size_t *len,
                        uint64_t *gen);

/* Per-disk count of a validated ID set. */
struct id_tally_entry {
  char disk[IOQ_DISK_NAME_MAX + 1];
  struct ioq_devno dev;
  uint64_t count;
  bool healthy;
};
struct id_tally {
  struct id_tally_entry *d;
  size_t n;
};
void id_tally_free(struct id_tally *t);

/* Validates a set of IDs of resource r against the catalog: non-empty, no
 * more than exist, each well-formed (<= 63 chars), of resource r, on a
 * managed disk, within that disk's units, no duplicates. On success fills
 * *out (sorted by disk name). Errors (IOQ_EINVAL_INPUT) name the first
 * offending ID and what is wrong with it. */
int catalog_check_ids(struct catalog *c, enum ioq_resource r, char *const *ids, size_t n,
                      struct id_tally *out, ioq_err *e);

#endif

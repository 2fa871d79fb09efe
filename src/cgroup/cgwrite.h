// SPDX-License-Identifier: Apache-2.0
/* The cgroup writer, the one enforcement writer: puts a disk's limits and
 * weights into a cgroup and proves the kernel holds them. Also the cgroup's
 * I/O statistics and pressure (cgstat.c), its memory as the I/O side needs
 * it: page cache and memory.high (cgmemory.c), and the controllers along its
 * path (cgcontrollers.c).
 *
 * Implemented in layers (docs/architecture.md, "The cgroup writer"):
 * cgwrite.c dispatches by version to the operations tables of cgwrite_v1.c
 * and cgwrite_v2.c, which build on cgweight.c and cgfile.c.
 *
 * cgroup v2: io.max, io.weight (per-device "MAJ:MIN W"; where the kernel
 *            rejects that form, e.g. iocost never enabled on the disk, the
 *            cgroup-wide "default W" with the reason recorded),
 *            io.bfq.weight when the disk runs BFQ.
 * cgroup v1: blkio.throttle.{read,write}_{bps,iops}_device,
 *            blkio.bfq.weight_device (fallback blkio.bfq.weight) when the
 *            disk runs BFQ. v1 has no io.weight: a weight is reported as
 *            not applicable, not written.
 *
 * Every write is read back and compared parsed; a difference is an
 * IOQ_EMISMATCH error naming the file, what was written and what was read.
 * A value already in place is not written again. Limits go to whole disks
 * only: a partition is refused before the kernel sees it (it would say
 * ENODEV). Clearing restores "max" / no limit and the default weight for that
 * one disk.
 */
#ifndef IOQOS_CGWRITE_H
#define IOQOS_CGWRITE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup/cglayout.h"
#include "base/error.h"
#include "disk/blockdev.h"
#include "units/iolimit.h"

/* A cgroup directory and the hierarchy version it belongs to. */
struct ioq_cg {
  char dir[PATH_MAX];
  enum ioq_cg_version version;
};

/* Opens a cgroup directory; version NONE detects it from the files present
 * (io.max / cgroup.controllers = v2, blkio.throttle.* = v1) and explains what
 * is missing when neither fits. */
IOQ_MUST_CHECK
int ioq_cg_open(const char *dir, enum ioq_cg_version version, struct ioq_cg *out, ioq_err *e);

/* What a cgroup should hold on one disk. */
struct ioq_disk_setting {
  struct ioq_devno dev;
  struct ioq_io_limits max; /* 0 = no limit */
  unsigned weight;          /* io.weight 1..10000 (v2 only); 0 = leave as is */
  unsigned bfq_weight;      /* 1..1000 when the disk runs BFQ; 0 = leave as is */
  bool weights_only;        /* leave the limits as they are (node policy on QoS cgroups) */
};

struct ioq_apply_opts {
  const char *sysfs_root; /* whole-disk check and scheduler; NULL = "/sys" */
  bool dry_run;           /* read and compare, write nothing (steps say "would write") */
  bool reset_default_weight; /* clear: also restore the cgroup-wide default weights to 100 */
};

#define IOQ_APPLY_MAX_STEPS 10
struct ioq_apply_step {
  char file[40];       /* "io.max", "blkio.throttle.read_bps_device", ... */
  char before[160];    /* the device's value before ("" = none / defaults) */
  char written[160];   /* what was (or in a dry run would be) written; "" = nothing */
  char readback[160];  /* the device's value read back after the write */
  bool changed;        /* a write happened (or would, in a dry run) */
  char note[320];      /* why something was skipped or a fallback form used */
};
struct ioq_apply_report {
  struct ioq_apply_step steps[IOQ_APPLY_MAX_STEPS];
  size_t n;
  char disk[64]; /* kernel name of the disk, e.g. "sdb" */
};

/* Puts the setting in place. The report (may be NULL) lists each file. */
IOQ_MUST_CHECK
int ioq_cg_apply_disk(const struct ioq_cg *cg, const struct ioq_disk_setting *s,
                      const struct ioq_apply_opts *o, struct ioq_apply_report *rep, ioq_err *e);

/* Removes this cgroup's limits and device weights for one disk. */
IOQ_MUST_CHECK
int ioq_cg_clear_disk(const struct ioq_cg *cg, struct ioq_devno dev, const struct ioq_apply_opts *o,
                      struct ioq_apply_report *rep, ioq_err *e);

/* What is in place for one disk (weights: the device's own value, else the
 * default; 0 when the file does not exist). */
struct ioq_disk_state_cg {
  struct ioq_io_limits max;
  struct ioq_weights weight;     /* io.weight (v2) */
  struct ioq_weights bfq_weight; /* io.bfq.weight / blkio.bfq.weight(_device) */
  bool has_weight_file, has_bfq_file;
};
IOQ_MUST_CHECK
int ioq_cg_read_disk(const struct ioq_cg *cg, struct ioq_devno dev, struct ioq_disk_state_cg *out,
                     ioq_err *e);

/* (whole-disk check and scheduler lookup: ioq_blockdev_whole and
 * ioq_blockdev_scheduler in blockdev.h) */

/* ---- controllers along the path (cgroup v2) ----------------------------- */

enum { IOQ_CTRL_IO = 1u << 0, IOQ_CTRL_MEMORY = 1u << 1 };

/* Makes sure the controllers in `mask` are enabled in cgroup.subtree_control
 * of every ancestor of `dir` from `root` (the v2 mount) down to dir's parent,
 * so dir has io.max (io) and buffered writeback is charged to it (memory).
 * With enable=false it only checks. Fails naming the first ancestor where a
 * controller is missing and cannot be enabled, and why (not offered by the
 * parent, the kernel refused: EBUSY when that cgroup holds processes itself,
 * EROFS, ...). `enabled` (may be NULL) gets the number of writes made. */
IOQ_MUST_CHECK
int ioq_cg_ensure_controllers(const char *root, const char *dir, unsigned mask, bool enable,
                              unsigned *enabled, ioq_err *e);

/* ---- statistics --------------------------------------------------------- */

struct ioq_iostat {
  struct ioq_devno dev;
  uint64_t rbytes, wbytes, rios, wios, dbytes, dios;
};
/* v2 io.stat, or v1 blkio.throttle.io_service_bytes_recursive +
 * io_serviced_recursive (pod cgroups hold their I/O in child cgroups). */
IOQ_MUST_CHECK
int ioq_cg_read_iostat(const struct ioq_cg *cg, struct ioq_iostat *out, size_t max, size_t *n,
                       ioq_err *e);
/* io.stat content parser (unknown keys ignored). */
IOQ_MUST_CHECK
int ioq_iostat_parse_v2(const char *content, struct ioq_iostat *out, size_t max, size_t *n,
                        ioq_err *e);

struct ioq_pressure_line {
  double avg10, avg60, avg300;
  uint64_t total_us;
};
struct ioq_pressure {
  struct ioq_pressure_line some, full;
  bool has_full;
};
/* io.pressure (v2, PSI). IOQ_EUNSUPPORTED on v1 or without PSI. */
IOQ_MUST_CHECK
int ioq_cg_read_pressure(const struct ioq_cg *cg, struct ioq_pressure *out, ioq_err *e);
IOQ_MUST_CHECK
int ioq_pressure_parse(const char *content, struct ioq_pressure *out, ioq_err *e);

/* ---- memory (v2; cgmemory.c) -------------------------------------------- */

/* memory.stat, the lines the I/O side reads (bytes); `have` says which were
 * present (IOQ_MEMSTAT_* bits). */
enum {
  IOQ_MEMSTAT_ANON = 1u << 0,
  IOQ_MEMSTAT_FILE = 1u << 1,
  IOQ_MEMSTAT_ACTIVE_FILE = 1u << 2,
  IOQ_MEMSTAT_INACTIVE_FILE = 1u << 3,
  IOQ_MEMSTAT_DIRTY = 1u << 4,
  IOQ_MEMSTAT_WRITEBACK = 1u << 5,
  IOQ_MEMSTAT_SHMEM = 1u << 6,
};
struct ioq_memstat {
  uint64_t anon, file, active_file, inactive_file, file_dirty, file_writeback, shmem;
  unsigned have;
};
/* The parser: fails naming the first line of `need` that is missing. A key
 * without its value on the same line is not read from the next one. */
IOQ_MUST_CHECK
int ioq_memstat_parse(const char *content, unsigned need, struct ioq_memstat *out, ioq_err *e);

/* A cgroup's page cache waiting for the disk (memory.stat file_dirty +
 * file_writeback, bytes): what a buffered writer has queued that io.stat does
 * not show yet. IOQ_EUNSUPPORTED on v1 or where the memory controller is not
 * enabled for the cgroup (no memory.stat). */
IOQ_MUST_CHECK
int ioq_cg_read_dirty(const struct ioq_cg *cg, uint64_t *dirty, uint64_t *writeback, ioq_err *e);

#define IOQ_MEMORY_MAX UINT64_MAX /* "max" in memory.high / memory.max */
struct ioq_cg_memory {
  uint64_t current;    /* memory.current */
  uint64_t high, max;  /* memory.high, memory.max; IOQ_MEMORY_MAX = "max" */
  struct ioq_memstat stat;
};
/* memory.current, memory.high, memory.max and memory.stat (its file LRU
 * lines and dirty / writeback must be there). IOQ_EUNSUPPORTED as above. */
IOQ_MUST_CHECK
int ioq_cg_read_memory(const struct ioq_cg *cg, struct ioq_cg_memory *out, ioq_err *e);
/* "max" or a byte count, trailing newline allowed: 0, else -1. */
int ioq_memory_value_parse(const char *s, uint64_t *out);
/* What reclaim of clean page cache cannot free: memory.current minus the
 * file LRU (anonymous memory, tmpfs and shared memory, kernel memory). */
uint64_t ioq_memory_pinned(const struct ioq_cg_memory *m);
/* Writes memory.high (IOQ_MEMORY_MAX = "max"; else rounded down to whole
 * pages, at least one, as the kernel keeps it), reads it back and compares:
 * IOQ_EMISMATCH when the kernel holds something else. `readback` (may be
 * NULL) gets what was read. Lowering it below memory.current makes the
 * kernel reclaim the difference in the writing thread before the write
 * returns. */
IOQ_MUST_CHECK
int ioq_cg_write_memory_high(const struct ioq_cg *cg, uint64_t bytes, uint64_t *readback, ioq_err *e);

#endif

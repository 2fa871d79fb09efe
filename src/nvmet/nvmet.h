// SPDX-License-Identifier: Apache-2.0
/* What the kernel NVMe-oF target (nvmet) exports on this node, read from
 * its configfs tree (<sysfs>/kernel/config/nvmet), and whether the kernel
 * can charge a namespace's I/O to a cgroup (the per-namespace attribute
 * cgroup_id, Linux 7.5+; docs/operations.md, "Storage nodes").
 *
 * nvmet issues every initiator's I/O from kernel threads, so a pod's
 * io.max never applies to it; with cgroup_id the namespace's I/O is charged
 * to the cgroup with that ID. A cgroup's ID is its directory's inode number
 * on cgroup2 (kernfs node id), which ioq_cgroup_id() reads.
 *
 * The probe only reads; ioq_nvmet_set_cgroup_id and ioq_nvmet_set_enable
 * are the two writes (nvmetns.c in the plugin decides when). Bounded: at most
 * IOQ_NVMET_MAX_NS namespaces are listed (more is an error, never a
 * silent cut). */
#ifndef IOQOS_NVMET_H
#define IOQOS_NVMET_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h" /* IOQ_NVMET_NQN_MAX, ioq_nvmet_nqn_problem */
#include "probe/disk.h"
#include "base/error.h"

#define IOQ_NVMET_MAX_NS 1024

enum ioq_nvmet_state {
  IOQ_NVMET_NO_MODULE,   /* the nvmet module is not loaded */
  IOQ_NVMET_NO_CONFIGFS, /* loaded, but its configfs tree is not there */
  IOQ_NVMET_PRESENT,
};

enum ioq_nvmet_cgid {
  IOQ_NVMET_CGID_UNKNOWN, /* no namespace to look at */
  IOQ_NVMET_CGID_ABSENT,  /* namespaces without the attribute: the kernel lacks it */
  IOQ_NVMET_CGID_PRESENT,
};

struct ioq_nvmet_ns {
  char subsystem[IOQ_NVMET_NQN_MAX + 1];
  uint32_t nsid;
  char device_path[PATH_MAX]; /* "" when none is set */
  bool enabled;
  int buffered_io; /* 1 or 0; -1 when the kernel has no such attribute */
  bool has_cgroup_id;
  uint64_t cgroup_id; /* when has_cgroup_id: 0 = none set */
  /* the block device the namespace's I/O lands on, when device_path
   * resolves to one (a block device, or a file on a block filesystem) */
  bool backed;
  struct ioq_blockdev disk; /* the whole disk (a partition's parent) */
  char backing[320];        /* how it resolved, or why not */
};

struct ioq_nvmet_inventory {
  enum ioq_nvmet_state state;
  enum ioq_nvmet_cgid cgroup_id;
  char reason[320]; /* the state and the cgroup_id verdict, in words */
  size_t n_subsystems;
  struct ioq_nvmet_ns *ns; /* sorted by subsystem, then nsid */
  size_t n;
};

/* Reads <roots->sysfs>/module/nvmet and <roots->sysfs>/kernel/config/nvmet.
 * Namespaces whose attributes cannot be read are errors (with the path);
 * a missing module or configfs tree is a state, not an error. */
IOQ_MUST_CHECK
int ioq_nvmet_probe(const struct ioq_roots *roots, struct ioq_nvmet_inventory *out, ioq_err *e);
void ioq_nvmet_free(struct ioq_nvmet_inventory *inv);

const char *ioq_nvmet_state_name(enum ioq_nvmet_state s); /* "no-module", ... */
const char *ioq_nvmet_cgid_name(enum ioq_nvmet_cgid c);   /* "unknown", "absent", "present" */

/* The inventory as JSON (`ioqosctl probe --json`, the node annotation):
 * {state, cgroupID, reason, subsystems, namespaces: [{subsystem, nsid,
 * enabled, bufferedIO (absent when the kernel has none), devicePath,
 * disk (when backed), backing, cgroupID (when the kernel has it)}]}.
 * NULL on OOM. */
json_object *ioq_nvmet_json(const struct ioq_nvmet_inventory *inv);

/* <sysfs>/kernel/config/nvmet/subsystems/SUBSYSTEM/namespaces/NSID */
IOQ_MUST_CHECK
int ioq_nvmet_ns_dir(const struct ioq_roots *roots, const char *subsystem, uint32_t nsid,
                     char *buf, size_t len, ioq_err *e);

/* Writes the namespace's cgroup_id (0 clears it) and reads it back. The
 * kernel changes it only while the namespace is disabled: an enabled one is
 * refused before writing, and the kernel's own EBUSY (enabled in between)
 * gives the same error, code EBUSY. */
IOQ_MUST_CHECK
int ioq_nvmet_set_cgroup_id(const struct ioq_roots *roots, const char *subsystem, uint32_t nsid,
                            uint64_t id, ioq_err *e);

/* Writes the namespace's enable (1/0) and reads it back. Enabling fails
 * with the kernel's error, e.g. when its cgroup_id names no cgroup the
 * writing task can see, or buffered_io is set with a cgroup_id. */
IOQ_MUST_CHECK
int ioq_nvmet_set_enable(const struct ioq_roots *roots, const char *subsystem, uint32_t nsid,
                         bool on, ioq_err *e);

/* The cgroup ID the kernel gives the cgroup2 directory `dir` (its inode). */
IOQ_MUST_CHECK
int ioq_cgroup_id(const char *dir, uint64_t *id, ioq_err *e);

#endif

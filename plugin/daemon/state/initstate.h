// SPDX-License-Identifier: Apache-2.0
/* The grants of regular init containers, saved across plugin restarts.
 *
 * kubelet never lists a regular init container's units (pod resources List
 * shows app containers and sidecars only); the plugin learns them from the
 * init container's PreStart alone. A restarted plugin that forgot them would
 * lower a running init container's io.max to the app containers' grant, and
 * never clear an init-only pod's limit. So the pod table saves, before
 * PreStart answers, every pod that holds such units: a JSON file (json-c)
 * written atomically (temp file, fsync, rename) under the state directory:
 *
 *   {"version": 1, "pods": [{"uid": "...", "namespace": "ns", "name": "p",
 *     "cgroup": "/sys/fs/cgroup/...", "cgroupVersion": 2,
 *     "grant": [{"disk": "sda", "dev": "8:0", "bandwidth": 300, "iops": 0}],
 *     "initUnits": {"ioqos/bandwidth": ["sda-bw-0", ...], "ioqos/iops": []},
 *     "initGuess": ["ioqos/bandwidth"], "initUnknown": false}]}
 *
 * initGuess: resources whose initUnits are a guess (an ambiguous PreStart,
 * prestart.c). initUnknown: the pod may hold an init container grant the
 * plugin lost (podtable.h); such a pod has no initUnits.
 *
 * Loading validates every field; a file that does not parse, has another
 * version or a bad field is refused as a whole (the caller logs it and
 * rebuilds from the pod status, see podtable.h). */
#ifndef IOQOS_PLUGIN_INITSTATE_H
#define IOQOS_PLUGIN_INITSTATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "cgroup/cglayout.h"
#include "base/error.h"
#include "grant/grant.h"
#include "units/iolimit.h"
#include "grant/podneed.h"
#include "units/units.h"

#define INITSTATE_VERSION 1
#define INITSTATE_FILE "init-grants.json"
/* bound on the file read and parsed: 100 k unit IDs take ~3 MB */
#define INITSTATE_MAX_BYTES (16u << 20)

struct init_record {
  char ns[IOQ_POD_NAMESPACE_MAX + 1];
  char name[IOQ_POD_NAME_MAX + 1];
  char uid[IOQ_POD_UID_MAX + 1];
  char cgroup[PATH_MAX];
  enum ioq_cg_version version;
  struct ioq_pod_grant grant;               /* what the cgroup holds */
  struct ioq_devno devs[IOQ_POD_DISKS_MAX]; /* device of each grant disk */
  char **ids[IOQ_RES_COUNT];                /* the init container's unit IDs */
  size_t n_ids[IOQ_RES_COUNT];
  bool guess[IOQ_RES_COUNT];
  bool init_unknown;
};

/* The file's text (malloc'd), NULL when out of memory; the caller writes
 * it with ioq_write_file_atomic (temp file, fsync, rename). */
char *initstate_format(const struct init_record *r, size_t n);
/* Parses and validates the text; *out is malloc'd (free with
 * initstate_free). */
int initstate_parse(const char *text, size_t len, struct init_record **out, size_t *n, ioq_err *e);
/* Reads path; a missing file fails with e->code ENOENT. */
int initstate_load(const char *path, struct init_record **out, size_t *n, ioq_err *e);
void initstate_free(struct init_record *r, size_t n);

#endif

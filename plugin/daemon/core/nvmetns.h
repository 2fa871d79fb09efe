// SPDX-License-Identifier: Apache-2.0
/* NVMe-oF target namespaces as QoS consumers (config nvmet; the rule is
 * nvmet/nvmetplan.h, the kernel facts docs/operations.md "Storage nodes").
 *
 * On every disk probe (start and each reconcile pass) it reads the nvmet
 * configfs tree, takes the configured namespaces' units from the probed
 * disks before they are advertised, and for each reserved namespace:
 *   1. makes its cgroup <cgroup2 root>/<nvmet.parent>/<NQN>-<NSID>, with
 *      io enabled down to it;
 *   2. writes io.max and io.weight there for the namespace's disk (the one
 *      cgroup writer, read back);
 *   3. points the namespace's cgroup_id at that cgroup: at once while the
 *      namespace is disabled; an enabled one only with
 *      nvmet.allowNamespaceRestart (disable, write, enable: initiators see
 *      the namespace go away), else it reports "will apply at next enable"
 *      and does it when a later pass sees the namespace disabled. A cgroup
 *      removed or made again has a new ID: the namespace is pointed at it
 *      the same way.
 * Cgroups below the parent that no reserved namespace wants any more lose
 * their limits; they are removed (and a disabled namespace's cgroup_id
 * cleared first, so it can be enabled again) once no enabled namespace is
 * charged to them. The same for every cgroup below a parent of an earlier
 * config (nvmetparents.h), except that a namespace still reserved keeps its
 * old cgroup, bounded by its grant, until it is charged to its new one; the
 * old parent is removed once empty.
 *
 * Failures are logged once per distinct message and counted, never fatal.
 * Called by the reconcile thread only (and at startup before it runs). */
#ifndef IOQOS_PLUGIN_NVMETNS_H
#define IOQOS_PLUGIN_NVMETNS_H

#include <json-c/json.h>

#include "probe/probe.h"

struct plugin;
struct nvmetns;

struct nvmetns *nvmetns_new(void);
void nvmetns_free(struct nvmetns *n);

/* The step described above, on the fresh probe `inv` (its disks' units are
 * changed). */
void nvmetns_refresh(struct plugin *p, struct ioq_inventory *inv);

/* What the last refresh saw, for the node annotation: the probe
 * (ioq_nvmet_json) with each configured namespace's verdict, cgroup, units
 * and state; NULL when the nvmet module is not loaded and nothing is
 * configured. A new reference. */
json_object *nvmetns_state(struct plugin *p);


#endif

// SPDX-License-Identifier: Apache-2.0
/* Kernel capability probe and inventory assembly. */
#include "probe/probe.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/capacity.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "cgroup/caps.h"

void ioq_probe_opts_default(struct ioq_probe_opts *o) {
  memset(o, 0, sizeof *o);
  ioq_roots_default(&o->roots);
}

static int cap_index(unsigned bit) {
  for (int i = 0; i < 8; i++)
    if (bit == (1u << i))
      return i;
  return 0;
}

static void missing(struct ioq_disk *d, unsigned bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void missing(struct ioq_disk *d, unsigned bit, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->cap_reasons[cap_index(bit)], sizeof d->cap_reasons[0], fmt, ap);
  va_end(ap);
  d->caps &= ~bit;
}

static void have(struct ioq_disk *d, unsigned bit) {
  d->caps |= bit;
  d->cap_reasons[cap_index(bit)][0] = '\0';
}

static void note(struct ioq_inventory *inv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct ioq_inventory *inv, const char *fmt, ...) {
  if (inv->n_notes >= sizeof inv->node_notes / sizeof inv->node_notes[0])
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(inv->node_notes[inv->n_notes++], sizeof inv->node_notes[0], fmt, ap);
  va_end(ap);
}

/* true if the whitespace-separated list in file contains word */
static bool file_has_word(const char *dir, const char *file, const char *word) {
  char p[PATH_MAX], *data;
  if (ioq_path_join(p, sizeof p, NULL, dir, file, NULL) < 0 ||
      ioq_read_file(p, &data, NULL, 0, NULL) < 0)
    return false;
  bool found = false;
  char *save;
  for (char *t = strtok_r(data, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
    if (strcmp(t, word) == 0)
      found = true;
  free(data);
  return found;
}

static bool has_file(const char *dir, const char *file) {
  char p[PATH_MAX];
  return ioq_path_join(p, sizeof p, NULL, dir, file, NULL) == 0 && ioq_path_exists(p);
}

/* The cgroup whose interface files show what pods get: kubepods if it
 * exists, else any child of the io root where `marker` exists. */
static bool reference_cgroup(const struct ioq_probe_opts *o, const struct ioq_cg_layout *l,
                             const char *marker, char *out) {
  if (o->kubepods_dir)
    return ioq_copy(out, PATH_MAX, o->kubepods_dir) && ioq_is_dir(out);
  static const char *const names[] = {"kubepods.slice", "kubepods"};
  for (int i = 0; i < 2; i++)
    if (ioq_path_join(out, PATH_MAX, NULL, l->io_root, names[i], NULL) == 0 && ioq_is_dir(out))
      return true;
  DIR *d = opendir(l->io_root);
  if (!d)
    return false;
  struct dirent *de;
  bool found = false;
  while (!found && (de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    if (ioq_path_join(out, PATH_MAX, NULL, l->io_root, de->d_name, NULL) == 0 && ioq_is_dir(out) &&
        has_file(out, marker))
      found = true;
  }
  closedir(d);
  return found;
}

/* io.cost.qos line "MAJ:MIN enable=1 ..." for the disk */
static bool iocost_enabled(const char *root, unsigned maj, unsigned min) {
  char p[PATH_MAX], *data, want[40];
  if (ioq_path_join(p, sizeof p, NULL, root, "io.cost.qos", NULL) < 0 ||
      ioq_read_file(p, &data, NULL, 0, NULL) < 0)
    return false;
  snprintf(want, sizeof want, "%u:%u ", maj, min);
  bool on = false;
  char *save;
  for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    if (strncmp(line, want, strlen(want)) == 0 && strstr(line, " enable=1"))
      on = true;
  free(data);
  return on;
}

static bool leaves_all(const struct ioq_disk *d, const char *scheduler) {
  for (size_t i = 0; i < d->n_leaves; i++)
    if (strcmp(d->leaves[i].scheduler, scheduler) != 0)
      return false;
  return d->n_leaves > 0;
}

static void probe_v2(const struct ioq_probe_opts *o, struct ioq_inventory *inv) {
  const struct ioq_cg_layout *l = &inv->layout;
  char ref[PATH_MAX];
  bool io_avail = file_has_word(l->io_root, "cgroup.controllers", "io");
  bool io_root_on = file_has_word(l->io_root, "cgroup.subtree_control", "io");
  bool mem_root_on = file_has_word(l->io_root, "cgroup.subtree_control", "memory");
  bool have_ref = reference_cgroup(o, l, "io.max", ref);
  bool ref_io = have_ref && file_has_word(ref, "cgroup.subtree_control", "io");
  bool ref_mem = have_ref && file_has_word(ref, "cgroup.subtree_control", "memory");

  if (!io_avail)
    note(inv, "the io controller is not available in %s/cgroup.controllers (kernel without "
              "CONFIG_BLK_CGROUP, or io bound to a v1 hierarchy)", l->io_root);
  else if (!io_root_on)
    note(inv, "io is not enabled in %s/cgroup.subtree_control; the plugin enables it at start "
              "(enforcement.enableControllers)", l->io_root);
  if (have_ref && !ref_io)
    note(inv, "io is not enabled in %s/cgroup.subtree_control, so pod cgroups below it have no "
              "io files yet; the plugin enables it", ref);
  if (!have_ref)
    note(inv, "no kubepods cgroup under %s (is kubelet running?): per-cgroup io files were judged "
              "from the root only", l->io_root);

  /* buffered writes reach the disk from writeback, which is charged to the
   * pod only when both memory and io are enabled on the way down (v2) */
  bool buffered = io_avail && file_has_word(l->io_root, "cgroup.controllers", "memory") &&
                  (!have_ref || (ref_io && ref_mem)) && io_root_on && mem_root_on;
  if (buffered)
    inv->node_caps |= IOQ_CAP_BUFFERED_WRITES;

  for (size_t i = 0; i < inv->n; i++) {
    struct ioq_disk *d = &inv->disks[i];
    const char *dn = d->dev.name;
    /* io.max (blk-throttle) */
    if (!io_avail)
      missing(d, IOQ_CAP_IO_MAX, "io controller not available in %s", l->io_root);
    else if (have_ref && ref_io && !has_file(ref, "io.max"))
      missing(d, IOQ_CAP_IO_MAX, "%s/io.max missing: kernel without CONFIG_BLK_DEV_THROTTLING",
              ref);
    else
      have(d, IOQ_CAP_IO_MAX);

    /* io.weight (iocost): the file exists when iocost is built; weights only
     * act on disks where io.cost.qos has enable=1 */
    bool iocost_built = has_file(l->io_root, "io.cost.qos");
    bool all_on = d->n_leaves > 0;
    char off[128] = "";
    for (size_t k = 0; k < d->n_leaves; k++)
      if (!iocost_enabled(l->io_root, d->leaves[k].major, d->leaves[k].minor)) {
        all_on = false;
        size_t n = strlen(off);
        snprintf(off + n, sizeof off - n, "%s%s", n ? "," : "", d->leaves[k].name);
      }
    if (!io_avail)
      missing(d, IOQ_CAP_IO_WEIGHT, "io controller not available");
    else if (!iocost_built)
      missing(d, IOQ_CAP_IO_WEIGHT,
              "%s/io.cost.qos missing: kernel without CONFIG_BLK_CGROUP_IOCOST", l->io_root);
    else if (!all_on)
      missing(d, IOQ_CAP_IO_WEIGHT, "iocost not enabled on %s (no enable=1 line in io.cost.qos; "
              "nodePolicy.iocost.enable turns it on), io.weight has no effect", off);
    else
      have(d, IOQ_CAP_IO_WEIGHT);

    /* BFQ */
    if (!leaves_all(d, "bfq"))
      missing(d, IOQ_CAP_IO_BFQ_WEIGHT, "scheduler of %s is not bfq (%s)",
              d->n_leaves ? d->leaves[0].name : dn, d->n_leaves ? d->leaves[0].scheduler : "?");
    else if (have_ref && ref_io && !has_file(ref, "io.bfq.weight"))
      missing(d, IOQ_CAP_IO_BFQ_WEIGHT,
              "%s/io.bfq.weight missing: BFQ without CONFIG_BFQ_GROUP_IOSCHED", ref);
    else
      have(d, IOQ_CAP_IO_BFQ_WEIGHT);

    /* io.latency */
    if (have_ref && ref_io && has_file(ref, "io.latency"))
      have(d, IOQ_CAP_IO_LATENCY);
    else
      missing(d, IOQ_CAP_IO_LATENCY, have_ref && ref_io
                  ? "io.latency missing: kernel without CONFIG_BLK_CGROUP_IOLATENCY"
                  : "io.latency not verifiable: no cgroup with io enabled below the root");

    missing(d, IOQ_CAP_BLKIO_THROTTLE, "cgroup v2 node: blkio (v1) not used");
    missing(d, IOQ_CAP_BLKIO_BFQ_WEIGHT, "cgroup v2 node: blkio (v1) not used");
    if (buffered)
      have(d, IOQ_CAP_BUFFERED_WRITES);
    else
      missing(d, IOQ_CAP_BUFFERED_WRITES, "memory and io are not both enabled down to kubepods: "
              "buffered writes bypass io.max (writeback is charged to the root)");

    d->enforceable = (d->caps & IOQ_CAP_IO_MAX) != 0;
    if (!d->enforceable) /* a message: cut if it must be */
      ioq_copy_trunc(d->not_enforceable_reason, sizeof d->not_enforceable_reason,
               d->cap_reasons[cap_index(IOQ_CAP_IO_MAX)]);
  }
}

static void probe_v1(const struct ioq_probe_opts *o, struct ioq_inventory *inv) {
  const struct ioq_cg_layout *l = &inv->layout;
  bool throttle = has_file(l->io_root, "blkio.throttle.read_bps_device") &&
                  has_file(l->io_root, "blkio.throttle.write_bps_device");
  /* the kernel creates blkio.bfq.weight in child cgroups only
   * (CFTYPE_NOT_ON_ROOT): look where pods live; with no child cgroup at all
   * it cannot be verified, and a bfq scheduler is taken at its word */
  char ref[PATH_MAX];
  bool have_ref = reference_cgroup(o, l, "blkio.throttle.read_bps_device", ref);
  bool bfqw = !have_ref || has_file(ref, "blkio.bfq.weight");
  for (size_t i = 0; i < inv->n; i++) {
    struct ioq_disk *d = &inv->disks[i];
    if (throttle)
      have(d, IOQ_CAP_BLKIO_THROTTLE);
    else
      missing(d, IOQ_CAP_BLKIO_THROTTLE, "%s/blkio.throttle.*_device missing: kernel without "
              "CONFIG_BLK_DEV_THROTTLING", l->io_root);
    if (!leaves_all(d, "bfq"))
      missing(d, IOQ_CAP_BLKIO_BFQ_WEIGHT, "scheduler of %s is not bfq (%s)",
              d->n_leaves ? d->leaves[0].name : d->dev.name,
              d->n_leaves ? d->leaves[0].scheduler : "?");
    else if (!bfqw)
      missing(d, IOQ_CAP_BLKIO_BFQ_WEIGHT,
              "%s/blkio.bfq.weight missing (BFQ without group scheduling)", ref);
    else
      have(d, IOQ_CAP_BLKIO_BFQ_WEIGHT);
    const char *v1 = "cgroup v1 node: the v2 io interface is not used";
    missing(d, IOQ_CAP_IO_MAX, "%s", v1);
    missing(d, IOQ_CAP_IO_WEIGHT, "%s", v1);
    missing(d, IOQ_CAP_IO_BFQ_WEIGHT, "%s", v1);
    missing(d, IOQ_CAP_IO_LATENCY, "%s", v1);
    missing(d, IOQ_CAP_BUFFERED_WRITES, "cgroup v1 does not charge writeback to the pod: limits "
            "apply to direct I/O only, buffered writes are not throttled");
    d->enforceable = throttle;
    if (!throttle) /* a message: cut if it must be */
      ioq_copy_trunc(d->not_enforceable_reason, sizeof d->not_enforceable_reason,
               d->cap_reasons[cap_index(IOQ_CAP_BLKIO_THROTTLE)]);
  }
}

int ioq_probe_capabilities(const struct ioq_probe_opts *o, struct ioq_inventory *inv, ioq_err *e) {
  (void)e;
  inv->node_caps = 0;
  if (inv->layout.io_version == IOQ_CGV2)
    probe_v2(o, inv);
  else if (inv->layout.io_version == IOQ_CGV1)
    probe_v1(o, inv);
  else
    return ioq_fail(e, IOQ_EUNSUPPORTED, "no cgroup io hierarchy");
  return 0;
}

void ioq_inventory_free(struct ioq_inventory *inv) {
  if (!inv)
    return;
  free(inv->disks);
  free(inv->faults);
  memset(inv, 0, sizeof *inv);
}

struct ioq_disk *ioq_inventory_find(struct ioq_inventory *inv, const char *name) {
  for (size_t i = 0; i < inv->n; i++)
    if (strcmp(inv->disks[i].dev.name, name) == 0)
      return &inv->disks[i];
  return NULL;
}

/* Records a selector that gave no disk (inv->faults has room for every
 * selector); the others are still probed. */
static void select_fault(struct ioq_inventory *inv, const char *sel, const ioq_err *e) {
  struct ioq_select_fault *f = &inv->faults[inv->n_faults++];
  /* both shown to the operator: cut if they must be */
  ioq_copy_trunc(f->select, sizeof f->select, sel);
  ioq_copy_trunc(f->reason, sizeof f->reason, e->msg);
}

int ioq_inventory_build(const struct ioq_config *cfg, const struct ioq_probe_opts *o,
                        struct ioq_inventory *inv, ioq_err *e) {
  memset(inv, 0, sizeof *inv);
  if (ioq_cg_layout_detect(o->roots.cgroupfs, &inv->layout, e) < 0)
    return -1;
  size_t n = cfg->n_devices ? cfg->n_devices : 1;
  inv->disks = calloc(n, sizeof *inv->disks);
  inv->faults = calloc(n, sizeof *inv->faults); /* at most one per selector */
  /* config index of each disk, for its capacity settings */
  size_t *cfg_idx = calloc(n, sizeof *cfg_idx);
  if (!inv->disks || !inv->faults || !cfg_idx) {
    free(cfg_idx);
    ioq_inventory_free(inv);
    return ioq_fail(e, ENOMEM, "out of memory for the inventory of %zu disk selectors", n);
  }
  /* Per-selector errors cost that selector only: one bad entry must not take
   * every disk of the node out of service (issue 12 item 9). */
  for (size_t i = 0; i < n; i++) {
    const struct ioq_device_config *dc = cfg->n_devices ? &cfg->devices[i] : NULL;
    struct ioq_disk *d = &inv->disks[inv->n];
    const char *sel = dc ? dc->select : cfg->kubelet_root;
    ioq_err de;
    if (ioq_disk_resolve(&o->roots, sel, d, &de) < 0) {
      if (dc)
        ioq_err_prefix(&de, "%s: devices[%zu].select '%s'", cfg->source, i, sel);
      else
        ioq_err_prefix(&de, "default disk (the one behind kubelet root directory %s)", sel);
      select_fault(inv, sel, &de);
      memset(d, 0, sizeof *d);
      continue;
    }
    if (!dc) {
      char by[sizeof d->selected_by];
      snprintf(by, sizeof by, "default: the disk behind the kubelet root directory %s", sel);
      ioq_copy_trunc(d->selected_by, sizeof d->selected_by, by); /* same size */
    }
    /* same bound: config validates class names to IOQ_CLASS_NAME_MAX */
    ioq_copy_trunc(d->class_name, sizeof d->class_name,
             dc && dc->class_name ? dc->class_name : IOQ_DEFAULT_CLASS);
    /* two selectors reaching one disk would double its units: the first keeps it */
    struct ioq_disk *dup = ioq_inventory_find(inv, d->dev.name);
    if (dup) {
      ioq_fail(&de, IOQ_EINVAL_INPUT,
               "%s: devices[%zu] '%s' resolves to %s, already selected by '%s'", cfg->source, i,
               sel, d->dev.name, dup->selected_by);
      select_fault(inv, sel, &de);
      memset(d, 0, sizeof *d);
      continue;
    }
    cfg_idx[inv->n++] = i;
  }
  if (ioq_probe_capabilities(o, inv, e) < 0) {
    free(cfg_idx);
    ioq_inventory_free(inv);
    return -1;
  }
  char cost_model[PATH_MAX] = "";
  uint64_t total[IOQ_RES_COUNT] = {0};
  /* a path too long for io.cost.model is read as no cost model (like cgroup v1) */
  if (inv->layout.io_version == IOQ_CGV2 &&
      ioq_path_join(cost_model, sizeof cost_model, NULL, inv->layout.io_root, "io.cost.model",
                    NULL) < 0)
    cost_model[0] = '\0';
  for (size_t i = 0; i < inv->n; i++) {
    const struct ioq_device_config *dc = cfg->n_devices ? &cfg->devices[cfg_idx[i]] : NULL;
    struct ioq_disk *d = &inv->disks[i];
    ioq_err de;
    if (ioq_capacity_resolve(cfg, dc, cost_model, d, &de) < 0) {
      /* a corrupt calibration entry or io.cost.model line: this disk only */
      ioq_err_prefix(&de, "capacity of %s", d->dev.name);
      ioq_copy_trunc(d->fault, sizeof d->fault, de.msg); /* a message */
      d->units[IOQ_RES_BANDWIDTH] = d->units[IOQ_RES_IOPS] = 0;
      snprintf(d->capacity_source, sizeof d->capacity_source,
               "none: the capacity source is broken (see fault)");
    }
    /* a disk that cannot be enforced advertises nothing */
    if (!d->enforceable)
      d->units[IOQ_RES_BANDWIDTH] = d->units[IOQ_RES_IOPS] = 0;
    /* the node's ListAndWatch message carries every disk (units.h): a disk
     * that does not fit any more is a fault of that disk */
    for (int r = 0; r < IOQ_RES_COUNT && !d->fault[0]; r++)
      if (d->units[r] > IOQ_MAX_UNITS_PER_NODE - total[r])
        snprintf(d->fault, sizeof d->fault,
                 "its %llu %s units do not fit: the disks before it advertise %llu, a node at "
                 "most %u (kubelet's 4 MiB gRPC message limit); raise the unit size",
                 (unsigned long long)d->units[r], ioq_resource_short(r),
                 (unsigned long long)total[r], IOQ_MAX_UNITS_PER_NODE);
    if (d->fault[0])
      d->units[IOQ_RES_BANDWIDTH] = d->units[IOQ_RES_IOPS] = 0;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      total[r] += d->units[r];
  }
  free(cfg_idx);
  return 0;
}

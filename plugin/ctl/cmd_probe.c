// SPDX-License-Identifier: Apache-2.0
/* ioqosctl probe: what ioqos would manage on this node and why. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config/config.h"
#include "grant/pace.h"
#include "grant/placement.h"
#include "nvmet/nvmet.h"
#include "nvmet/nvmetplan.h"
#include "probe/probe.h"
#include "grant/ungranted.h"
#include "probe_nvmet.h"
#include "util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ioqosctl probe [--json] [--config FILE] [--sysfs-root DIR] [--cgroupfs-root DIR]\n"
          "                      [--mountinfo FILE] [--dev-root DIR] [--kubepods-cgroup DIR]\n\n"
          "Reports every disk ioqos manages on this node: how it was resolved (mount point,\n"
          "partition -> disk, device-mapper/md stack), which device is throttled, kernel\n"
          "capabilities (and why any is missing), capacity and its source, and the units\n"
          "that would be advertised. Without --config: the disk behind /var/lib/kubelet.\n\n"
          "  --json                 machine-readable output\n"
          "  --config FILE          node config (JSON); default: built-in defaults\n"
          "  --sysfs-root DIR       default /sys\n"
          "  --cgroupfs-root DIR    where cgroupfs is mounted, default /sys/fs/cgroup (the\n"
          "                         former spelling --cgroup-root still works, deprecated)\n"
          "  --mountinfo FILE       default /proc/self/mountinfo\n"
          "  --dev-root DIR         default /dev\n"
          "  --kubepods-cgroup DIR  cgroup to judge per-cgroup io files by (default: kubepods[.slice])\n"
          "\nA configured disk with an error (selector that gives no disk, broken capacity\n"
          "source) is reported as such; the other disks are reported as usual.\n"
          "\nExit status: 0 probe done (see 'enforceable' per disk), 1 probe failed or a\n"
          "configured disk has an error (listed in the output), 2 usage error.\n");
}

/* capabilities that matter for the layout's cgroup version */
static const unsigned k_v2_caps[] = {IOQ_CAP_IO_MAX, IOQ_CAP_IO_WEIGHT, IOQ_CAP_IO_BFQ_WEIGHT,
                                     IOQ_CAP_IO_LATENCY, IOQ_CAP_BUFFERED_WRITES};
static const unsigned k_v1_caps[] = {IOQ_CAP_BLKIO_THROTTLE, IOQ_CAP_BLKIO_BFQ_WEIGHT,
                                     IOQ_CAP_BUFFERED_WRITES};

static int cap_pos(unsigned bit) {
  for (int i = 0; i < 8; i++)
    if (bit == (1u << i))
      return i;
  return 0;
}

static void relevant_caps(const struct ioq_inventory *inv, const unsigned **caps, size_t *n) {
  if (inv->layout.io_version == IOQ_CGV2) {
    *caps = k_v2_caps;
    *n = sizeof k_v2_caps / sizeof k_v2_caps[0];
  } else {
    *caps = k_v1_caps;
    *n = sizeof k_v1_caps / sizeof k_v1_caps[0];
  }
}

static void human_rate(char *out, size_t outsz, uint64_t bps) {
  snprintf(out, outsz, "%.1f MiB/s", (double)bps / (1024.0 * 1024.0));
}

/* The pool of pods without a grant once every advertised unit is held (the
 * smallest it gets; units nobody holds add to it). */
static void full_pool(const struct ioq_config *cfg, const struct ioq_disk *d, uint64_t pool[IOQ_RES_COUNT]) {
  ioq_ug_pool(d, &cfg->units, cfg->node_policy.ungranted_headroom_share, d->units, pool);
}

static void print_pool(const struct ioq_config *cfg, const struct ioq_disk *d) {
  if (!cfg->node_policy.ungranted_enable) {
    printf("  no grant:      not bounded (nodePolicy.ungranted.enable is false)\n");
    return;
  }
  uint64_t pool[IOQ_RES_COUNT];
  full_pool(cfg, d, pool);
  if (!pool[IOQ_RES_BANDWIDTH] && !pool[IOQ_RES_IOPS]) {
    printf("  no grant:      not bounded: no capacity known\n");
    return;
  }
  char bw[32], iops[48];
  human_rate(bw, sizeof bw, pool[IOQ_RES_BANDWIDTH]);
  if (pool[IOQ_RES_IOPS])
    snprintf(iops, sizeof iops, "%llu IOPS", (unsigned long long)pool[IOQ_RES_IOPS]);
  else
    snprintf(iops, sizeof iops, "IOPS not bounded");
  bool fixed = d->ungranted_pool_bw_bytes || d->ungranted_pool_iops;
  printf("  no grant:      pods without a grant share %s, %s %s, while any pod holds units of this disk\n",
         pool[IOQ_RES_BANDWIDTH] ? bw : "bandwidth not bounded", iops,
         fixed ? "(devices[].ungrantedPool)" : "when every unit is held (plus the units nobody holds)");
  if (!fixed)
    printf("                 = %.0f%% of what the disk does not advertise (nodePolicy.ungranted.headroomShare); "
           "the rest stays free\n",
           cfg->node_policy.ungranted_headroom_share * 100);
  if (!(d->caps & IOQ_CAP_BUFFERED_WRITES))
    printf("                 direct I/O only: their buffered writes are not bounded here (see buffered-writes)\n");
  if (d->ungranted_note[0])
    printf("                 %s\n", d->ungranted_note);
}

/* What nodePolicy.iocost.pace makes of this disk (probe/pace.h, the plugin's
 * rule), in words: "off", why it cannot be paced, or where the fraction
 * comes from. */
static const char *pace_why(const struct ioq_config *cfg, enum ioq_pace_state st,
                            const ioq_err *e) {
  switch (st) {
  case IOQ_PACE_OFF: return "off";
  case IOQ_PACE_CANNOT: return e->msg;
  case IOQ_PACE_ON: break;
  }
  return cfg->node_policy.iocost_pace_auto ? "auto: grants + pool of pods without a grant"
                                           : "config";
}

static void print_pace(const struct ioq_config *cfg, const struct ioq_inventory *inv,
                       const struct ioq_disk *d) {
  double pace;
  ioq_err e = {0};
  enum ioq_pace_state st = ioq_pace_of(cfg, inv->layout.io_version, d, &pace, &e);
  if (st == IOQ_PACE_ON) {
    char bw[32];
    human_rate(bw, sizeof bw, (uint64_t)(pace * (double)d->capacity_bw_bytes));
    printf("  paced:         iocost at %.2f x capacity = %s (nodePolicy.iocost.pace, %s): a "
           "throttled pod's\n"
           "                 burst reaches the disk no faster; %.0f%% of every token-bucket refill "
           "stays free\n",
           pace, bw, pace_why(cfg, st, &e), (1 - pace) * 100);
  } else if (st == IOQ_PACE_OFF) {
    printf(
        "  paced:         no: a throttled pod's I/O reaches the disk in bursts of its grant x 100 "
        "ms\n"
        "                 (blk-throttle's slice); on a token-bucket disk (cloud volume) see\n"
        "                 nodePolicy.iocost.pace (docs/enforcement.md, \"Token-bucket disks\")\n");
  } else {
    printf("  paced:         %s\n", e.msg);
  }
}

static void print_text(const struct ioq_config *cfg, const struct ioq_inventory *inv) {
  printf("cgroup:  %s\n", inv->layout.description);
  printf("config:  %s\n", cfg->source);
  printf("units:   1 %s unit = %llu bytes/s, 1 %s unit = %llu IOPS, allocatable fraction %.2f\n",
         IOQ_RESOURCE_BANDWIDTH, (unsigned long long)cfg->units.size[IOQ_RES_BANDWIDTH],
         IOQ_RESOURCE_IOPS, (unsigned long long)cfg->units.size[IOQ_RES_IOPS],
         cfg->allocatable_fraction);
  const unsigned *caps;
  size_t ncaps;
  relevant_caps(inv, &caps, &ncaps);
  for (size_t i = 0; i < inv->n; i++) {
    const struct ioq_disk *d = &inv->disks[i];
    printf("\ndisk %s (%u:%u), class %s\n", d->dev.name, d->dev.major, d->dev.minor, d->class_name);
    printf("  selected by:   %s\n", d->selected_by);
    printf("  resolved:      %s\n", d->resolution);
    printf("  throttled:     %s\n", d->throttle_note);
    for (size_t k = 0; k < d->n_leaves; k++)
      printf("  queue %-8s scheduler %s, %s, logical block %u bytes\n", d->leaves[k].name,
             d->leaves[k].scheduler[0] ? d->leaves[k].scheduler : "?",
             d->leaves[k].rotational ? "rotational" : "non-rotational", d->leaves[k].logical_block_size);
    if (d->fault[0])
      printf("  ERROR:         %s (the disk is Unhealthy, advertises nothing)\n", d->fault);
    printf("  enforceable:   %s%s%s\n", d->enforceable ? "yes" : "NO",
           d->enforceable ? "" : ": ", d->enforceable ? "" : d->not_enforceable_reason);
    printf("  capabilities:\n");
    for (size_t k = 0; k < ncaps; k++) {
      bool on = d->caps & caps[k];
      printf("    %s %-17s %s\n", on ? "+" : "-", ioq_cap_name(caps[k]),
             on ? "" : d->cap_reasons[cap_pos(caps[k])]);
    }
    char bw[32];
    human_rate(bw, sizeof bw, d->capacity_bw_bytes);
    if (d->capacity_bw_bytes || d->capacity_iops)
      printf("  capacity:      %s, %llu IOPS (from %s)\n", bw, (unsigned long long)d->capacity_iops,
             d->capacity_source);
    else
      printf("  capacity:      %s\n", d->capacity_source);
    printf("  advertised:    %s %llu units, %s %llu units (fraction %.2f)\n", IOQ_RESOURCE_BANDWIDTH,
           (unsigned long long)d->units[IOQ_RES_BANDWIDTH], IOQ_RESOURCE_IOPS,
           (unsigned long long)d->units[IOQ_RES_IOPS], d->allocatable_fraction);
    if (d->nvmet_units[IOQ_RES_BANDWIDTH] || d->nvmet_units[IOQ_RES_IOPS])
      printf("  nvmet:         %llu bandwidth and %llu IOPS units taken by NVMe-oF namespaces, "
             "not advertised\n",
             (unsigned long long)d->nvmet_units[IOQ_RES_BANDWIDTH],
             (unsigned long long)d->nvmet_units[IOQ_RES_IOPS]);
    print_pool(cfg, d);
    print_pace(cfg, inv, d);
  }
  for (size_t i = 0; i < inv->n_faults; i++)
    printf("\nselector '%s': ERROR: %s (no disk; the others are served)\n", inv->faults[i].select,
           inv->faults[i].reason);
  if (inv->n_notes) {
    printf("\nnotes:\n");
    for (size_t i = 0; i < inv->n_notes; i++)
      printf("  - %s\n", inv->node_notes[i]);
  }
}

static json_object *blockdev_json(const struct ioq_blockdev *b) {
  json_object *o = json_object_new_object();
  char dev[32];
  snprintf(dev, sizeof dev, "%u:%u", b->major, b->minor);
  json_object_object_add(o, "name", json_object_new_string(b->name));
  json_object_object_add(o, "dev", json_object_new_string(dev));
  json_object_object_add(o, "scheduler", json_object_new_string(b->scheduler));
  json_object_object_add(o, "rotational", json_object_new_boolean(b->rotational));
  json_object_object_add(o, "logicalBlockSize", json_object_new_int((int)b->logical_block_size));
  return o;
}

static void print_json(const struct ioq_config *cfg, const struct ioq_inventory *inv,
                       const struct ioq_nvmet_inventory *nv, const struct ioq_nvmet_plan *plan,
                       const char *nv_err) {
  json_object *root = json_object_new_object();
  json_object *cg = json_object_new_object();
  json_object_object_add(cg, "version", json_object_new_int((int)inv->layout.io_version));
  json_object_object_add(cg, "hybrid", json_object_new_boolean(inv->layout.hybrid));
  json_object_object_add(cg, "ioRoot", json_object_new_string(inv->layout.io_root));
  json_object_object_add(cg, "description", json_object_new_string(inv->layout.description));
  json_object_object_add(root, "cgroup", cg);
  json_object_object_add(root, "config", json_object_new_string(cfg->source));
  json_object *units = json_object_new_object();
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    json_object_object_add(units, ioq_resource_name(r), json_object_new_int64((int64_t)cfg->units.size[r]));
  json_object_object_add(root, "units", units);
  json_object *notes = json_object_new_array();
  for (size_t i = 0; i < inv->n_notes; i++)
    json_object_array_add(notes, json_object_new_string(inv->node_notes[i]));
  json_object_object_add(root, "notes", notes);

  const unsigned *caps;
  size_t ncaps;
  relevant_caps(inv, &caps, &ncaps);
  json_object *disks = json_object_new_array();
  for (size_t i = 0; i < inv->n; i++) {
    const struct ioq_disk *d = &inv->disks[i];
    json_object *o = blockdev_json(&d->dev);
    json_object_object_add(o, "class", json_object_new_string(d->class_name));
    json_object_object_add(o, "selectedBy", json_object_new_string(d->selected_by));
    json_object_object_add(o, "resolution", json_object_new_string(d->resolution));
    json_object_object_add(o, "throttle", json_object_new_string(d->throttle_note));
    json_object *leaves = json_object_new_array();
    for (size_t k = 0; k < d->n_leaves; k++)
      json_object_array_add(leaves, blockdev_json(&d->leaves[k]));
    json_object_object_add(o, "leaves", leaves);
    if (d->fault[0])
      json_object_object_add(o, "error", json_object_new_string(d->fault));
    json_object_object_add(o, "enforceable", json_object_new_boolean(d->enforceable));
    if (!d->enforceable)
      json_object_object_add(o, "notEnforceableReason", json_object_new_string(d->not_enforceable_reason));
    json_object *have = json_object_new_array(), *miss = json_object_new_object();
    for (size_t k = 0; k < ncaps; k++) {
      if (d->caps & caps[k])
        json_object_array_add(have, json_object_new_string(ioq_cap_name(caps[k])));
      else
        json_object_object_add(miss, ioq_cap_name(caps[k]),
                               json_object_new_string(d->cap_reasons[cap_pos(caps[k])]));
    }
    json_object_object_add(o, "capabilities", have);
    json_object_object_add(o, "missing", miss);
    json_object *cap = json_object_new_object();
    json_object_object_add(cap, "bandwidthBytesPerSec", json_object_new_int64((int64_t)d->capacity_bw_bytes));
    json_object_object_add(cap, "iops", json_object_new_int64((int64_t)d->capacity_iops));
    json_object_object_add(cap, "source", json_object_new_string(d->capacity_source));
    json_object_object_add(o, "capacity", cap);
    char frac[32];
    snprintf(frac, sizeof frac, "%g", d->allocatable_fraction); /* 0.8, not 0.80000000000000004 */
    json_object_object_add(o, "allocatableFraction", json_object_new_double_s(d->allocatable_fraction, frac));
    json_object *u = json_object_new_object();
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      json_object_object_add(u, ioq_resource_name(r), json_object_new_int64((int64_t)d->units[r]));
    json_object_object_add(o, "units", u);
    if (d->nvmet_units[IOQ_RES_BANDWIDTH] || d->nvmet_units[IOQ_RES_IOPS]) {
      json_object *nu = json_object_new_object();
      for (int r = 0; r < IOQ_RES_COUNT; r++)
        json_object_object_add(nu, ioq_resource_name(r),
                               json_object_new_int64((int64_t)d->nvmet_units[r]));
      json_object_object_add(o, "nvmetUnits", nu);
    }
    json_object *ug = json_object_new_object();
    uint64_t pool[IOQ_RES_COUNT];
    full_pool(cfg, d, pool);
    json_object_object_add(ug, "enabled", json_object_new_boolean(cfg->node_policy.ungranted_enable));
    json_object_object_add(ug, "bandwidthBytesPerSec", json_object_new_int64((int64_t)pool[IOQ_RES_BANDWIDTH]));
    json_object_object_add(ug, "iops", json_object_new_int64((int64_t)pool[IOQ_RES_IOPS]));
    json_object_object_add(ug, "source", json_object_new_string(
        d->ungranted_pool_bw_bytes || d->ungranted_pool_iops ? "config" : "capacity minus advertised units"));
    json_object_object_add(ug, "note", json_object_new_string(d->ungranted_note));
    json_object_object_add(o, "ungrantedPool", ug);
    double pace;
    ioq_err pe = {0};
    enum ioq_pace_state pst = ioq_pace_of(cfg, inv->layout.io_version, d, &pace, &pe);
    json_object *pc = json_object_new_object();
    char pstr[32];
    snprintf(pstr, sizeof pstr, "%g", pace);
    json_object_object_add(pc, "fraction", json_object_new_double_s(pace, pstr));
    json_object_object_add(pc, "bandwidthBytesPerSec",
                           json_object_new_int64((int64_t)(pace * (double)d->capacity_bw_bytes)));
    json_object_object_add(pc, "state", json_object_new_string(pace_why(cfg, pst, &pe)));
    json_object_object_add(o, "pace", pc);
    json_object_array_add(disks, o);
  }
  json_object_object_add(root, "disks", disks);
  json_object *faults = json_object_new_array();
  for (size_t i = 0; i < inv->n_faults; i++) {
    json_object *f = json_object_new_object();
    json_object_object_add(f, "select", json_object_new_string(inv->faults[i].select));
    json_object_object_add(f, "error", json_object_new_string(inv->faults[i].reason));
    json_object_array_add(faults, f);
  }
  json_object_object_add(root, "selectErrors", faults);
  if (nv_err) {
    json_object *ne = json_object_new_object();
    json_object_object_add(ne, "error", json_object_new_string(nv_err));
    json_object_object_add(root, "nvmet", ne);
  } else {
    json_object *nj = ioq_nvmet_json(nv);
    if (nj && cfg->nvmet.n && ioq_nvmet_plan_json(plan, nj, NULL) < 0)
      fprintf(stderr, "ioqosctl probe: out of memory (nvmet plan)\n");
    json_object_object_add(root, "nvmet", nj);
  }
  printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
}

int cmd_probe(int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, 'j'},          {"config", required_argument, NULL, 'c'},
      {"sysfs-root", required_argument, NULL, 's'}, {"cgroupfs-root", required_argument, NULL, 'g'},
      /* former spelling: --cgroup-root is kubelet's root in cgroup-path */
      {"cgroup-root", required_argument, NULL, 'G'},
      {"mountinfo", required_argument, NULL, 'm'}, {"dev-root", required_argument, NULL, 'd'},
      {"kubepods-cgroup", required_argument, NULL, 'k'}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  bool json = false;
  const char *config = NULL;
  struct ioq_probe_opts po;
  ioq_probe_opts_default(&po);
  int c;
  while ((c = ctl_getopt(argc, argv, "h", longopts, "probe")) != -1) {
    switch (c) {
    case 'j': json = true; break;
    case 'c': config = optarg; break;
    case 's': po.roots.sysfs = optarg; break;
    case 'G':
      ctl_deprecated("probe", "--cgroup-root", "--cgroupfs-root");
      /* fall through */
    case 'g': po.roots.cgroupfs = optarg; break;
    case 'm': po.roots.mountinfo = optarg; break;
    case 'd': po.roots.devfs = optarg; break;
    case 'k': po.kubepods_dir = optarg; break;
    case 'h': usage(stdout); return 0;
    default: return 2;
    }
  }
  if (optind < argc)
    return ctl_usage_error("probe", "unexpected argument '%s'", argv[optind]);

  struct ioq_config cfg;
  ioq_err e = {0};
  if (ioq_config_load(config, &cfg, &e) < 0) {
    fprintf(stderr, "ioqosctl probe: %s\n", e.msg);
    return 1;
  }
  struct ioq_inventory inv;
  if (ioq_inventory_build(&cfg, &po, &inv, &e) < 0) {
    fprintf(stderr, "ioqosctl probe: %s\n", e.msg);
    ioq_config_free(&cfg);
    return 1;
  }
  /* what the node exports over NVMe-oF (nvmet/nvmet.h): its own part of
   * the report, a failure there does not hide the disks */
  struct ioq_nvmet_inventory nv;
  struct ioq_nvmet_plan plan = {0};
  ioq_err ne = {0};
  /* the plugin's rule: configured namespaces take their units from the
   * disks before they are advertised (nvmet/nvmetplan.h) */
  bool nv_ok = ioq_nvmet_probe(&po.roots, &nv, &ne) == 0;
  if (nv_ok && ioq_nvmet_plan_build(&cfg, inv.layout.io_version, &nv, inv.disks, inv.n, &plan,
                                    &ne) < 0) {
    ioq_nvmet_free(&nv);
    nv_ok = false;
  }
  if (json) {
    print_json(&cfg, &inv, &nv, &plan, nv_ok ? NULL : ne.msg);
  } else {
    print_text(&cfg, &inv);
    if (nv_ok)
      probe_nvmet_text(&nv, &plan);
    else
      printf("\nnvmet (NVMe-oF target): ERROR: %s\n", ne.msg);
  }
  /* the report is complete; the errors also go to stderr for scripts */
  int rc = 0;
  if (nv_ok) {
    ioq_nvmet_plan_free(&plan);
    ioq_nvmet_free(&nv);
  } else {
    fprintf(stderr, "ioqosctl probe: %s\n", ne.msg);
    rc = 1;
  }
  for (size_t i = 0; i < inv.n_faults; i++, rc = 1)
    fprintf(stderr, "ioqosctl probe: %s\n", inv.faults[i].reason);
  for (size_t i = 0; i < inv.n; i++)
    if (inv.disks[i].fault[0]) {
      fprintf(stderr, "ioqosctl probe: %s\n", inv.disks[i].fault);
      rc = 1;
    }
  ioq_inventory_free(&inv);
  ioq_config_free(&cfg);
  return rc;
}

// SPDX-License-Identifier: Apache-2.0
/* Capability probe, capacity model and inventory over fixture trees:
 * pure v2 and hybrid v1 layouts, kernels with and without iocost,
 * io.latency, BFQ, controllers not enabled. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "probe/capacity.h"
#include "probe/probe.h"

static char *g_root;
static char g_sys[512], g_mi[512], g_cg[512], g_cal[512];
static struct ioq_probe_opts g_po;

static void base_tree(void) {
  g_root = fx_tmpdir();
  fx_sys_disk(g_root, "nvme0n1", "259:0", "[none] mq-deadline", 0);
  fx_sys_disk(g_root, "sda", "8:0", "mq-deadline [bfq] none", 1);
  fx_write(g_root, "proc/mountinfo",
           "22 1 259:0 / / rw - ext4 /dev/nvme0n1 rw\n"
           "23 22 8:0 / /data rw - ext4 /dev/sda rw\n");
  snprintf(g_sys, sizeof g_sys, "%s/sys", g_root);
  snprintf(g_mi, sizeof g_mi, "%s/proc/mountinfo", g_root);
  snprintf(g_cg, sizeof g_cg, "%s/cgroup", g_root);
  snprintf(g_cal, sizeof g_cal, "%s/state/calibration.json", g_root);
  ioq_probe_opts_default(&g_po);
  g_po.roots.sysfs = g_sys;
  g_po.roots.mountinfo = g_mi;
  g_po.roots.cgroupfs = g_cg;
}

/* A v2 node as kubelet leaves it: io+memory enabled down to kubepods.slice. */
static void v2_tree(bool iocost, bool latency) {
  fx_write(g_root, "cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
  fx_write(g_root, "cgroup/cgroup.subtree_control", "cpu io memory pids\n");
  fx_write(g_root, "cgroup/io.stat", "");
  if (iocost) {
    fx_write(g_root, "cgroup/io.cost.qos", "259:0 enable=1 ctrl=user rpct=95.00 rlat=5000 wpct=95.00 wlat=5000 min=100.00 max=100.00\n");
    fx_write(g_root, "cgroup/io.cost.model", "259:0 ctrl=user model=linear rbps=2000000000 rseqiops=400000 rrandiops=300000 wbps=1000000000 wseqiops=300000 wrandiops=200000\n"
                                            "8:0 ctrl=auto model=linear rbps=1 rseqiops=1 rrandiops=1 wbps=1 wseqiops=1 wrandiops=1\n");
  }
  fx_write(g_root, "cgroup/kubepods.slice/cgroup.controllers", "cpu io memory pids\n");
  fx_write(g_root, "cgroup/kubepods.slice/cgroup.subtree_control", "cpu io memory pids\n");
  fx_write(g_root, "cgroup/kubepods.slice/io.max", "");
  fx_write(g_root, "cgroup/kubepods.slice/io.bfq.weight", "default 100\n");
  if (iocost)
    fx_write(g_root, "cgroup/kubepods.slice/io.weight", "default 100\n");
  if (latency)
    fx_write(g_root, "cgroup/kubepods.slice/io.latency", "");
}

/* The dev machines: v1 blkio + an empty v2 at unified/. */
static void hybrid_tree(bool bfq_files) {
  fx_write(g_root, "cgroup/blkio/blkio.throttle.read_bps_device", "");
  fx_write(g_root, "cgroup/blkio/blkio.throttle.write_bps_device", "");
  fx_write(g_root, "cgroup/blkio/blkio.throttle.read_iops_device", "");
  fx_write(g_root, "cgroup/blkio/blkio.throttle.write_iops_device", "");
  /* as the kernel has them: BFQ's files in child cgroups only */
  fx_write(g_root, "cgroup/blkio/kubepods/blkio.throttle.read_bps_device", "");
  if (bfq_files)
    fx_write(g_root, "cgroup/blkio/kubepods/blkio.bfq.weight", "100\n");
  fx_write(g_root, "cgroup/unified/cgroup.controllers", "");
  fx_mkdir(g_root, "cgroup/memory");
}

static void teardown(void) {
  fx_rmtree(g_root);
  free(g_root);
}

static struct ioq_config config_for(const char *json) {
  struct ioq_config c;
  ioq_err e = {0};
  char full[4096];
  snprintf(full, sizeof full, json, g_cal);
  cr_assert_eq(ioq_config_parse(full, "test.json", &c, &e), 0, "%s", e.msg);
  return c;
}

TestSuite(probe, .init = base_tree, .fini = teardown);

Test(probe, pure_v2_with_iocost_and_latency) {
  v2_tree(true, true);
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"/\"},{\"select\":\"sda\",\"class\":\"slow\"}]}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.layout.io_version, IOQ_CGV2);
  cr_assert_not(inv.layout.hybrid);
  cr_assert_eq(inv.n, 2);
  struct ioq_disk *nv = ioq_inventory_find(&inv, "nvme0n1"), *sda = ioq_inventory_find(&inv, "sda");
  cr_assert(nv && sda);
  cr_assert(nv->enforceable);
  cr_assert(nv->caps & IOQ_CAP_IO_MAX);
  cr_assert(nv->caps & IOQ_CAP_IO_WEIGHT, "%s", nv->cap_reasons[1]);
  cr_assert(nv->caps & IOQ_CAP_IO_LATENCY);
  cr_assert(nv->caps & IOQ_CAP_BUFFERED_WRITES);
  cr_assert_not(nv->caps & IOQ_CAP_IO_BFQ_WEIGHT);
  cr_assert(strstr(nv->cap_reasons[2], "scheduler of nvme0n1 is not bfq (none)"), "%s", nv->cap_reasons[2]);
  /* iocost built but not enabled on sda: weights would do nothing */
  cr_assert_not(sda->caps & IOQ_CAP_IO_WEIGHT);
  cr_assert(strstr(sda->cap_reasons[1], "iocost not enabled on sda"), "%s", sda->cap_reasons[1]);
  cr_assert(sda->caps & IOQ_CAP_IO_BFQ_WEIGHT);
  cr_assert_str_eq(sda->class_name, "slow");
  /* capacity: user cost model for nvme0n1 -> min(r,w); sda's model is auto -> none */
  cr_assert_eq(nv->capacity_bw_bytes, 1000000000ull);
  cr_assert_eq(nv->capacity_iops, 200000);
  cr_assert_str_eq(nv->capacity_source, "io.cost.model (ctrl=user)");
  cr_assert_eq(nv->units[IOQ_RES_BANDWIDTH], 762); /* floor(1e9 * 0.8 / 1048576) */
  cr_assert_eq(nv->units[IOQ_RES_IOPS], 1600);     /* 200000 * 0.8 / 100 */
  cr_assert_eq(sda->units[IOQ_RES_BANDWIDTH], 0);
  cr_assert(strstr(sda->capacity_source, "ioqosctl calibrate"), "%s", sda->capacity_source);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

/* nodePolicy.iocost.pace writes io.cost.model from the capacity: the model
 * is then never read back as the capacity (it would shrink on every probe) */
Test(probe, pace_does_not_read_its_own_model_as_capacity) {
  v2_tree(true, true);
  struct ioq_config c = config_for(
      "{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"/\"}],"
      "\"nodePolicy\":{\"iocost\":{\"enable\":true,\"pace\":0.85}}}");
  cr_assert_float_eq(c.node_policy.iocost_pace, 0.85, 1e-9);
  cr_assert_eq(c.node_policy.iocost_latency_us, 2000); /* pace's default period: 4 ms */
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  struct ioq_disk *nv = ioq_inventory_find(&inv, "nvme0n1");
  cr_assert(nv);
  cr_assert_eq(nv->capacity_bw_bytes, 0);
  cr_assert(strstr(nv->capacity_source, "io.cost.model is not read: nodePolicy.iocost.pace writes it"),
            "%s", nv->capacity_source);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
  /* with a configured capacity the disk is served as usual */
  c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"/\",\"capacity\":"
                 "{\"bandwidthBytesPerSec\":209715200,\"iops\":51200}}],"
                 "\"nodePolicy\":{\"iocost\":{\"enable\":true,\"pace\":0.85,\"latencyTargetUs\":5000}}}");
  cr_assert_eq(c.node_policy.iocost_latency_us, 5000); /* a given target is kept */
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  nv = ioq_inventory_find(&inv, "nvme0n1");
  cr_assert_eq(nv->capacity_bw_bytes, 209715200ull);
  cr_assert(strstr(nv->capacity_source, "config"), "%s", nv->capacity_source);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

Test(probe, v2_kernel_without_iocost) {
  v2_tree(false, false);
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"nvme0n1\"}]}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  struct ioq_disk *d = &inv.disks[0];
  cr_assert_not(d->caps & IOQ_CAP_IO_WEIGHT);
  cr_assert(strstr(d->cap_reasons[1], "CONFIG_BLK_CGROUP_IOCOST"), "%s", d->cap_reasons[1]);
  cr_assert_not(d->caps & IOQ_CAP_IO_LATENCY);
  cr_assert(strstr(d->cap_reasons[3], "CONFIG_BLK_CGROUP_IOLATENCY"), "%s", d->cap_reasons[3]);
  cr_assert(d->enforceable);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

Test(probe, v2_controllers_not_enabled) {
  v2_tree(false, false);
  fx_write(g_root, "cgroup/cgroup.subtree_control", "cpu pids\n");
  fx_write(g_root, "cgroup/kubepods.slice/cgroup.subtree_control", "cpu pids\n");
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\"}");
  free(c.kubelet_root);
  c.kubelet_root = strdup("/var/lib/kubelet");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_str_eq(inv.disks[0].dev.name, "nvme0n1", "default disk: the one behind /var/lib/kubelet");
  cr_assert(strstr(inv.disks[0].selected_by, "kubelet root directory /var/lib/kubelet"));
  cr_assert_not(inv.disks[0].caps & IOQ_CAP_BUFFERED_WRITES);
  cr_assert(strstr(inv.disks[0].cap_reasons[6], "memory and io are not both enabled"));
  cr_assert_geq(inv.n_notes, 2);
  cr_assert(strstr(inv.node_notes[0], "io is not enabled in"), "%s", inv.node_notes[0]);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

Test(probe, v2_without_io_controller_is_not_enforceable) {
  fx_write(g_root, "cgroup/cgroup.controllers", "cpu memory pids\n");
  fx_write(g_root, "cgroup/cgroup.subtree_control", "cpu memory\n");
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"sda\",\"capacity\":{\"bandwidthBytesPerSec\":104857600,\"iops\":1000}}]}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_not(inv.disks[0].enforceable);
  cr_assert(strstr(inv.disks[0].not_enforceable_reason, "io controller not available"), "%s",
            inv.disks[0].not_enforceable_reason);
  /* capacity known, but nothing advertised: never promise what cannot be held */
  cr_assert_eq(inv.disks[0].capacity_bw_bytes, 104857600);
  cr_assert_eq(inv.disks[0].units[IOQ_RES_BANDWIDTH], 0);
  cr_assert_eq(inv.disks[0].units[IOQ_RES_IOPS], 0);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

Test(probe, hybrid_v1) {
  hybrid_tree(true);
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"/data\",\"capacity\":{\"bandwidthBytesPerSec\":209715200,\"iops\":5000},\"allocatableFraction\":0.5}]}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.layout.io_version, IOQ_CGV1);
  cr_assert(inv.layout.hybrid);
  struct ioq_disk *d = &inv.disks[0];
  cr_assert_str_eq(d->dev.name, "sda");
  cr_assert(d->enforceable);
  cr_assert(d->caps & IOQ_CAP_BLKIO_THROTTLE);
  cr_assert(d->caps & IOQ_CAP_BLKIO_BFQ_WEIGHT);
  cr_assert_not(d->caps & IOQ_CAP_IO_MAX);
  cr_assert_not(d->caps & IOQ_CAP_BUFFERED_WRITES);
  cr_assert(strstr(d->cap_reasons[6], "direct I/O only"), "%s", d->cap_reasons[6]);
  cr_assert_eq(d->units[IOQ_RES_BANDWIDTH], 100); /* 200 MiB/s * 0.5 */
  cr_assert_eq(d->units[IOQ_RES_IOPS], 25);
  cr_assert(strstr(d->capacity_source, "config test.json"));
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

Test(probe, hybrid_v1_without_bfq_files) {
  hybrid_tree(false);
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"sda\"}]}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_not(inv.disks[0].caps & IOQ_CAP_BLKIO_BFQ_WEIGHT);
  cr_assert(strstr(inv.disks[0].cap_reasons[5], "blkio.bfq.weight missing"), "%s", inv.disks[0].cap_reasons[5]);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

Test(probe, no_cgroup_hierarchy) {
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\"}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), -1);
  cr_assert(strstr(e.msg, "no cgroup hierarchy with io control"), "%s", e.msg);
  ioq_config_free(&c);
}

/* issue 12 item 9: a selector that gives no disk costs that selector only */
Test(probe, duplicate_and_unresolvable_selectors) {
  hybrid_tree(false);
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"/\",\"capacity\":{\"bandwidthBytesPerSec\":104857600,\"iops\":1000}},{\"select\":\"259:0\"}]}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.n, 1);
  cr_assert_str_eq(inv.disks[0].dev.name, "nvme0n1");
  cr_assert_eq(inv.disks[0].units[IOQ_RES_BANDWIDTH], 80, "the first selector keeps the disk");
  cr_assert_eq(inv.n_faults, 1);
  cr_assert_str_eq(inv.faults[0].select, "259:0");
  cr_assert(strstr(inv.faults[0].reason, "devices[1] '259:0' resolves to nvme0n1, already selected by '/'"), "%s", inv.faults[0].reason);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
  c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"sdq\"},{\"select\":\"sda\",\"capacity\":{\"bandwidthBytesPerSec\":104857600,\"iops\":1000}}]}");
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.n, 1);
  cr_assert_str_eq(inv.disks[0].dev.name, "sda");
  cr_assert_eq(inv.disks[0].units[IOQ_RES_BANDWIDTH], 80, "the good disk is served");
  cr_assert_str_eq(inv.disks[0].fault, "");
  cr_assert_eq(inv.n_faults, 1);
  cr_assert(strstr(inv.faults[0].reason, "test.json: devices[0].select 'sdq': block device sdq not found"), "%s", inv.faults[0].reason);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

Test(probe, calibration_roundtrip_and_disk_change) {
  hybrid_tree(false);
  struct ioq_calibration cal = {.disk = "sda", .dev = "8:0", .measured_at = "2026-01-01T00:00:00Z",
                                .seconds = 5, .seq_read_bps = 300u << 20, .seq_write_bps = 250u << 20,
                                .rand_read_iops = 900, .rand_write_iops = 1200};
  ioq_err e = {0};
  cr_assert_eq(ioq_calibration_save(g_cal, &cal, &e), 0, "%s", e.msg);
  struct ioq_calibration other = cal;
  strcpy(other.disk, "nvme0n1");
  strcpy(other.dev, "259:7"); /* measured when nvme0n1 had another number */
  cr_assert_eq(ioq_calibration_save(g_cal, &other, &e), 0, "%s", e.msg);

  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"sda\"},{\"select\":\"nvme0n1\"}]}");
  struct ioq_inventory inv;
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.disks[0].capacity_bw_bytes, 250u << 20);
  cr_assert_eq(inv.disks[0].capacity_iops, 900);
  cr_assert_eq(inv.disks[0].units[IOQ_RES_BANDWIDTH], 200);
  cr_assert_eq(inv.disks[0].units[IOQ_RES_IOPS], 7);
  cr_assert(strstr(inv.disks[0].capacity_source, "calibration"), "%s", inv.disks[0].capacity_source);
  cr_assert_eq(inv.disks[1].units[IOQ_RES_BANDWIDTH], 0);
  cr_assert(strstr(inv.disks[1].capacity_source, "disk changed? recalibrate"), "%s", inv.disks[1].capacity_source);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

Test(probe, ungranted_pool_larger_than_measured_capacity_is_cut) {
  /* the config cannot check a pool against a measured capacity: the
   * inventory cuts it to the disk and says so, nothing else changes */
  hybrid_tree(false);
  struct ioq_calibration cal = {.disk = "sda", .dev = "8:0", .measured_at = "2026-01-01T00:00:00Z",
                                .seconds = 5, .seq_read_bps = 300u << 20, .seq_write_bps = 250u << 20,
                                .rand_read_iops = 900, .rand_write_iops = 1200};
  ioq_err e = {0};
  cr_assert_eq(ioq_calibration_save(g_cal, &cal, &e), 0, "%s", e.msg);
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"sda\",\"ungrantedPool\":{\"bandwidthBytesPerSec\":1048576000,\"iops\":100}}]}");
  struct ioq_inventory inv;
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.disks[0].ungranted_pool_bw_bytes, 250u << 20);
  cr_assert_eq(inv.disks[0].ungranted_pool_iops, 100, "within the disk: kept");
  cr_assert(strstr(inv.disks[0].ungranted_note, "ungrantedPool.bandwidthBytesPerSec 1048576000 is larger than the disk (262144000, calibration"),
            "%s", inv.disks[0].ungranted_note);
  cr_assert_eq(inv.disks[0].units[IOQ_RES_BANDWIDTH], 200, "units unchanged");
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

/* issue 12 item 9: a corrupt calibration (entry or whole file) faults the
 * disks that read it, not the disk whose capacity is configured */
Test(probe, malformed_calibration_file) {
  hybrid_tree(false);
  fx_write(g_root, "state/calibration.json", "{\"version\":1,\"disks\":{\"sda\":{\"seqReadBytesPerSec\":\"fast\"}}}");
  const char *cfg = "{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"sda\"},{\"select\":\"nvme0n1\",\"capacity\":{\"bandwidthBytesPerSec\":104857600,\"iops\":1000}}]}";
  struct ioq_config c = config_for(cfg);
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.n, 2);
  cr_assert(strstr(inv.disks[0].fault, "capacity of sda: ") &&
            strstr(inv.disks[0].fault, "calibration.json: disks.sda.seqReadBytesPerSec"), "%s", inv.disks[0].fault);
  cr_assert_eq(inv.disks[0].units[IOQ_RES_BANDWIDTH], 0);
  cr_assert_str_eq(inv.disks[1].fault, "");
  cr_assert_eq(inv.disks[1].units[IOQ_RES_BANDWIDTH], 80);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
  fx_write(g_root, "state/calibration.json", "not json");
  c = config_for(cfg);
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert(strstr(inv.disks[0].fault, "not a JSON object"), "%s", inv.disks[0].fault);
  cr_assert_eq(inv.disks[1].units[IOQ_RES_BANDWIDTH], 80);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

/* issue 12 item 9: a bad io.cost.model line faults its own disk only */
Test(probe, bad_cost_model_line_faults_one_disk) {
  v2_tree(true, false);
  fx_write(g_root, "cgroup/io.cost.model", "259:0 ctrl=user model=linear rbps=2000000000 rseqiops=400000 rrandiops=300000 wbps=1000000000 wseqiops=300000 wrandiops=200000\n"
                                          "8:0 ctrl=user model=linear rbps=lots rseqiops=1 rrandiops=1 wbps=1 wseqiops=1 wrandiops=1\n");
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"sda\"},{\"select\":\"nvme0n1\"}]}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.n, 2);
  cr_assert(strstr(inv.disks[0].fault, "capacity of sda: io.cost.model line for 8:0: bad value 'rbps=lots'"), "%s", inv.disks[0].fault);
  cr_assert_eq(inv.disks[0].units[IOQ_RES_BANDWIDTH], 0);
  cr_assert_str_eq(inv.disks[1].fault, "");
  cr_assert_gt(inv.disks[1].units[IOQ_RES_BANDWIDTH], 0, "nvme0n1 keeps its units");
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

Test(capacity, cost_model_parse) {
  uint64_t bw = 0, iops = 0;
  ioq_err e = {0};
  const char *m = "8:0 ctrl=user model=linear rbps=100 rseqiops=1 rrandiops=30 wbps=80 wseqiops=1 wrandiops=40\n";
  cr_assert_eq(ioq_cost_model_parse(m, 8, 0, &bw, &iops, &e), 0);
  cr_assert_eq(bw, 80);
  cr_assert_eq(iops, 30);
  cr_assert_eq(ioq_cost_model_parse(m, 8, 16, &bw, &iops, &e), 1);
  cr_assert_eq(ioq_cost_model_parse("8:0 ctrl=user rbps=x\n", 8, 0, &bw, &iops, &e), -1);
  cr_assert(strstr(e.msg, "bad value 'rbps=x'"), "%s", e.msg);
  cr_assert_eq(ioq_cost_model_parse("8:0 ctrl=user rbps=1\n", 8, 0, &bw, &iops, &e), -1);
  cr_assert(strstr(e.msg, "lacks"), "%s", e.msg);
}

/* issue 12 item 10: 2^64-1 IOPS with 1-IOPS units is 2^64 as a double; a
 * cast of it is undefined (x86 gives 2^63) - a fault of that disk instead */
Test(probe, huge_cost_model_value_is_a_fault_not_a_wrapped_cast) {
  v2_tree(true, false);
  fx_write(g_root, "cgroup/io.cost.model", "8:0 ctrl=user model=linear rbps=1000000000 rseqiops=1 rrandiops=18446744073709551615 wbps=1000000000 wseqiops=1 wrandiops=18446744073709551615\n");
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"allocatableFraction\":1.0,\"units\":{\"iops\":1},\"devices\":[{\"select\":\"sda\"}]}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert(strstr(inv.disks[0].fault, "iops units from io.cost.model (ctrl=user): 1.84467e+19 is not a number in 0..2^64-1"),
            "%s", inv.disks[0].fault);
  cr_assert_eq(inv.disks[0].units[IOQ_RES_IOPS], 0);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

/* issue 12 item 10: a measured capacity above the per-disk bound is capped
 * (and said); the disk that would take the node over its bound is a fault */
Test(probe, unit_bounds_per_disk_and_node) {
  hybrid_tree(false);
  struct ioq_calibration cal = {.disk = "sda", .dev = "8:0", .measured_at = "2026-01-01T00:00:00Z",
                                .seconds = 5, .seq_read_bps = 40000ull << 20, .seq_write_bps = 40000ull << 20,
                                .rand_read_iops = 900, .rand_write_iops = 1200};
  ioq_err e = {0};
  cr_assert_eq(ioq_calibration_save(g_cal, &cal, &e), 0, "%s", e.msg);
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"allocatableFraction\":1.0,\"devices\":[{\"select\":\"sda\"},{\"select\":\"nvme0n1\",\"capacity\":{\"bandwidthBytesPerSec\":1048576,\"iops\":100}}]}");
  struct ioq_inventory inv;
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_str_eq(inv.disks[0].dev.name, "sda");
  cr_assert_eq(inv.disks[0].units[IOQ_RES_BANDWIDTH], IOQ_MAX_UNITS_PER_DISK);
  cr_assert(strstr(inv.disks[0].capacity_source, "40000 bandwidth units capped at 25000 (raise units.bandwidthBytesPerSec)"),
            "%s", inv.disks[0].capacity_source);
  cr_assert_str_eq(inv.disks[0].fault, "");
  /* the node is full in bandwidth: the next disk does not fit */
  cr_assert(strstr(inv.disks[1].fault, "its 1 bandwidth units do not fit: the disks before it advertise 25000, a node at most 25000"),
            "%s", inv.disks[1].fault);
  cr_assert_eq(inv.disks[1].units[IOQ_RES_IOPS], 0);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

/* issue 12 item 10: a disk whose kernel name is too long for a unit ID is a
 * fault of its selector, never a cut name */
Test(probe, disk_name_too_long_for_unit_ids) {
  hybrid_tree(false);
  const char *lng = "averyveryveryveryveryveryveryveryverylongdiskname0123";
  fx_sys_disk(g_root, lng, "252:0", "[none]", 0);
  struct ioq_config c = config_for("{\"calibrationFile\":\"%s\",\"devices\":[{\"select\":\"252:0\"},{\"select\":\"sda\",\"capacity\":{\"bandwidthBytesPerSec\":104857600,\"iops\":1000}}]}");
  struct ioq_inventory inv;
  ioq_err e = {0};
  cr_assert_eq(ioq_inventory_build(&c, &g_po, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.n, 1);
  cr_assert_str_eq(inv.disks[0].dev.name, "sda");
  cr_assert_eq(inv.n_faults, 1);
  cr_assert(strstr(inv.faults[0].reason, "block device 252:0 is named 'averyvery"), "%s", inv.faults[0].reason);
  cr_assert(strstr(inv.faults[0].reason, "longer than the 48 characters a unit ID can carry"), "%s", inv.faults[0].reason);
  ioq_inventory_free(&inv);
  ioq_config_free(&c);
}

/* issue 13 item 5: a calibration string field longer than its buffer is an
 * error naming the field (it was cut silently: a cut "dev" then read as
 * "disk changed") */
Test(probe, calibration_field_too_long) {
  hybrid_tree(false);
  fx_write(g_root, "state/calibration.json",
           "{\"version\":1,\"disks\":{\"sda\":{\"dev\":\"8:0000000000000000000000000000\","
           "\"seqReadBytesPerSec\":1,\"seqWriteBytesPerSec\":1,\"randReadIops\":1,"
           "\"randWriteIops\":1}}}");
  struct ioq_calibration cal;
  ioq_err e = {0};
  cr_assert_eq(ioq_calibration_load(g_cal, "sda", &cal, &e), -1);
  cr_assert(strstr(e.msg, "disks.sda.dev: longer than 23 characters"), "%s", e.msg);
}

// SPDX-License-Identifier: Apache-2.0
/* Disk resolution over fixture sysfs/mountinfo trees: NVMe, SATA with
 * partitions, dm on md, loop, btrfs (anonymous st_dev), bad selectors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "disk/blockdev.h"
#include "disk/mountinfo.h"
#include "probe/probe.h"

static char *g_root;
static struct ioq_roots g_roots;
static char g_sys[512], g_mi[512], g_dev[512];

static void setup(void) {
  g_root = fx_tmpdir();
  /* NVMe disk, whole-disk filesystem */
  fx_sys_disk(g_root, "nvme0n1", "259:0", "[none] mq-deadline", 0);
  /* SATA disk with partitions */
  fx_sys_disk(g_root, "sda", "8:0", "mq-deadline kyber [bfq] none", 1);
  fx_sys_part(g_root, "sda", "sda1", "8:1", 1);
  fx_sys_part(g_root, "sda", "sda2", "8:2", 2);
  /* two disks -> md0 (raid1 on partitions) -> dm-0 (LVM) */
  fx_sys_disk(g_root, "sdb", "8:16", "[bfq] none", 0);
  fx_sys_part(g_root, "sdb", "sdb1", "8:17", 1);
  fx_sys_disk(g_root, "sdc", "8:32", "[bfq] none", 0);
  fx_sys_part(g_root, "sdc", "sdc1", "8:33", 1);
  fx_sys_disk(g_root, "md0", "9:0", "none", 0);
  fx_sys_slave(g_root, "md0", "sdb1");
  fx_sys_slave(g_root, "md0", "sdc1");
  fx_sys_disk(g_root, "dm-0", "253:0", "none", 0);
  fx_sys_slave(g_root, "dm-0", "md0");
  fx_sys_dm_name(g_root, "dm-0", "vg-data");
  /* loop device on a file */
  fx_sys_disk(g_root, "loop3", "7:3", "[none]", 0);
  fx_write(g_root, "dev/mapper/.keep", "");
  fx_symlink(g_root, "dev/disk/by-id/nvme-Samsung_X", "../../nvme0n1");
  fx_write(g_root, "dev/nvme0n1", "");
  fx_write(g_root, "proc/mountinfo",
           "22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw\n"
           "30 22 8:1 / /boot rw - vfat /dev/sda1 rw\n"
           "31 22 259:0 / /var/lib/kubelet rw shared:2 - xfs /dev/nvme0n1 rw\n"
           "32 22 253:0 / /data rw - ext4 /dev/mapper/vg-data rw\n"
           "33 22 0:45 / /srv/btr rw - btrfs /dev/sdc1 rw\n"
           "34 22 7:3 / /mnt/loop\\040dir rw - ext4 /dev/loop3 rw\n"
           "35 22 0:50 / /tmp rw - tmpfs tmpfs rw\n"
           "36 31 0:51 / /var/lib/kubelet/pods/x/volumes rw - tmpfs tmpfs rw\n"
           "garbage line\n");
  snprintf(g_sys, sizeof g_sys, "%s/sys", g_root);
  snprintf(g_mi, sizeof g_mi, "%s/proc/mountinfo", g_root);
  snprintf(g_dev, sizeof g_dev, "%s/dev", g_root);
  g_roots = (struct ioq_roots){.sysfs = g_sys, .mountinfo = g_mi, .cgroupfs = "/nonexistent", .devfs = g_dev};
}

static void teardown(void) {
  fx_rmtree(g_root);
  free(g_root);
}

TestSuite(resolve, .init = setup, .fini = teardown);

Test(resolve, mount_point_to_nvme) {
  struct ioq_disk d = {0};
  ioq_err e = {0};
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/var/lib/kubelet", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "nvme0n1");
  cr_assert_eq(d.dev.major, 259);
  cr_assert_eq(d.dev.minor, 0);
  cr_assert_str_eq(d.dev.scheduler, "none");
  cr_assert_not(d.dev.rotational);
  cr_assert_eq(d.dev.logical_block_size, 512);
  cr_assert_eq(d.n_leaves, 1);
  cr_assert_str_eq(d.leaves[0].name, "nvme0n1");
  cr_assert(strstr(d.resolution, "/var/lib/kubelet is on mount /var/lib/kubelet (xfs from /dev/nvme0n1"),
            "%s", d.resolution);
}

Test(resolve, subdirectory_uses_longest_mount) {
  struct ioq_disk d = {0};
  ioq_err e = {0};
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/var/lib/kubelet/pods/abc", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "nvme0n1");
}

Test(resolve, partition_to_whole_disk) {
  struct ioq_disk d = {0};
  ioq_err e = {0};
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/var/log", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "sda");
  cr_assert_eq(d.dev.major, 8);
  cr_assert_eq(d.dev.minor, 0);
  cr_assert_str_eq(d.dev.scheduler, "bfq");
  cr_assert(d.dev.rotational);
  cr_assert(strstr(d.resolution, "a partition of sda"), "%s", d.resolution);
  /* selecting the partition directly also lands on the disk */
  cr_assert_eq(ioq_disk_resolve(&g_roots, "sda1", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "sda");
  cr_assert_eq(ioq_disk_resolve(&g_roots, "8:2", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "sda");
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/boot", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "sda");
}

Test(resolve, dm_on_md_stack) {
  struct ioq_disk d = {0};
  ioq_err e = {0};
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/data", &d, &e), 0, "%s", e.msg);
  /* io.max on the device pods write to; weights on the disks under it */
  cr_assert_str_eq(d.dev.name, "dm-0");
  cr_assert_eq(d.dev.major, 253);
  cr_assert_eq(d.n_leaves, 2);
  const char *a = d.leaves[0].name, *b = d.leaves[1].name;
  cr_assert((strcmp(a, "sdb") == 0 && strcmp(b, "sdc") == 0) || (strcmp(a, "sdc") == 0 && strcmp(b, "sdb") == 0),
            "%s %s", a, b);
  cr_assert_str_eq(d.leaves[0].scheduler, "bfq");
  cr_assert(strstr(d.throttle_note, "io.max on dm-0 (253:0)"), "%s", d.throttle_note);
  cr_assert(strstr(d.throttle_note, "sdb") && strstr(d.throttle_note, "sdc"), "%s", d.throttle_note);
  /* by /dev/mapper name and by dm name in mountinfo source */
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/dev/mapper/vg-data", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "dm-0");
  /* the md device alone */
  cr_assert_eq(ioq_disk_resolve(&g_roots, "md0", &d, &e), 0, "%s", e.msg);
  cr_assert_eq(d.n_leaves, 2);
}

Test(resolve, btrfs_anonymous_dev_uses_source) {
  struct ioq_disk d = {0};
  ioq_err e = {0};
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/srv/btr/x", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "sdc");
}

Test(resolve, loop_and_escaped_mountpoint) {
  struct ioq_disk d = {0};
  ioq_err e = {0};
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/mnt/loop dir/f", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "loop3");
}

Test(resolve, dev_symlink) {
  struct ioq_disk d = {0};
  ioq_err e = {0};
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/dev/disk/by-id/nvme-Samsung_X", &d, &e), 0, "%s", e.msg);
  cr_assert_str_eq(d.dev.name, "nvme0n1");
}

Test(resolve, errors_are_clear) {
  struct ioq_disk d = {0};
  ioq_err e = {0};
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/tmp/x", &d, &e), -1);
  cr_assert(strstr(e.msg, "tmpfs mount /tmp from 'tmpfs', which is not a block device"), "%s", e.msg);
  cr_assert_eq(ioq_disk_resolve(&g_roots, "sdz", &d, &e), -1);
  cr_assert(strstr(e.msg, "block device sdz not found"), "%s", e.msg);
  cr_assert_eq(ioq_disk_resolve(&g_roots, "9:99", &d, &e), -1);
  cr_assert(strstr(e.msg, "no block device 9:99"), "%s", e.msg);
  cr_assert_eq(ioq_disk_resolve(&g_roots, "/dev/nope", &d, &e), -1);
  cr_assert(strstr(e.msg, "/dev/nope is not a block device"), "%s", e.msg);
  cr_assert_eq(ioq_disk_resolve(&g_roots, "bad name!?", &d, &e), -1);
  cr_assert(strstr(e.msg, "is not a disk name, /dev path, mount point or MAJ:MIN"), "%s", e.msg);
  struct ioq_roots r = g_roots;
  r.mountinfo = "/nonexistent/mountinfo";
  cr_assert_eq(ioq_disk_resolve(&r, "/data", &d, &e), -1);
  cr_assert(strstr(e.msg, "open /nonexistent/mountinfo"), "%s", e.msg);
}

Test(resolve, stack_cycle_is_bounded) {
  fx_sys_disk(g_root, "dm-7", "253:7", "none", 0);
  fx_sys_disk(g_root, "dm-8", "253:8", "none", 0);
  fx_sys_slave(g_root, "dm-7", "dm-8");
  fx_sys_slave(g_root, "dm-8", "dm-7");
  struct ioq_disk d = {0};
  ioq_err e = {0};
  cr_assert_eq(ioq_disk_resolve(&g_roots, "dm-7", &d, &e), -1);
  cr_assert(strstr(e.msg, "deeper than 16 levels"), "%s", e.msg);
}

Test(mountinfo, unescape) {
  char s[] = "/a\\040b\\011c\\134d";
  ioq_mountinfo_unescape(s);
  cr_assert_str_eq(s, "/a b\tc\\d");
}

Test(mountinfo, relative_path_rejected) {
  struct ioq_mount m;
  ioq_err e = {0};
  cr_assert_eq(ioq_mount_for_path("/proc/self/mountinfo", "var/lib", &m, &e), -1);
  cr_assert(strstr(e.msg, "not absolute"), "%s", e.msg);
}

Test(mountinfo, real_host_root) {
  struct ioq_mount m;
  ioq_err e = {0};
  cr_assert_eq(ioq_mount_for_path("/proc/self/mountinfo", "/", &m, &e), 0, "%s", e.msg);
  cr_assert_str_eq(m.mountpoint, "/");
}

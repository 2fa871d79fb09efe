// SPDX-License-Identifier: Apache-2.0
/* The nvmet probe (src/nvmet/nvmet.c) over temp sysfs/configfs trees: the three
 * states, the cgroup_id verdict, namespaces with their attributes and
 * backing disks, and every malformed attribute refused with its path. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fixture.h"
#include "nvmet/nvmet.h"

#define SUB "nqn.2014-08.org.example:db"

static struct ioq_roots roots_of(const char *root) {
  struct ioq_roots r;
  ioq_roots_default(&r);
  static char sys[512], dev[512];
  snprintf(sys, sizeof sys, "%s/sys", root);
  snprintf(dev, sizeof dev, "%s/dev", root);
  r.sysfs = sys;
  r.devfs = dev;
  return r;
}

/* a namespace as configfs shows it; cgroup_id NULL: a kernel without it */
static void ns(const char *root, const char *sub, const char *nsid, const char *enable,
               const char *device_path, const char *buffered, const char *cgroup_id) {
  char rel[512];
#define F(name, val)                                                                               \
  do {                                                                                             \
    snprintf(rel, sizeof rel, "sys/kernel/config/nvmet/subsystems/%s/namespaces/%s/%s", sub, nsid, \
             name);                                                                                \
    fx_write(root, rel, val);                                                                      \
  } while (0)
  F("enable", enable);
  F("device_path", device_path);
  if (buffered)
    F("buffered_io", buffered);
  if (cgroup_id)
    F("cgroup_id", cgroup_id);
#undef F
}

static void nvmet_loaded(const char *root) {
  fx_mkdir(root, "sys/module/nvmet");
  fx_mkdir(root, "sys/kernel/config/nvmet/subsystems");
}

Test(nvmet, not_loaded_and_no_configfs) {
  char *root = fx_tmpdir();
  struct ioq_roots r = roots_of(root);
  struct ioq_nvmet_inventory inv;
  ioq_err e;
  cr_assert_eq(ioq_nvmet_probe(&r, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.state, IOQ_NVMET_NO_MODULE);
  cr_assert(strstr(inv.reason, "nvmet module is not loaded"), "%s", inv.reason);
  ioq_nvmet_free(&inv);
  fx_mkdir(root, "sys/module/nvmet");
  cr_assert_eq(ioq_nvmet_probe(&r, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.state, IOQ_NVMET_NO_CONFIGFS);
  cr_assert(strstr(inv.reason, "configfs is not mounted"), "%s", inv.reason);
  ioq_nvmet_free(&inv);
  fx_mkdir(root, "sys/kernel/config/nvmet/subsystems/" SUB);
  cr_assert_eq(ioq_nvmet_probe(&r, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.state, IOQ_NVMET_PRESENT);
  cr_assert_eq(inv.cgroup_id, IOQ_NVMET_CGID_UNKNOWN);
  cr_assert_eq(inv.n_subsystems, 1);
  cr_assert_eq(inv.n, 0);
  cr_assert(strstr(inv.reason, "no namespace"), "%s", inv.reason);
  ioq_nvmet_free(&inv);
  fx_rmtree(root);
  free(root);
}

Test(nvmet, kernel_without_cgroup_id) {
  char *root = fx_tmpdir();
  nvmet_loaded(root);
  ns(root, SUB, "2", "1\n", "/nonexistent/nullb0\n", "0\n", NULL);
  ns(root, SUB, "1", "0\n", "\n", "1\n", NULL);
  ns(root, "nqn.2014-08.org.example:a", "7", "1\n", "/nonexistent/x\n", NULL, NULL);
  fx_mkdir(root, "sys/kernel/config/nvmet/subsystems/" SUB "/namespaces/not-an-nsid");
  struct ioq_roots r = roots_of(root);
  struct ioq_nvmet_inventory inv;
  ioq_err e;
  cr_assert_eq(ioq_nvmet_probe(&r, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.n_subsystems, 2);
  cr_assert_eq(inv.n, 3, "a directory that is not an NSID is not a namespace");
  cr_assert_eq(inv.cgroup_id, IOQ_NVMET_CGID_ABSENT);
  cr_assert(strstr(inv.reason, "cannot charge an NVMe-oF namespace's I/O to a cgroup (Linux 7.5+)"),
            "%s", inv.reason);
  /* sorted by subsystem, then NSID */
  cr_assert_str_eq(inv.ns[0].subsystem, "nqn.2014-08.org.example:a");
  cr_assert_eq(inv.ns[0].buffered_io, -1, "no buffered_io attribute");
  cr_assert_eq(inv.ns[1].nsid, 1);
  cr_assert_not(inv.ns[1].enabled);
  cr_assert_eq(inv.ns[1].buffered_io, 1);
  cr_assert_str_eq(inv.ns[1].device_path, "");
  cr_assert_str_eq(inv.ns[1].backing, "no device_path set");
  cr_assert_eq(inv.ns[2].nsid, 2);
  cr_assert(inv.ns[2].enabled);
  cr_assert_str_eq(inv.ns[2].device_path, "/nonexistent/nullb0");
  cr_assert_not(inv.ns[2].backed);
  cr_assert(strstr(inv.ns[2].backing, "No such file"), "%s", inv.ns[2].backing);
  cr_assert_not(inv.ns[2].has_cgroup_id);
  ioq_nvmet_free(&inv);
  fx_rmtree(root);
  free(root);
}

Test(nvmet, cgroup_id_and_backing_disk) {
  char *root = fx_tmpdir();
  nvmet_loaded(root);
  fx_sys_disk(root, "nullb0", "251:0", "[none] mq-deadline", 0);
  /* the namespace's block device node (root may mknod; the tests run as root) */
  char devnode[600];
  snprintf(devnode, sizeof devnode, "%s/nullb0", fx_path(root, "dev"));
  fx_mkdir(root, "dev");
  cr_assert_eq(mknod(devnode, S_IFBLK | 0600, makedev(251, 0)), 0, "mknod %s", devnode);
  char line[700];
  snprintf(line, sizeof line, "%s\n", devnode);
  ns(root, SUB, "1", "1\n", line, "0\n", "0\n");
  ns(root, SUB, "3", "0\n", line, "0\n", "4242\n");
  struct ioq_roots r = roots_of(root);
  struct ioq_nvmet_inventory inv;
  ioq_err e;
  cr_assert_eq(ioq_nvmet_probe(&r, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.cgroup_id, IOQ_NVMET_CGID_PRESENT, "%s", inv.reason);
  cr_assert_eq(inv.n, 2);
  cr_assert(inv.ns[0].has_cgroup_id);
  cr_assert_eq(inv.ns[0].cgroup_id, 0, "0: none set");
  cr_assert_eq(inv.ns[1].cgroup_id, 4242);
  cr_assert(inv.ns[0].backed, "%s", inv.ns[0].backing);
  cr_assert_str_eq(inv.ns[0].disk.name, "nullb0");
  cr_assert_eq(inv.ns[0].disk.major, 251);
  cr_assert(strstr(inv.ns[0].backing, "block device"), "%s", inv.ns[0].backing);
  ioq_nvmet_free(&inv);
  /* one namespace without the attribute: the kernel cannot be relied on */
  ns(root, SUB, "4", "0\n", line, "0\n", NULL);
  cr_assert_eq(ioq_nvmet_probe(&r, &inv, &e), 0, "%s", e.msg);
  cr_assert_eq(inv.cgroup_id, IOQ_NVMET_CGID_ABSENT);
  ioq_nvmet_free(&inv);
  fx_rmtree(root);
  free(root);
}

Test(nvmet, malformed_attributes_are_errors) {
  static const struct {
    const char *file, *value, *msg;
  } bad[] = {
      {"enable", "2\n", "enable: '2' is neither 0 nor 1"},
      {"buffered_io", "yes\n", "buffered_io: 'yes' is neither 0 nor 1"},
      {"cgroup_id", "-1\n", "cgroup_id: '-1' is not a cgroup ID"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *root = fx_tmpdir();
    nvmet_loaded(root);
    ns(root, SUB, "1", "1\n", "\n", "0\n", "0\n");
    char rel[400];
    snprintf(rel, sizeof rel, "sys/kernel/config/nvmet/subsystems/%s/namespaces/1/%s", SUB,
             bad[i].file);
    fx_write(root, rel, bad[i].value);
    struct ioq_roots r = roots_of(root);
    struct ioq_nvmet_inventory inv;
    ioq_err e;
    cr_assert_eq(ioq_nvmet_probe(&r, &inv, &e), -1, "%s=%s refused", bad[i].file, bad[i].value);
    cr_assert(strstr(e.msg, bad[i].msg), "'%s' in: %s", bad[i].msg, e.msg);
    cr_assert(strstr(e.msg, "namespace 1"), "names the namespace: %s", e.msg);
    cr_assert_null(inv.ns, "nothing half-listed");
    fx_rmtree(root);
    free(root);
  }
}

Test(nvmet, cgroup_id_is_the_inode) {
  char *root = fx_tmpdir();
  fx_mkdir(root, "cg");
  struct stat st;
  cr_assert_eq(stat(fx_path(root, "cg"), &st), 0);
  uint64_t id = 0;
  ioq_err e;
  cr_assert_eq(ioq_cgroup_id(fx_path(root, "cg"), &id, &e), 0, "%s", e.msg);
  cr_assert_eq(id, (uint64_t)st.st_ino);
  cr_assert_eq(ioq_cgroup_id(fx_path(root, "nope"), &id, &e), -1);
  cr_assert(strstr(e.msg, "nope"), "%s", e.msg);
  fx_rmtree(root);
  free(root);
}

Test(nvmet, json) {
  char *root = fx_tmpdir();
  nvmet_loaded(root);
  ns(root, SUB, "1", "1\n", "/nonexistent/x\n", "0\n", NULL);
  struct ioq_roots r = roots_of(root);
  struct ioq_nvmet_inventory inv;
  ioq_err e;
  cr_assert_eq(ioq_nvmet_probe(&r, &inv, &e), 0, "%s", e.msg);
  json_object *j = ioq_nvmet_json(&inv);
  cr_assert_not_null(j);
  const char *s =
      json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  cr_assert(strstr(s, "\"state\":\"present\",\"cgroupID\":\"absent\""), "%s", s);
  cr_assert(strstr(s, "\"subsystem\":\"" SUB "\",\"nsid\":1,\"enabled\":true,\"bufferedIO\":false,"
                      "\"devicePath\":\"/nonexistent/x\""),
            "%s", s);
  cr_assert_null(strstr(s, "\"disk\""), "not backed: no disk: %s", s);
  json_object_put(j);
  ioq_nvmet_free(&inv);
  fx_rmtree(root);
  free(root);
}

/* the two writes: cgroup_id only while disabled, read back; enable */
Test(nvmet, set_cgroup_id_and_enable) {
  char *root = fx_tmpdir();
  nvmet_loaded(root);
  ns(root, SUB, "1", "0\n", "\n", "0\n", "0\n");
  ns(root, SUB, "2", "1\n", "\n", "0\n", "5\n");
  ns(root, SUB, "3", "0\n", "\n", "0\n", NULL);
  struct ioq_roots r = roots_of(root);
  ioq_err e;
  char rel[400];
  cr_assert_eq(ioq_nvmet_set_cgroup_id(&r, SUB, 1, 4242, &e), 0, "%s", e.msg);
  snprintf(rel, sizeof rel, "sys/kernel/config/nvmet/subsystems/%s/namespaces/1/cgroup_id", SUB);
  char *v = fx_read(root, rel);
  cr_assert_str_eq(v, "4242\n");
  free(v);
  /* enabled: refused before the kernel sees it, nothing written */
  cr_assert_eq(ioq_nvmet_set_cgroup_id(&r, SUB, 2, 4242, &e), -1);
  cr_assert_eq(e.code, EBUSY);
  cr_assert(strstr(e.msg, "is enabled: the kernel changes cgroup_id only while the namespace is "
                          "disabled"),
            "%s", e.msg);
  snprintf(rel, sizeof rel, "sys/kernel/config/nvmet/subsystems/%s/namespaces/2/cgroup_id", SUB);
  v = fx_read(root, rel);
  cr_assert_str_eq(v, "5\n");
  free(v);
  /* a kernel without the attribute */
  cr_assert_eq(ioq_nvmet_set_cgroup_id(&r, SUB, 3, 1, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  cr_assert(strstr(e.msg, "cgroup_id does not exist: this kernel cannot charge"), "%s", e.msg);
  /* no such namespace, a hostile name */
  cr_assert_eq(ioq_nvmet_set_cgroup_id(&r, SUB, 9, 1, &e), -1);
  cr_assert(strstr(e.msg, "namespaces/9/enable"), "%s", e.msg);
  cr_assert_eq(ioq_nvmet_set_cgroup_id(&r, "../x", 1, 1, &e), -1);
  cr_assert(strstr(e.msg, "is not an nvmet subsystem name"), "%s", e.msg);
  /* enable and disable, read back */
  cr_assert_eq(ioq_nvmet_set_enable(&r, SUB, 1, true, &e), 0, "%s", e.msg);
  snprintf(rel, sizeof rel, "sys/kernel/config/nvmet/subsystems/%s/namespaces/1/enable", SUB);
  v = fx_read(root, rel);
  cr_assert_str_eq(v, "1\n");
  free(v);
  cr_assert_eq(ioq_nvmet_set_cgroup_id(&r, SUB, 1, 1, &e), -1, "enabled now");
  cr_assert_eq(ioq_nvmet_set_enable(&r, SUB, 1, false, &e), 0, "%s", e.msg);
  cr_assert_eq(ioq_nvmet_set_cgroup_id(&r, SUB, 1, 0, &e), 0, "0 clears it: %s", e.msg);
  fx_rmtree(root);
  free(root);
}

// SPDX-License-Identifier: Apache-2.0
/* Statistics/pressure parsers and the controller check on temp trees
 * (enabling controllers for real is tested in the VM: tests/kernel). */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "cgroup/cgwrite.h"

Test(cgstat, iostat_v2) {
  const char *c = "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n"
                  "253:0 rbytes=5 wbytes=6 rios=7 wios=8 dbytes=9 dios=10 cost.vrate=100.00 "
                  "depth=1 avg_lat=2.5\n";
  struct ioq_iostat st[4];
  size_t n;
  ioq_err e = {0};
  cr_assert_eq(ioq_iostat_parse_v2(c, st, 4, &n, &e), 0, "%s", e.msg);
  cr_assert_eq(n, 2);
  cr_assert_eq(st[0].dev.major, 8);
  cr_assert_eq(st[0].wbytes, 314773504);
  cr_assert_eq(st[0].wios, 353);
  cr_assert_eq(st[1].dios, 10);
  cr_assert_eq(ioq_iostat_parse_v2(c, st, 1, &n, &e), 0);
  cr_assert_eq(n, 1, "bounded by max");
  cr_assert_eq(ioq_iostat_parse_v2("nonsense here\n", st, 4, &n, &e), -1);
}

Test(cgstat, iostat_v1_files) {
  char *root = fx_tmpdir();
  fx_write(root, "cg/blkio.throttle.read_bps_device", "");
  fx_write(root, "cg/blkio.throttle.io_service_bytes_recursive",
           "7:0 Read 4096\n7:0 Write 1048576\n7:0 Sync 0\n7:0 Async 0\n7:0 Discard 8\n"
           "7:0 Total 1052680\nTotal 1052680\n");
  fx_write(root, "cg/blkio.throttle.io_serviced_recursive",
           "7:0 Read 1\n7:0 Write 256\n7:0 Discard 2\nTotal 257\n");
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(fx_path(root, "cg"), IOQ_CGV_NONE, &cg, &e), 0, "%s", e.msg);
  struct ioq_iostat st[4];
  size_t n;
  cr_assert_eq(ioq_cg_read_iostat(&cg, st, 4, &n, &e), 0, "%s", e.msg);
  cr_assert_eq(n, 1);
  cr_assert_eq(st[0].rbytes, 4096);
  cr_assert_eq(st[0].wbytes, 1048576);
  cr_assert_eq(st[0].wios, 256);
  cr_assert_eq(st[0].dbytes, 8);
  cr_assert_eq(st[0].dios, 2);
  struct ioq_pressure p;
  cr_assert_eq(ioq_cg_read_pressure(&cg, &p, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  fx_rmtree(root);
  free(root);
}

Test(cgstat, pressure) {
  struct ioq_pressure p;
  ioq_err e = {0};
  cr_assert_eq(ioq_pressure_parse("some avg10=1.50 avg60=0.25 avg300=0.00 total=123456\n"
                                  "full avg10=0.75 avg60=0.00 avg300=0.00 total=99\n",
                                  &p, &e), 0, "%s", e.msg);
  cr_assert_float_eq(p.some.avg10, 1.5, 1e-9);
  cr_assert_eq(p.some.total_us, 123456);
  cr_assert(p.has_full);
  cr_assert_eq(p.full.total_us, 99);
  cr_assert_eq(ioq_pressure_parse("", &p, &e), -1);
  cr_assert_eq(ioq_pressure_parse("some avg10=x\n", &p, &e), -1);
}

/* check-only mode on a fake v2 tree */
Test(cgstat, controllers_check) {
  char *root = fx_tmpdir();
  fx_write(root, "cg/cgroup.controllers", "cpu io memory\n");
  fx_write(root, "cg/cgroup.subtree_control", "io memory\n");
  fx_write(root, "cg/kubepods.slice/cgroup.controllers", "io memory\n");
  fx_write(root, "cg/kubepods.slice/cgroup.subtree_control", "io\n");
  fx_write(root, "cg/kubepods.slice/pod.slice/cgroup.controllers", "io\n");
  const char *cgr = fx_path(root, "cg");
  char pod[PATH_MAX];
  snprintf(pod, sizeof pod, "%s/cg/kubepods.slice/pod.slice", root);
  ioq_err e = {0};
  unsigned n = 99;
  cr_assert_eq(ioq_cg_ensure_controllers(cgr, pod, IOQ_CTRL_IO, false, &n, &e), 0, "%s", e.msg);
  cr_assert_eq(n, 0);
  /* memory is offered in kubepods.slice but not enabled there */
  cr_assert_eq(ioq_cg_ensure_controllers(cgr, pod, IOQ_CTRL_IO | IOQ_CTRL_MEMORY, false, &n, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  cr_assert(strstr(e.msg, "memory controller") && strstr(e.msg, "kubepods.slice/cgroup.subtree_control"),
            "%s", e.msg);
  /* not offered at all: enabling cannot help, and the message says why */
  fx_write(root, "cg/kubepods.slice/cgroup.controllers", "io\n");
  cr_assert_eq(ioq_cg_ensure_controllers(cgr, pod, IOQ_CTRL_MEMORY, true, &n, &e), -1);
  cr_assert(strstr(e.msg, "not available in") && strstr(e.msg, "its parent does not enable it"),
            "%s", e.msg);
  /* outside the root, missing directories */
  cr_assert_eq(ioq_cg_ensure_controllers(cgr, "/elsewhere/x", IOQ_CTRL_IO, false, &n, &e), -1);
  cr_assert(strstr(e.msg, "not inside"), "%s", e.msg);
  snprintf(pod, sizeof pod, "%s/cg/kubepods.slice/nope/pod", root);
  cr_assert_eq(ioq_cg_ensure_controllers(cgr, pod, IOQ_CTRL_IO, false, &n, &e), -1);
  cr_assert_eq(e.code, ENOENT);
  /* the root itself has no ancestors to check */
  cr_assert_eq(ioq_cg_ensure_controllers(cgr, cgr, IOQ_CTRL_IO, false, &n, &e), 0, "%s", e.msg);
  fx_rmtree(root);
  free(root);
}

/* memory.stat's page cache waiting for the disk (lending: a stalled buffered writer is not idle) */
Test(cgstat, memstat_dirty) {
  uint64_t d, w;
  ioq_err e = {0};
  cr_assert_eq(ioq_memstat_dirty_parse("anon 4096\nfile 8192\nfile_dirty 1048576\nfile_writeback 4096\n"
                                       "shmem 0\n", &d, &w, &e), 0, "%s", e.msg);
  cr_assert_eq(d, 1048576);
  cr_assert_eq(w, 4096);
  cr_assert_eq(ioq_memstat_dirty_parse("file_writeback 1\nfile_dirty 2", &d, &w, &e), 0, "no final newline: %s", e.msg);
  cr_assert_eq(d, 2);
  cr_assert_eq(ioq_memstat_dirty_parse("anon 1\n", &d, &w, &e), -1);
  cr_assert_str_eq(e.msg, "memory.stat: no file_dirty line");
  cr_assert_eq(ioq_memstat_dirty_parse("file_dirty\n5\nfile_writeback 0\n", &d, &w, &e), -1,
               "a key without its value does not take the next line's");
  cr_assert_eq(ioq_memstat_dirty_parse("", &d, &w, &e), -1);
}

Test(cgstat, read_dirty_needs_v2_and_memory) {
  struct ioq_cg cg = {.version = IOQ_CGV1};
  uint64_t d, w;
  ioq_err e = {0};
  snprintf(cg.dir, sizeof cg.dir, "/nonexistent");
  cr_assert_eq(ioq_cg_read_dirty(&cg, &d, &w, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  cg.version = IOQ_CGV2;
  cr_assert_eq(ioq_cg_read_dirty(&cg, &d, &w, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED, "%s", e.msg);
  cr_assert(strstr(e.msg, "no memory.stat"), "%s", e.msg);
}

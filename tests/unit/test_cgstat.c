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

/* memory.stat: the page cache waiting for the disk (lending: a stalled
 * buffered writer is not idle) and the file LRU (the page cache bound) */
Test(cgstat, memstat_parse) {
  struct ioq_memstat m;
  ioq_err e = {0};
  cr_assert_eq(ioq_memstat_parse("anon 4096\nfile 8192\nkernel 100\nactive_file 3000\ninactive_file 5000\n"
                                 "file_dirty 1048576\nfile_writeback 4096\nshmem 7\n",
                                 IOQ_MEMSTAT_DIRTY | IOQ_MEMSTAT_WRITEBACK | IOQ_MEMSTAT_ACTIVE_FILE, &m, &e),
               0, "%s", e.msg);
  cr_assert_eq(m.file_dirty, 1048576);
  cr_assert_eq(m.file_writeback, 4096);
  cr_assert_eq(m.anon, 4096);
  cr_assert_eq(m.active_file, 3000);
  cr_assert_eq(m.inactive_file, 5000);
  cr_assert_eq(m.shmem, 7);
  cr_assert_eq(m.have, 0x7fu, "every known line seen: %#x", m.have);
  cr_assert_eq(ioq_memstat_parse("file_writeback 1\nfile_dirty 2", IOQ_MEMSTAT_DIRTY | IOQ_MEMSTAT_WRITEBACK, &m, &e),
               0, "no final newline: %s", e.msg);
  cr_assert_eq(m.file_dirty, 2);
  cr_assert_eq(ioq_memstat_parse("anon 1\n", IOQ_MEMSTAT_DIRTY, &m, &e), -1);
  cr_assert_str_eq(e.msg, "memory.stat: no file_dirty line");
  cr_assert_eq(ioq_memstat_parse("file_dirty 1\nfile_writeback 0\n", IOQ_MEMSTAT_DIRTY | IOQ_MEMSTAT_INACTIVE_FILE,
                                 &m, &e), -1);
  cr_assert_str_eq(e.msg, "memory.stat: no inactive_file line");
  cr_assert_eq(ioq_memstat_parse("file_dirty\n5\nfile_writeback 0\n", IOQ_MEMSTAT_DIRTY, &m, &e), -1,
               "a key without its value does not take the next line's");
  cr_assert_eq(ioq_memstat_parse("", IOQ_MEMSTAT_DIRTY, &m, &e), -1);
  cr_assert_eq(ioq_memstat_parse("", 0, &m, &e), 0, "nothing needed");
  /* a long line is skipped, not split */
  char big[300];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  char doc[400];
  snprintf(doc, sizeof doc, "%s 5\nfile_dirty 3\n", big);
  cr_assert_eq(ioq_memstat_parse(doc, IOQ_MEMSTAT_DIRTY, &m, &e), 0, "%s", e.msg);
  cr_assert_eq(m.file_dirty, 3);
}

Test(cgstat, memory_value_parse) {
  uint64_t v;
  cr_assert_eq(ioq_memory_value_parse("max\n", &v), 0);
  cr_assert_eq(v, IOQ_MEMORY_MAX);
  cr_assert_eq(ioq_memory_value_parse("67108864\n", &v), 0);
  cr_assert_eq(v, 67108864);
  cr_assert_eq(ioq_memory_value_parse("0", &v), 0);
  cr_assert_eq(v, 0);
  cr_assert_eq(ioq_memory_value_parse("", &v), -1);
  cr_assert_eq(ioq_memory_value_parse("\n", &v), -1);
  cr_assert_eq(ioq_memory_value_parse("-1\n", &v), -1);
  cr_assert_eq(ioq_memory_value_parse("12M\n", &v), -1, "the kernel prints bytes only");
  cr_assert_eq(ioq_memory_value_parse("99999999999999999999999\n", &v), -1, "overflow");
}

/* a pod cgroup on a temp tree: the four files read, memory.high written and read back */
Test(cgstat, read_and_write_memory) {
  char *root = fx_tmpdir();
  fx_write(root, "cg/cgroup.controllers", "io memory\n");
  fx_write(root, "cg/memory.stat", "anon 10485760\nfile 41943040\nactive_file 20971520\n"
                                   "inactive_file 16777216\nfile_dirty 1048576\nfile_writeback 2097152\n"
                                   "shmem 4194304\n");
  fx_write(root, "cg/memory.current", "60000000\n");
  fx_write(root, "cg/memory.high", "max\n");
  fx_write(root, "cg/memory.max", "max\n");
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/cg", root);
  struct ioq_cg cg = {.version = IOQ_CGV2};
  snprintf(cg.dir, sizeof cg.dir, "%s", dir);
  struct ioq_cg_memory m;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_read_memory(&cg, &m, &e), 0, "%s", e.msg);
  cr_assert_eq(m.current, 60000000);
  cr_assert_eq(m.high, IOQ_MEMORY_MAX);
  cr_assert_eq(m.max, IOQ_MEMORY_MAX);
  cr_assert_eq(m.stat.file_writeback, 2097152);
  /* pinned: usage minus the file LRU (tmpfs sits on the anon LRU: pinned) */
  cr_assert_eq(ioq_memory_pinned(&m), 60000000 - 20971520 - 16777216);
  struct ioq_cg_memory odd = m;
  odd.current = 1000;
  cr_assert_eq(ioq_memory_pinned(&odd), 0, "a racy read never underflows");

  uint64_t got = 0;
  cr_assert_eq(ioq_cg_write_memory_high(&cg, 67108864 + 100, &got, &e), 0, "%s", e.msg);
  cr_assert_eq(got, 67108864, "rounded down to whole pages, as the kernel keeps it");
  char *txt = fx_read(root, "cg/memory.high");
  cr_assert_str_eq(txt, "67108864");
  free(txt);
  cr_assert_eq(ioq_cg_write_memory_high(&cg, 1, &got, &e), 0, "%s", e.msg);
  cr_assert_eq(got, 4096, "at least one page");
  cr_assert_eq(ioq_cg_write_memory_high(&cg, IOQ_MEMORY_MAX, &got, &e), 0, "%s", e.msg);
  cr_assert_eq(got, IOQ_MEMORY_MAX);
  txt = fx_read(root, "cg/memory.high");
  cr_assert_str_eq(txt, "max");
  free(txt);

  /* garbage in the files: named errors, nothing guessed */
  fx_write(root, "cg/memory.max", "lots\n");
  cr_assert_eq(ioq_cg_read_memory(&cg, &m, &e), -1);
  cr_assert(strstr(e.msg, "memory.max: not a byte count"), "%s", e.msg);
  fx_write(root, "cg/memory.max", "max\n");
  fx_write(root, "cg/memory.current", "max\n");
  cr_assert_eq(ioq_cg_read_memory(&cg, &m, &e), -1);
  cr_assert(strstr(e.msg, "memory.current"), "%s", e.msg);
  fx_write(root, "cg/memory.current", "1\n");
  fx_write(root, "cg/memory.stat", "anon 1\nfile_dirty 0\nfile_writeback 0\n");
  cr_assert_eq(ioq_cg_read_memory(&cg, &m, &e), -1);
  cr_assert(strstr(e.msg, "no active_file line"), "%s", e.msg);
  cr_assert(strstr(e.msg, dir), "names the cgroup: %s", e.msg);

  /* no memory controller, and v1: unsupported, said so */
  char nomem[PATH_MAX];
  snprintf(nomem, sizeof nomem, "%s/nomem", root);
  fx_write(root, "nomem/io.max", "");
  struct ioq_cg c2 = {.version = IOQ_CGV2};
  snprintf(c2.dir, sizeof c2.dir, "%s", nomem);
  cr_assert_eq(ioq_cg_read_memory(&c2, &m, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  cr_assert_eq(ioq_cg_write_memory_high(&c2, 1 << 20, NULL, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  cr_assert(strstr(e.msg, "no memory.high"), "%s", e.msg);
  c2.version = IOQ_CGV1;
  cr_assert_eq(ioq_cg_write_memory_high(&c2, 1 << 20, NULL, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  /* a read-back that is not what was written: the kernel ignoring the write */
  fx_write(root, "bad/memory.stat", "");
  if (fx_swallower(root, "bad/memory.high")) {
    struct ioq_cg c3 = {.version = IOQ_CGV2};
    snprintf(c3.dir, sizeof c3.dir, "%s/bad", root);
    cr_assert_eq(ioq_cg_write_memory_high(&c3, 1 << 20, NULL, &e), -1);
    cr_assert(strstr(e.msg, "memory.high: not a byte count"), "%s", e.msg);
  }
  fx_rmtree(root);
  free(root);
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

// SPDX-License-Identifier: Apache-2.0
/* The record of nvmet.parent cgroups the plugin made namespace cgroups
 * under (plugin/daemon/state/nvmetparents.c): round trip, a save that fails
 * changes nothing, damaged or hostile files refused (a name in the file is
 * a cgroup the plugin may remove). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "state/nvmetparents.h"

Test(nvmetparents, round_trip) {
  char *dir = fx_tmpdir();
  char path[600];
  snprintf(path, sizeof path, "%s/nvmet-parents.json", dir);
  struct nvmet_parents ps;
  ioq_err e;
  cr_assert_eq(nvmet_parents_load(&ps, path, &e), 0, "a missing file is an empty list: %s", e.msg);
  cr_assert_eq(ps.n, 0);
  cr_assert_eq(nvmet_parents_add(&ps, "ioqos-nvmet.slice", &e), 0, "%s", e.msg);
  cr_assert_eq(nvmet_parents_add(&ps, "storage.slice/nvmet", &e), 0, "%s", e.msg);
  cr_assert_eq(nvmet_parents_add(&ps, "ioqos-nvmet.slice", &e), 0, "%s", e.msg);
  cr_assert_eq(ps.n, 2, "added once");
  char *text = fx_read(dir, "nvmet-parents.json");
  cr_assert_str_eq(text,
                   "{\"version\":1,\"parents\":[\"ioqos-nvmet.slice\",\"storage.slice\\/nvmet\"]}");
  free(text);
  nvmet_parents_free(&ps);

  cr_assert_eq(nvmet_parents_load(&ps, path, &e), 0, "%s", e.msg);
  cr_assert_eq(ps.n, 2);
  cr_assert(nvmet_parents_has(&ps, "storage.slice/nvmet"));
  cr_assert_eq(nvmet_parents_drop(&ps, "ioqos-nvmet.slice", &e), 0, "%s", e.msg);
  cr_assert_eq(nvmet_parents_drop(&ps, "not-there", &e), 0, "%s", e.msg);
  nvmet_parents_free(&ps);
  cr_assert_eq(nvmet_parents_load(&ps, path, &e), 0, "%s", e.msg);
  cr_assert_eq(ps.n, 1, "the drop was saved");
  cr_assert_str_eq(ps.v[0], "storage.slice/nvmet");
  nvmet_parents_free(&ps);

  /* no state dir: kept in memory only */
  cr_assert_eq(nvmet_parents_load(&ps, NULL, &e), 0);
  cr_assert_eq(nvmet_parents_add(&ps, "a", &e), 0, "%s", e.msg);
  cr_assert(nvmet_parents_has(&ps, "a"));
  nvmet_parents_free(&ps);
  fx_rmtree(dir);
  free(dir);
}

Test(nvmetparents, failed_save_changes_nothing_and_the_list_is_bounded) {
  char *dir = fx_tmpdir();
  fx_mkdir(dir, "gone");
  char sub[512], path[600];
  snprintf(sub, sizeof sub, "%s", fx_path(dir, "gone"));
  snprintf(path, sizeof path, "%s/nvmet-parents.json", sub);
  struct nvmet_parents ps;
  ioq_err e;
  cr_assert_eq(nvmet_parents_load(&ps, path, &e), 0, "%s", e.msg);
  cr_assert_eq(nvmet_parents_add(&ps, "a", &e), 0, "%s", e.msg);
  fx_rmtree(sub);
  fx_write(dir, "gone", "not a directory");
  cr_assert_eq(nvmet_parents_add(&ps, "b", &e), -1, "an add that is not saved must fail");
  cr_assert_not(nvmet_parents_has(&ps, "b"), "an add that was not saved is not kept");
  cr_assert_eq(nvmet_parents_drop(&ps, "a", &e), -1, "a drop that is not saved must fail");
  cr_assert(nvmet_parents_has(&ps, "a"), "a drop that was not saved keeps the parent");
  nvmet_parents_free(&ps);

  cr_assert_eq(nvmet_parents_load(&ps, NULL, &e), 0);
  for (int i = 0; i < NVMET_PARENTS_MAX; i++) {
    char name[16];
    snprintf(name, sizeof name, "p%d", i);
    cr_assert_eq(nvmet_parents_add(&ps, name, &e), 0, "%s", e.msg);
  }
  cr_assert_eq(nvmet_parents_add(&ps, "one-more", &e), -1);
  cr_assert(strstr(e.msg, "earlier nvmet.parent cgroups not yet removed"), "%s", e.msg);
  nvmet_parents_free(&ps);
  fx_rmtree(dir);
  free(dir);
}

/* arrays, not pointers: criterion runs each case in a fresh process */
struct bad_file {
  char content[200];
  char msg[80];
};

ParameterizedTestParameters(nvmetparents, bad_files) {
  static struct bad_file cases[] = {
      {"", "empty"},
      {"{\"version\":1,\"parents\":[\"a\"]", "truncated"},
      {"[]", "version is not 1"},
      {"{\"version\":2,\"parents\":[]}", "version is not 1"},
      {"{\"version\":1}", "parents is not an array"},
      {"{\"version\":1,\"parents\":[7]}", "parents[0] is not a string"},
      {"{\"version\":1,\"parents\":[\"ok\",\"../../system.slice\"]}", "parents[1] must not contain"},
      {"{\"version\":1,\"parents\":[\"/\"]}", "parents[0] must be a relative path"},
      {"{\"version\":1,\"parents\":[\"kubepods.slice\"]}", "parents[0] must not be inside kubelet"},
      {"{\"version\":1,\"parents\":[\"a b\"]}", "parents[0] may hold only"},
      {"{\"version\":1,\"parents\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\","
       "\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]}",
       "parents is not an array of at most 16"},
  };
  return cr_make_param_array(struct bad_file, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_file *c, nvmetparents, bad_files) {
  char *dir = fx_tmpdir();
  fx_write(dir, "nvmet-parents.json", c->content);
  char path[600];
  snprintf(path, sizeof path, "%s/nvmet-parents.json", dir);
  struct nvmet_parents ps;
  ioq_err e;
  cr_assert_eq(nvmet_parents_load(&ps, path, &e), -1, "%s loaded", c->content);
  cr_assert(strstr(e.msg, c->msg), "%s: got '%s', want '%s'", c->content, e.msg, c->msg);
  cr_assert(strstr(e.msg, "nvmet-parents.json"), "the file is named: %s", e.msg);
  cr_assert_eq(ps.n, 0, "nothing of a damaged file is kept");
  /* the next save rewrites it */
  cr_assert_eq(nvmet_parents_add(&ps, "ioqos-nvmet.slice", &e), 0, "%s", e.msg);
  nvmet_parents_free(&ps);
  cr_assert_eq(nvmet_parents_load(&ps, path, &e), 0, "%s", e.msg);
  cr_assert_eq(ps.n, 1);
  nvmet_parents_free(&ps);
  fx_rmtree(dir);
  free(dir);
}

// SPDX-License-Identifier: Apache-2.0
/* The plugin's init container grant state file (plugin/daemon/state/initstate.c):
 * round trip, and every way a torn or foreign file is refused whole. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "state/initstate.h"
#include "base/fsutil.h"

static const char *UID = "0f4a2d8e-1b6c-4f7a-9e3d-5c2b1a0f9e8d";

static struct init_record record(void) {
  struct init_record r;
  memset(&r, 0, sizeof r);
  snprintf(r.ns, sizeof r.ns, "default");
  snprintf(r.name, sizeof r.name, "db-0");
  snprintf(r.uid, sizeof r.uid, "%s", UID);
  snprintf(r.cgroup, sizeof r.cgroup, "/sys/fs/cgroup/kubepods.slice/x.slice");
  r.version = IOQ_CGV2;
  r.grant.n = 1;
  snprintf(r.grant.disks[0].disk, sizeof r.grant.disks[0].disk, "sda");
  r.grant.disks[0].units[IOQ_RES_BANDWIDTH] = 3;
  r.devs[0] = (struct ioq_devno){8, 0};
  static char *ids[] = {"sda-bw-0", "sda-bw-1", "sda-bw-2"};
  r.ids[IOQ_RES_BANDWIDTH] = ids;
  r.n_ids[IOQ_RES_BANDWIDTH] = 3;
  return r;
}

Test(initstate, round_trip) {
  struct init_record r[2] = {record(), record()};
  snprintf(r[1].uid, sizeof r[1].uid, "11111111-2222-3333-4444-555555555555");
  r[1].ids[IOQ_RES_BANDWIDTH] = NULL;
  r[1].n_ids[IOQ_RES_BANDWIDTH] = 0;
  r[1].grant.n = 0;
  r[1].init_unknown = true; /* no IDs: allowed only so */
  r[0].guess[IOQ_RES_BANDWIDTH] = true;
  char *text = initstate_format(r, 2);
  cr_assert(text);
  struct init_record *out;
  size_t n;
  ioq_err e;
  cr_assert_eq(initstate_parse(text, strlen(text), &out, &n, &e), 0, "%s", e.msg);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(out[0].uid, UID);
  cr_assert_str_eq(out[0].name, "db-0");
  cr_assert_eq(out[0].version, IOQ_CGV2);
  cr_assert_eq(out[0].grant.n, 1);
  cr_assert_str_eq(out[0].grant.disks[0].disk, "sda");
  cr_assert_eq(out[0].grant.disks[0].units[IOQ_RES_BANDWIDTH], 3);
  cr_assert_eq(out[0].devs[0].major, 8);
  cr_assert_eq(out[0].n_ids[IOQ_RES_BANDWIDTH], 3);
  cr_assert_str_eq(out[0].ids[IOQ_RES_BANDWIDTH][2], "sda-bw-2");
  cr_assert_eq(out[0].n_ids[IOQ_RES_IOPS], 0);
  cr_assert(!out[0].init_unknown);
  cr_assert(out[0].guess[IOQ_RES_BANDWIDTH]);
  cr_assert(!out[0].guess[IOQ_RES_IOPS]);
  cr_assert(!out[1].guess[IOQ_RES_BANDWIDTH]);
  cr_assert(out[1].init_unknown);
  initstate_free(out, n);
  free(text);
}

Test(initstate, load_and_missing_file) {
  char *root = fx_tmpdir();
  struct init_record r = record();
  char *text = initstate_format(&r, 1);
  ioq_err e;
  const char *path = fx_path(root, "state/" INITSTATE_FILE);
  cr_assert_eq(ioq_write_file_atomic(path, text, &e), 0, "%s", e.msg);
  struct init_record *out;
  size_t n;
  cr_assert_eq(initstate_load(path, &out, &n, &e), 0, "%s", e.msg);
  cr_assert_eq(n, 1);
  initstate_free(out, n);
  cr_assert_eq(initstate_load(fx_path(root, "nope.json"), &out, &n, &e), -1);
  cr_assert_eq(e.code, ENOENT);
  /* a torn file names itself */
  fx_write(root, "torn.json", "{\"version\": 1, \"pods\": [");
  cr_assert_eq(initstate_load(fx_path(root, "torn.json"), &out, &n, &e), -1);
  cr_assert(strstr(e.msg, "torn.json") && strstr(e.msg, "invalid JSON"), "%s", e.msg);
  cr_assert_null(out);
  free(text);
  fx_rmtree(root);
  free(root);
}

struct bad {
  char text[400];
  char want[64];
};

#define POD(extra)                                                                                \
  "{\"version\":1,\"pods\":[{\"uid\":\"0f4a2d8e-1b6c-4f7a-9e3d-5c2b1a0f9e8d\",\"namespace\":\"d\"," \
  "\"name\":\"p\",\"cgroup\":\"/c\",\"cgroupVersion\":2," extra "}]}"
#define GRANT "\"grant\":[{\"disk\":\"sda\",\"dev\":\"8:0\",\"bandwidth\":1,\"iops\":0}]"
#define IDS "\"initUnits\":{\"ioqos/bandwidth\":[\"sda-bw-0\"]}"

ParameterizedTestParameters(initstate, refused) {
  static struct bad b[] = {
      {"", "invalid JSON"},
      {"{\"version\":1,\"pods\":[]} x", "invalid JSON"},
      {"[]", "no version"},
      {"{\"version\":2,\"pods\":[]}", "unknown version 2"},
      {"{\"version\":\"1\",\"pods\":[]}", "no version"},
      {"{\"version\":1}", "pods: missing"},
      {"{\"version\":1,\"pods\":[7]}", "pods[0]: not an object"},
      {POD(GRANT "," IDS), ""}, /* the valid one the others break */
      {POD(IDS), "pods[0].grant: missing"},
      {POD(GRANT), "pods[0].initUnits: missing"},
      {POD(GRANT ",\"initUnits\":{}"), "no unit IDs"},
      {POD(GRANT ",\"initUnits\":{\"ioqos/bandwidth\":[\"sda-iops-0\"]}"), "not a unit ID"},
      {POD(GRANT ",\"initUnits\":{\"ioqos/bandwidth\":[\"../x\"]}"), "not a unit ID"},
      {POD(GRANT ",\"initUnits\":{\"ioqos/bandwidth\":\"sda-bw-0\"}"), "not an array"},
      {POD("\"grant\":[{\"disk\":\"sda\",\"dev\":\"8\",\"bandwidth\":1,\"iops\":0}]," IDS),
       "dev: missing or not MAJOR:MINOR"},
      {POD("\"grant\":[{\"disk\":\"sda\",\"dev\":\"8:0\",\"bandwidth\":-1,\"iops\":0}]," IDS),
       "bandwidth: missing or not a count"},
      {POD(GRANT "," IDS ",\"initUnknown\":1"), "initUnknown: not a boolean"},
      {POD(GRANT "," IDS ",\"initGuess\":[\"ioqos/disk\"]"), "initGuess[0]: not a resource"},
      {POD(GRANT "," IDS ",\"initGuess\":{}"), "initGuess: not an array"},
  };
  return cr_make_param_array(struct bad, b, sizeof b / sizeof b[0]);
}

ParameterizedTest(struct bad *b, initstate, refused) {
  struct init_record *out = (void *)1;
  size_t n = 99;
  ioq_err e = {0};
  int rc = initstate_parse(b->text, strlen(b->text), &out, &n, &e);
  if (!b->want[0]) {
    cr_assert_eq(rc, 0, "%s", e.msg);
    initstate_free(out, n);
    return;
  }
  cr_assert_eq(rc, -1, "accepted: %s", b->text);
  cr_assert(strstr(e.msg, b->want), "'%s' lacks '%s'", e.msg, b->want);
  cr_assert_null(out);
  cr_assert_eq(n, 0);
}

Test(initstate, field_checks) {
  /* fields the macros above cannot vary */
  const char *cases[][2] = {
      {"{\"version\":1,\"pods\":[{\"uid\":\"a/b\",\"namespace\":\"d\",\"name\":\"p\",\"cgroup\":"
       "\"/c\",\"cgroupVersion\":2," GRANT "," IDS "}]}",
       "pods[0].uid"},
      {"{\"version\":1,\"pods\":[{\"uid\":\"0f4a2d8e-1b6c-4f7a-9e3d-5c2b1a0f9e8d\",\"namespace\":"
       "\"d\",\"name\":\"p\",\"cgroup\":\"rel\",\"cgroupVersion\":2," GRANT "," IDS "}]}",
       "not an absolute path"},
      {"{\"version\":1,\"pods\":[{\"uid\":\"0f4a2d8e-1b6c-4f7a-9e3d-5c2b1a0f9e8d\",\"namespace\":"
       "\"d\",\"name\":\"p\",\"cgroup\":\"/c\",\"cgroupVersion\":3," GRANT "," IDS "}]}",
       "must be 1 or 2"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct init_record *out;
    size_t n;
    ioq_err e;
    cr_assert_eq(initstate_parse(cases[i][0], strlen(cases[i][0]), &out, &n, &e), -1);
    cr_assert(strstr(e.msg, cases[i][1]), "'%s' lacks '%s'", e.msg, cases[i][1]);
  }
  /* a name longer than Kubernetes allows */
  char big[1200];
  char name[300];
  memset(name, 'a', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  snprintf(big, sizeof big,
           "{\"version\":1,\"pods\":[{\"uid\":\"0f4a2d8e-1b6c-4f7a-9e3d-5c2b1a0f9e8d\","
           "\"namespace\":\"d\",\"name\":\"%s\",\"cgroup\":\"/c\",\"cgroupVersion\":2," GRANT
           "," IDS "}]}",
           name);
  struct init_record *out;
  size_t n;
  ioq_err e;
  cr_assert_eq(initstate_parse(big, strlen(big), &out, &n, &e), -1);
  cr_assert(strstr(e.msg, "pods[0].name: empty or longer than 253"), "%s", e.msg);
}

Test(initstate, too_many_disks_and_size_bound) {
  char text[4096] = "{\"version\":1,\"pods\":[{\"uid\":\"0f4a2d8e-1b6c-4f7a-9e3d-5c2b1a0f9e8d\","
                    "\"namespace\":\"d\",\"name\":\"p\",\"cgroup\":\"/c\",\"cgroupVersion\":2,"
                    "\"grant\":[";
  for (int i = 0; i <= IOQ_POD_DISKS_MAX; i++)
    snprintf(text + strlen(text), sizeof text - strlen(text),
             "%s{\"disk\":\"d%d\",\"dev\":\"8:%d\",\"bandwidth\":1,\"iops\":0}", i ? "," : "", i,
             i);
  snprintf(text + strlen(text), sizeof text - strlen(text), "]," IDS "}]}");
  struct init_record *out;
  size_t n;
  ioq_err e;
  cr_assert_eq(initstate_parse(text, strlen(text), &out, &n, &e), -1);
  cr_assert(strstr(e.msg, "more than 16 disks"), "%s", e.msg);
  /* the read is bounded: a file past the limit is refused before parsing */
  char *root = fx_tmpdir();
  const char *path = fx_path(root, "huge.json");
  FILE *f = fopen(path, "w");
  cr_assert(f);
  cr_assert_eq(fseek(f, INITSTATE_MAX_BYTES + 1, SEEK_SET), 0);
  fputc('}', f);
  fclose(f);
  cr_assert_eq(initstate_load(path, &out, &n, &e), -1);
  cr_assert(strstr(e.msg, "larger than"), "%s", e.msg);
  fx_rmtree(root);
  free(root);
}

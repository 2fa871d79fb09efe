// SPDX-License-Identifier: Apache-2.0
/* Fuzzes the streaming JSON filter (src/kube/kube_jfilter.c) with rules
 * shaped like the pod cache's, a small cost budget and the input split in
 * two chunks at a point the input chooses (chunk boundaries anywhere). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_jfilter.h"

static const struct ioq_jf_rule RES[] = {{"ioqos/bandwidth", 0, NULL}, {NULL, 0, NULL}};
static const struct ioq_jf_rule RESOURCES[] = {{"limits", IOQ_JF_ICASE, RES},
                                               {"requests", IOQ_JF_ICASE, RES},
                                               {NULL, 0, NULL}};
static const struct ioq_jf_rule CTR[] = {{"name", IOQ_JF_ICASE, NULL},
                                         {"resources", IOQ_JF_ICASE, RESOURCES},
                                         {NULL, 0, NULL}};
static const struct ioq_jf_rule SPEC[] = {{"containers", IOQ_JF_ICASE, CTR}, {NULL, 0, NULL}};
static const struct ioq_jf_rule POD[] = {{"metadata", IOQ_JF_ICASE, NULL}, /* kept whole */
                                         {"spec", IOQ_JF_ICASE, SPEC},
                                         {NULL, 0, NULL}};
static const struct ioq_jf_rule LIST[] = {{"continue", 0, NULL},
                                          {"items", IOQ_JF_UNIT, POD},
                                          {NULL, 0, NULL}};
static const struct ioq_jf_rule ROOT = {"", 0, LIST};

static void on_unit(void *ud, json_object *u, bool truncated) {
  (void)ud;
  json_object *m;
  /* the mark is there exactly when the unit (an object) was cut */
  if (json_object_is_type(u, json_type_object) &&
      json_object_object_get_ex(u, IOQ_JF_TRUNCATED_KEY, &m) != truncated)
    abort();
  (void)json_object_to_json_string(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t split = size ? data[0] % (size + 1) : 0;
  ioq_err e = {0};
  struct ioq_jf *f = ioq_jf_new(&ROOT, 2048, on_unit, NULL, &e);
  if (!f)
    abort();
  json_object *root = NULL;
  int rc = ioq_jf_feed(f, (const char *)data, split, &e);
  if (rc == 0)
    rc = ioq_jf_feed(f, (const char *)data + split, size - split, &e);
  if (rc == 0)
    rc = ioq_jf_finish(f, &root, &e);
  if (rc < 0 && !e.msg[0])
    abort();
  json_object_put(root);
  ioq_jf_free(f);
  return 0;
}

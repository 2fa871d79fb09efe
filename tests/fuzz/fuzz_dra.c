// SPDX-License-Identifier: Apache-2.0
/* Fuzzes the DRA readers of API objects: a ResourceClaim into this driver's
 * allocation (dra/draclaim.h), and a ResourceSlice compared by content with
 * the one the node would publish (dra/draslice.h). */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dra/draclaim.h"
#include "dra/draslice.h"
#include "base/jsonparse.h"

#define UID "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"

static void disks(struct ioq_disk d[2]) {
  memset(d, 0, 2 * sizeof *d);
  strcpy(d[0].dev.name, "sda");
  strcpy(d[1].dev.name, "nvme0n1");
  for (int i = 0; i < 2; i++) {
    strcpy(d[i].class_name, "default");
    d[i].enforceable = true;
    d[i].units[IOQ_RES_BANDWIDTH] = 1800;
    d[i].units[IOQ_RES_IOPS] = 50;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct ioq_dra_claim c;
  struct ioq_disk d[2];
  disks(d);
  const struct ioq_dra_claim_want want = {.uid = UID, .driver = IOQ_DRA_DRIVER, .pool = "node-a",
                                          .disks = d, .n_disks = 2};
  ioq_err e = {0};
  if (ioq_dra_claim_parse((const char *)data, size, &want, &c, &e) == 0) {
    if (c.n_shares == 0 || c.n_shares > IOQ_DRA_MAX_RESULTS || c.n_pods == 0 ||
        strcmp(c.uid, UID) != 0)
      abort();
    for (size_t i = 0; i < c.n_shares; i++)
      if (c.shares[i].disk >= 2 || c.shares[i].units[IOQ_RES_BANDWIDTH] > 1800 ||
          c.shares[i].units[IOQ_RES_IOPS] > 50)
        abort();
  } else if (!e.msg[0] || c.n_shares || c.n_pods) {
    abort();
  }

  json_object *got = NULL;
  ioq_err pe;
  if (ioq_json_parse_strict((const char *)data, size, 1u << 20, "slice", &got, &pe) == 0) {
    struct ioq_unit_sizes u;
    ioq_unit_sizes_default(&u);
    const struct ioq_dra_slice_in in = {.driver = IOQ_DRA_DRIVER, .node_name = "node-a",
                                        .node_uid = UID, .units = &u, .disks = d, .n_disks = 2};
    json_object *mine = NULL;
    if (ioq_dra_slice_build(&in, &mine, NULL, &pe) != 0)
      abort();
    /* symmetric, and the built slice equals itself */
    if (ioq_dra_slice_same_content(got, mine) != ioq_dra_slice_same_content(mine, got) ||
        !ioq_dra_slice_same_content(mine, mine))
      abort();
    json_object_put(mine);
    json_object_put(got);
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
/* Fuzzes the node annotation codec (ioqos.io/devices): anything that parses
 * must format to text that parses to the same state, and the extender's
 * reading of the annotation (including the optional pod list) must hold. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "grant/nodeanno.h"
#include "nodeinfo.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  ioq_log_set_level(IOQ_LOG_ERROR);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ioq_node_state st;
  ioq_err e = {0};
  if (ioq_node_anno_parse((const char *)data, size, &st, &e) == 0) {
    char *txt = ioq_node_anno_format(&st);
    if (!txt)
      abort();
    struct ioq_node_state again;
    if (ioq_node_anno_parse(txt, strlen(txt), &again, &e) != 0)
      abort(); /* what we write we must read */
    char *txt2 = ioq_node_anno_format(&again);
    if (!txt2 || strcmp(txt, txt2) != 0)
      abort(); /* formatting is a fixed point */
    if (again.n_disks != st.n_disks)
      abort();
    free(txt);
    free(txt2);
    ioq_node_state_free(&again);
    ioq_node_state_free(&st);
  } else if (!e.msg[0]) {
    abort(); /* every failure says why */
  }
  struct ext_nodeinfo ni;
  ext_nodeinfo_from_anno("fuzz-node", (const char *)data, size, &ni);
  if (ni.status != EXT_NODE_OK && !ni.error)
    abort();
  ext_nodeinfo_free(&ni);
  return 0;
}

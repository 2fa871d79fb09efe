// SPDX-License-Identifier: Apache-2.0
/* Fuzzes the node configuration reader in both syntaxes (YAML through
 * yamljson.c, JSON through json-c), with and without node labels (pools):
 * every input is accepted or refused with a message, never crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "base/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  ioq_log_set_level(IOQ_LOG_ERROR);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  json_object *labels = json_tokener_parse("{\"pool\": \"fast\", \"zone\": \"a\"}");
  static const char *const sources[] = {"f.yaml", "f.json"};
  for (int i = 0; i < 2; i++)
    for (int l = 0; l < 2; l++) {
      struct ioq_config c;
      ioq_err e = {0};
      if (ioq_config_parse_node(text, sources[i], l ? labels : NULL, &c, &e) == 0) {
        if (c.n_pools > IOQ_CONFIG_MAX_POOLS || (c.pool && !l))
          abort();
        ioq_config_free(&c);
      } else if (!e.msg[0] || c.source) {
        abort(); /* every failure says why and frees */
      }
    }
  json_object_put(labels);
  free(text);
  return 0;
}

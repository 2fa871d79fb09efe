// SPDX-License-Identifier: Apache-2.0
/* `ioqosctl explain --nvmet`: the plugin's GET /v1/nvmet document
 * (plugin/daemon/core/nvmetns.h) as one screen. Pure formatting. */
#ifndef IOQOS_CTL_EXPLAIN_NVMET_H
#define IOQOS_CTL_EXPLAIN_NVMET_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

/* -1 with err when the document is not the plugin's nvmet state */
int explain_nvmet_render(FILE *out, json_object *doc, char *err, size_t errsz);

#endif

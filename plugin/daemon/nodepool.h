// SPDX-License-Identifier: Apache-2.0
#ifndef IOQOS_NODEPOOL_H
#define IOQOS_NODEPOOL_H

#include "ioqos/config.h"
#include "ioqos/kube/kube.h"

/* When *cfg (loaded from config_path) has pools: GETs the Node and replaces
 * *cfg with the file loaded for its labels (the first matching pool, else
 * the top level). A Node that cannot be read is an error: a pool's disks are
 * never guessed. No pools: nothing to do. */
int nodepool_select(struct ioq_kube *k, const char *node, const char *config_path,
                    struct ioq_config *cfg, ioq_err *e);

#endif

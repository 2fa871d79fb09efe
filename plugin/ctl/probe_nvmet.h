// SPDX-License-Identifier: Apache-2.0
/* The NVMe-oF target part of `ioqosctl probe` (nvmet/nvmet.h): what the
 * node exports and whether its kernel can charge a namespace to a cgroup. */
#ifndef IOQOS_CTL_PROBE_NVMET_H
#define IOQOS_CTL_PROBE_NVMET_H

#include "nvmet/nvmet.h"
#include "nvmet/nvmetplan.h"

/* plan: what config nvmet gives each namespace (empty without entries) */
void probe_nvmet_text(const struct ioq_nvmet_inventory *inv, const struct ioq_nvmet_plan *plan);

#endif

// SPDX-License-Identifier: Apache-2.0
#include "probe_nvmet.h"

#include <stdio.h>
#include <string.h>

static const struct ioq_nvmet_plan_ns *planned(const struct ioq_nvmet_plan *p,
                                               const struct ioq_nvmet_ns *ns) {
  for (size_t i = 0; i < p->n; i++)
    if (!strcmp(p->ns[i].subsystem, ns->subsystem) && p->ns[i].nsid == ns->nsid)
      return &p->ns[i];
  return NULL;
}

void probe_nvmet_text(const struct ioq_nvmet_inventory *inv, const struct ioq_nvmet_plan *plan) {
  printf("\nnvmet (NVMe-oF target): %s\n", ioq_nvmet_state_name(inv->state));
  if (inv->state == IOQ_NVMET_PRESENT)
    printf("  %c nvmet.cgroup_id   %s\n", inv->cgroup_id == IOQ_NVMET_CGID_PRESENT ? '+' : '-',
           inv->reason);
  else
    printf("  %s\n", inv->reason);
  for (size_t i = 0; i < inv->n; i++) {
    const struct ioq_nvmet_ns *ns = &inv->ns[i];
    printf("  namespace %s/%u: %s, buffered_io %s, %s", ns->subsystem, ns->nsid,
           ns->enabled ? "enabled" : "disabled",
           ns->buffered_io < 0 ? "(none)"
           : ns->buffered_io   ? "on"
                               : "off",
           ns->backing);
    if (ns->has_cgroup_id)
      printf(", cgroup_id %llu", (unsigned long long)ns->cgroup_id);
    printf("\n");
    const struct ioq_nvmet_plan_ns *pn = planned(plan, ns);
    if (pn)
      printf("    ioqos: %s: %s\n", ioq_nvmet_verdict_name(pn->verdict), pn->why);
  }
  for (size_t i = 0; i < plan->n_unmatched; i++)
    printf("  ! %s\n", plan->unmatched[i]);
}

// SPDX-License-Identifier: Apache-2.0
/* The init-only PreStart heuristic (plugin/daemon/core/initpick.c): which pod a
 * PreStart that no listed container explains may be for. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/initpick.h"

static struct pod_info pending(uint64_t init_units, uint64_t app_units) {
  struct pod_info pi;
  memset(&pi, 0, sizeof pi);
  snprintf(pi.ns, sizeof pi.ns, "default");
  snprintf(pi.name, sizeof pi.name, "db-0");
  snprintf(pi.phase, sizeof pi.phase, "Pending");
  pi.ctrs[0].kind = IOQ_CTR_INIT;
  pi.ctrs[0].units[IOQ_RES_BANDWIDTH] = init_units;
  pi.ctrs[1].kind = IOQ_CTR_APP;
  pi.ctrs[1].units[IOQ_RES_IOPS] = app_units;
  pi.n_ctrs = 2;
  return pi;
}

Test(initpick, pending_pod_asking_exactly_n_is_a_candidate) {
  struct pod_info pi = pending(3, 0);
  cr_assert(initpick_may_ask(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 3));
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 3, -1), INITPICK_MAYBE);
  /* a guess made earlier on another ambiguous PreStart keeps it a candidate */
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 3, 2), INITPICK_MAYBE);
}

Test(initpick, holder_of_these_units_is_the_asker) {
  struct pod_info pi = pending(3, 0);
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 3, 1), INITPICK_ASKER);
}

Test(initpick, holder_of_other_units_is_not_a_candidate) {
  struct pod_info pi = pending(3, 0);
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 3, 0), INITPICK_NO);
}

Test(initpick, count_resource_and_container_kind_must_match) {
  struct pod_info pi = pending(3, 5);
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 2, -1), INITPICK_NO);
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 4, -1), INITPICK_NO);
  /* the app container asks for 5 IOPS units: not an init container */
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_IOPS, 5, -1), INITPICK_NO);
  pi.ctrs[1].kind = IOQ_CTR_SIDECAR;
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_IOPS, 5, -1), INITPICK_NO);
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_COUNT, 3, -1), INITPICK_NO);
}

Test(initpick, a_pod_kubelet_lists_units_of_r_for_is_not_a_candidate) {
  struct pod_info pi = pending(3, 0);
  cr_assert_eq(initpick_judge(&pi, 1, "sda", IOQ_RES_BANDWIDTH, 3, -1), INITPICK_NO);
  cr_assert_eq(initpick_judge(&pi, 1, "sda", IOQ_RES_BANDWIDTH, 3, 1), INITPICK_NO);
}

Test(initpick, only_pending_pods_not_being_deleted) {
  const char *phases[] = {"Running", "Succeeded", "Failed", "Unknown", ""};
  for (size_t i = 0; i < sizeof phases / sizeof *phases; i++) {
    struct pod_info pi = pending(3, 0);
    snprintf(pi.phase, sizeof pi.phase, "%s", phases[i]);
    cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 3, 1), INITPICK_NO, "%s",
                 phases[i]);
  }
  struct pod_info pi = pending(3, 0);
  pi.terminating = true;
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 3, -1), INITPICK_NO);
}

Test(initpick, placed_pods_only_on_the_units_disk) {
  struct pod_info pi = pending(3, 0);
  snprintf(pi.need.disk, sizeof pi.need.disk, "sdb");
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 3, -1), INITPICK_NO);
  cr_assert_eq(initpick_judge(&pi, 0, "sdb", IOQ_RES_BANDWIDTH, 3, -1), INITPICK_MAYBE);
}

Test(initpick, a_later_init_container_counts_too) {
  struct pod_info pi = pending(1, 0);
  pi.ctrs[2] = pi.ctrs[1];
  pi.ctrs[1].kind = IOQ_CTR_INIT;
  pi.ctrs[1].units[IOQ_RES_BANDWIDTH] = 7;
  pi.n_ctrs = 3;
  cr_assert_eq(initpick_judge(&pi, 0, "sda", IOQ_RES_BANDWIDTH, 7, -1), INITPICK_MAYBE);
}

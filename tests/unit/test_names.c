// SPDX-License-Identifier: Apache-2.0
/* Name validators of every name that reaches a file path or a URL path from
 * API or kubelet input (issue 12 item 13): "." and "..", empty and '/' are
 * refused everywhere, valid Kubernetes names are not. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "base/k8sname.h"
#include "cgroup/podcg.h"
#include "grant/podneed.h"
#include "units/units.h"

static const char *const k_hostile[] = {"", ".", "..", "/", "../x", "a/b", "..%2f", "%2e%2e"};

Test(names, namespace_is_a_dns_label) {
  cr_assert(ioq_k8s_label_valid("default"));
  cr_assert(ioq_k8s_label_valid("kube-system"));
  cr_assert(ioq_k8s_label_valid("a"));
  char max[64];
  memset(max, 'a', 63);
  max[63] = '\0';
  cr_assert(ioq_k8s_label_valid(max));
  char over[65];
  memset(over, 'a', 64);
  over[64] = '\0';
  cr_assert_not(ioq_k8s_label_valid(over));
  for (size_t i = 0; i < sizeof k_hostile / sizeof *k_hostile; i++)
    cr_assert_not(ioq_k8s_label_valid(k_hostile[i]), "'%s' accepted", k_hostile[i]);
  cr_assert_not(ioq_k8s_label_valid(NULL));
  cr_assert_not(ioq_k8s_label_valid("a.b"));  /* a namespace has no dots */
  cr_assert_not(ioq_k8s_label_valid("-a"));
  cr_assert_not(ioq_k8s_label_valid("a-"));
  cr_assert_not(ioq_k8s_label_valid("Default"));
  cr_assert_not(ioq_k8s_label_valid("a b"));
}

Test(names, pod_name_is_a_dns_subdomain) {
  cr_assert(ioq_k8s_subdomain_valid("web-0"));
  cr_assert(ioq_k8s_subdomain_valid("db.example.com"));
  /* one part longer than 63: valid for a pod name (only namespaces are labels) */
  char long_part[201];
  memset(long_part, 'x', 200);
  long_part[200] = '\0';
  cr_assert(ioq_k8s_subdomain_valid(long_part));
  char over[255];
  memset(over, 'x', 254);
  over[254] = '\0';
  cr_assert_not(ioq_k8s_subdomain_valid(over));
  for (size_t i = 0; i < sizeof k_hostile / sizeof *k_hostile; i++)
    cr_assert_not(ioq_k8s_subdomain_valid(k_hostile[i]), "'%s' accepted", k_hostile[i]);
  cr_assert_not(ioq_k8s_subdomain_valid(NULL));
  cr_assert_not(ioq_k8s_subdomain_valid("a..b"));
  cr_assert_not(ioq_k8s_subdomain_valid(".a"));
  cr_assert_not(ioq_k8s_subdomain_valid("a."));
  cr_assert_not(ioq_k8s_subdomain_valid("a.-b"));
}

/* disk names become /sys/class/block/NAME */
Test(names, disk_name_refuses_dot_and_dotdot) {
  cr_assert(ioq_disk_name_valid("sda"));
  cr_assert(ioq_disk_name_valid("cciss!c0d0"));
  cr_assert(ioq_disk_name_valid("a.b"));
  for (size_t i = 0; i < sizeof k_hostile / sizeof *k_hostile; i++)
    cr_assert_not(ioq_disk_name_valid(k_hostile[i]), "'%s' accepted", k_hostile[i]);
}

Test(names, class_name_refuses_dot_and_dotdot) {
  cr_assert(ioq_class_name_valid("fast"));
  cr_assert(ioq_class_name_valid("pool.a"));
  for (size_t i = 0; i < sizeof k_hostile / sizeof *k_hostile; i++)
    cr_assert_not(ioq_class_name_valid(k_hostile[i]), "'%s' accepted", k_hostile[i]);
}

/* pod UIDs become pod<UID> cgroup directory names */
Test(names, pod_uid_refuses_dot_and_dotdot) {
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_uid_check("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", &e), 0, "%s", e.msg);
  for (size_t i = 0; i < sizeof k_hostile / sizeof *k_hostile; i++)
    cr_assert_eq(ioq_pod_uid_check(k_hostile[i], &e), -1, "'%s' accepted", k_hostile[i]);
}

/* The ioqos.io/disk annotation is tenant input (any pod may carry it). */
Test(names, disk_annotation_dotdot_refused) {
  static const char *const bad[] = {"..", "."};
  for (size_t i = 0; i < 2; i++) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u\",\"annotations\":"
             "{\"ioqos.io/disk\":\"%s\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
             bad[i]);
    struct ioq_pod_need n;
    ioq_err e = {0};
    cr_assert_eq(ioq_pod_need_parse(json, strlen(json), &n, &e), -1, "'%s' accepted", bad[i]);
    cr_assert(strstr(e.msg, "ioqos.io/disk"), "%s", e.msg);
  }
}

// SPDX-License-Identifier: Apache-2.0
/* The config section `nvmet` (docs/configuration.md):
 *
 *   nvmet:
 *     parent: ioqos-nvmet.slice          # below the cgroup2 root
 *     allowNamespaceRestart: false
 *     namespaces:
 *     - subsystem: nqn.2014-08.org.example:store1
 *       nsid: 1                          # absent: every namespace of it
 *       grant: {bandwidth: 100, iops: 20}     # units, like a pod's
 *       # or limits: {rbps: N, wbps: N, riops: N, wiops: N}   (raw io.max)
 *       weight: 500                      # optional io.weight
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

void cfg_nvmet_free(struct ioq_config *c) {
  for (size_t i = 0; i < c->nvmet.n; i++)
    free(c->nvmet.ns[i].subsystem);
  free(c->nvmet.ns);
  free(c->nvmet.parent);
  c->nvmet.ns = NULL;
  c->nvmet.n = 0;
  c->nvmet.parent = NULL;
}

/* A cgroup path below the root: components of [A-Za-z0-9._@:-], none "."
 * or "..", not in kubelet's tree (kubelet removes cgroups it does not know
 * there). */
const char *ioq_nvmet_parent_problem(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 200)
    return "must be 1-200 characters";
  if (s[0] == '/' || s[n - 1] == '/')
    return "must be a relative path below the cgroup2 root, without a leading or trailing '/'";
  if (strncmp(s, "kubepods", 8) == 0)
    return "must not be inside kubelet's kubepods tree (kubelet removes cgroups it did not make)";
  const char *p = s;
  while (*p) {
    size_t k = strcspn(p, "/");
    if (k == 0)
      return "must not contain an empty component ('//')";
    if ((k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
      return "must not contain '.' or '..'";
    for (size_t i = 0; i < k; i++) {
      char ch = p[i];
      bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                ch == '.' || ch == '_' || ch == '-' || ch == '@' || ch == ':';
      if (!ok)
        return "may hold only A-Z a-z 0-9 . _ - @ : and '/' between components";
    }
    p += k;
    if (*p == '/')
      p++;
  }
  return NULL;
}

const char *ioq_nvmet_nqn_problem(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > IOQ_NVMET_NQN_MAX)
    return "must be an NQN of 1-223 characters";
  if (!strcmp(s, ".") || !strcmp(s, ".."))
    return "must be an NQN, not '.' or '..'";
  for (size_t i = 0; i < n; i++)
    if (s[i] == '/' || (unsigned char)s[i] < 0x21 || (unsigned char)s[i] == 0x7f)
      return "must not contain '/', spaces or control characters";
  return NULL;
}

static int parse_grant(struct ctx *x, json_object *g, const char *path,
                       struct ioq_nvmet_ns_config *ns) {
  static const char *const keys[] = {"bandwidth", "iops", NULL};
  char p[256];
  if (cfg_check_keys(x, g, path, keys) < 0)
    return -1;
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    const char *k = r == IOQ_RES_BANDWIDTH ? "bandwidth" : "iops";
    snprintf(p, sizeof p, "%s.%s", path, k);
    if (cfg_get_uint(x, g, k, p, &ns->units[r], 1, IOQ_MAX_UNITS_PER_NODE) < 0)
      return -1;
  }
  if (!ns->units[IOQ_RES_BANDWIDTH] && !ns->units[IOQ_RES_IOPS])
    return cfg_bad(x, path, "must set bandwidth or iops (units, as a pod asks for them)");
  return 0;
}

static int parse_limits(struct ctx *x, json_object *l, const char *path,
                        struct ioq_nvmet_ns_config *ns) {
  static const char *const keys[] = {"rbps", "wbps", "riops", "wiops", NULL};
  char p[256];
  if (cfg_check_keys(x, l, path, keys) < 0)
    return -1;
  bool any = false;
  for (int k = 0; k < IOQ_LIMIT_KEYS; k++) {
    const char *name = ioq_limit_key_name((enum ioq_limit_key)k);
    uint64_t v = 0;
    snprintf(p, sizeof p, "%s.%s", path, name);
    /* io.max takes no value below 2 (the kernel says EINVAL to 0 and 1) */
    bool bytes = k == IOQ_RBPS || k == IOQ_WBPS;
    if (cfg_get_uint(x, l, name, p, &v, 2, bytes ? UINT64_MAX >> 4 : 1000000000ull) < 0)
      return -1;
    ioq_limits_set(&ns->limits, (enum ioq_limit_key)k, v);
    any |= v != 0;
  }
  if (!any)
    return cfg_bad(x, path, "must set at least one of rbps, wbps, riops, wiops");
  return 0;
}

static int parse_ns(struct ctx *x, json_object *o, size_t i, struct ioq_nvmet_ns_config *ns) {
  char path[96], p[160];
  snprintf(path, sizeof path, "nvmet.namespaces[%zu]", i);
  if (!json_object_is_type(o, json_type_object))
    return cfg_bad(x, path, "must be an object");
  static const char *const keys[] = {"subsystem", "nsid", "grant", "limits", "weight", NULL};
  if (cfg_check_keys(x, o, path, keys) < 0)
    return -1;
  snprintf(p, sizeof p, "%s.subsystem", path);
  if (!json_object_object_get_ex(o, "subsystem", NULL))
    return cfg_bad(x, p, "is required (the subsystem's NQN, its directory name in configfs)");
  if (cfg_get_string(x, o, "subsystem", p, &ns->subsystem, false) < 0)
    return -1;
  const char *why = ioq_nvmet_nqn_problem(ns->subsystem);
  if (why)
    return cfg_bad(x, p, why);
  uint64_t nsid = 0, w = 0;
  snprintf(p, sizeof p, "%s.nsid", path);
  if (cfg_get_uint(x, o, "nsid", p, &nsid, 1, UINT32_MAX) < 0)
    return -1;
  ns->nsid = (uint32_t)nsid;
  snprintf(p, sizeof p, "%s.weight", path);
  if (cfg_get_uint(x, o, "weight", p, &w, 1, 10000) < 0)
    return -1;
  ns->weight = (unsigned)w;
  json_object *g, *l;
  char pg[160], pl[160];
  snprintf(pg, sizeof pg, "%s.grant", path);
  snprintf(pl, sizeof pl, "%s.limits", path);
  if (cfg_get_object(x, o, "grant", pg, &g) < 0 || cfg_get_object(x, o, "limits", pl, &l) < 0)
    return -1;
  if (g && l)
    return cfg_bad(x, pl,
                   "and grant exclude each other: give units (grant) or io.max values (limits)");
  if (!g && !l)
    return cfg_bad(x, path, "needs grant (bandwidth/iops units) or limits (raw io.max values)");
  ns->raw = l != NULL;
  return g ? parse_grant(x, g, pg, ns) : parse_limits(x, l, pl, ns);
}

int cfg_parse_nvmet(struct ctx *x, json_object *root, struct ioq_config *c) {
  json_object *nv, *arr;
  if (cfg_get_object(x, root, "nvmet", "nvmet", &nv) < 0)
    return -1;
  if (!nv)
    return 0;
  static const char *const keys[] = {"parent", "allowNamespaceRestart", "namespaces", NULL};
  if (cfg_check_keys(x, nv, "nvmet", keys) < 0 ||
      cfg_get_string(x, nv, "parent", "nvmet.parent", &c->nvmet.parent, false) < 0 ||
      cfg_get_bool(x, nv, "allowNamespaceRestart", "nvmet.allowNamespaceRestart",
                   &c->nvmet.allow_namespace_restart) < 0)
    return -1;
  const char *why = ioq_nvmet_parent_problem(c->nvmet.parent);
  if (why)
    return cfg_bad(x, "nvmet.parent", why);
  if (!json_object_object_get_ex(nv, "namespaces", &arr))
    return 0;
  if (!json_object_is_type(arr, json_type_array))
    return cfg_bad(x, "nvmet.namespaces", "must be an array");
  size_t n = json_object_array_length(arr);
  if (n > IOQ_CONFIG_MAX_NVMET_NS)
    return cfg_bad(x, "nvmet.namespaces", "more than 256 entries");
  c->nvmet.ns = calloc(n ? n : 1, sizeof *c->nvmet.ns);
  if (!c->nvmet.ns)
    return ioq_fail(x->e, ENOMEM, "%s: out of memory for %zu nvmet namespaces", x->src, n);
  for (size_t i = 0; i < n; i++) {
    c->nvmet.n = i + 1;
    struct ioq_nvmet_ns_config *ns = &c->nvmet.ns[i];
    if (parse_ns(x, json_object_array_get_idx(arr, i), i, ns) < 0)
      return -1;
    for (size_t j = 0; j < i; j++) {
      const struct ioq_nvmet_ns_config *o = &c->nvmet.ns[j];
      if (strcmp(o->subsystem, ns->subsystem) != 0)
        continue;
      char p[96], msg[160];
      snprintf(p, sizeof p, "nvmet.namespaces[%zu]", i);
      if (o->nsid == ns->nsid) {
        snprintf(msg, sizeof msg, "selects the same namespace%s as nvmet.namespaces[%zu]",
                 ns->nsid ? "" : "s", j);
        return cfg_bad(x, p, msg);
      }
      if (!o->nsid) {
        snprintf(msg, sizeof msg,
                 "is never used: nvmet.namespaces[%zu] before it selects every namespace of this "
                 "subsystem (put the entry with nsid first)",
                 j);
        return cfg_bad(x, p, msg);
      }
    }
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
/* kubeconfig reader (kubeconfig.h): YAML through the config's YAML reader. */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <json-c/json.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/yamljson.h"

struct kc_ctx {
  const char *path;
  char dir[4096]; /* the file's directory: base of relative paths */
  ioq_err *e;
};

static int kc_bad(struct kc_ctx *x, json_object *at, const char *field, const char *what) {
  unsigned line = ioq_yaml_line(at);
  if (line)
    return ioq_fail(x->e, IOQ_EINVAL_INPUT, "kubeconfig %s: line %u: %s: %s", x->path, line, field,
                    what);
  return ioq_fail(x->e, IOQ_EINVAL_INPUT, "kubeconfig %s: %s: %s", x->path, field, what);
}

/* A string member; absent = *out NULL. */
static int kc_string(struct kc_ctx *x, json_object *obj, const char *key, const char *field,
                     const char **out) {
  json_object *v;
  *out = NULL;
  if (!json_object_object_get_ex(obj, key, &v) || !v)
    return 0;
  if (!json_object_is_type(v, json_type_string))
    return kc_bad(x, v, field, "must be a string");
  *out = json_object_get_string(v);
  if (!**out)
    *out = NULL; /* kubectl treats "" as unset */
  return 0;
}

/* The entry of list `list` ("clusters", "users", "contexts") called `name`,
 * its member `member` ("cluster", ...). */
static int kc_find(struct kc_ctx *x, json_object *root, const char *list, const char *member,
                   const char *name, json_object **out) {
  json_object *arr;
  char field[160];
  if (!json_object_object_get_ex(root, list, &arr) || !json_object_is_type(arr, json_type_array))
    return kc_bad(x, root, list, "missing or not a list");
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *it = json_object_array_get_idx(arr, i), *n;
    if (!json_object_is_type(it, json_type_object) || !json_object_object_get_ex(it, "name", &n) ||
        !json_object_is_type(n, json_type_string) || strcmp(json_object_get_string(n), name) != 0)
      continue;
    snprintf(field, sizeof field, "%s[%zu].%s", list, i, member);
    if (!json_object_object_get_ex(it, member, out) || !json_object_is_type(*out, json_type_object))
      return kc_bad(x, it, field, "missing or not a mapping");
    return 0;
  }
  snprintf(field, sizeof field, "%s", list);
  char what[200];
  snprintf(what, sizeof what, "no entry named '%.100s'", name);
  return kc_bad(x, arr, field, what);
}

static int kc_path(struct kc_ctx *x, const char *p, char **out) {
  int n = p[0] == '/' ? asprintf(out, "%s", p) : asprintf(out, "%s/%s", x->dir, p);
  if (n < 0) {
    *out = NULL;
    return ioq_fail(x->e, ENOMEM, "kubeconfig: out of memory building the path of '%s'", p);
  }
  return 0;
}

static int kc_base64(struct kc_ctx *x, json_object *at, const char *field, const char *b64,
                     struct ioq_blob *out) {
  gnutls_datum_t in = {(unsigned char *)b64, (unsigned)strlen(b64)}, dec = {0};
  int rc = gnutls_base64_decode2(&in, &dec);
  if (rc < 0)
    return kc_bad(x, at, field, "is not base64");
  out->data = malloc(dec.size + 1);
  if (!out->data) {
    gnutls_free(dec.data);
    return ioq_fail(x->e, ENOMEM, "kubeconfig: out of memory decoding %s", field);
  }
  memcpy(out->data, dec.data, dec.size);
  out->data[dec.size] = '\0';
  out->len = dec.size;
  gnutls_free(dec.data);
  return 0;
}

/* Fields that change how to connect or authenticate and that this client
 * does not implement: an error, so a credential is never silently dropped. */
static int kc_refuse(struct kc_ctx *x, json_object *obj, const char *prefix,
                     const char *const (*refused)[2]) {
  for (; (*refused)[0]; refused++) {
    json_object *v;
    if (json_object_object_get_ex(obj, (*refused)[0], &v) && v) {
      char field[200];
      snprintf(field, sizeof field, "%s.%s", prefix, (*refused)[0]);
      return kc_bad(x, v, field, (*refused)[1]);
    }
  }
  return 0;
}

static int kc_cluster(struct kc_ctx *x, json_object *c, const char *field,
                      struct ioq_kubeconfig *kc) {
  static const char *const refused[][2] = {
      {"proxy-url", "is not supported (ioqos connects directly)"},
      {"tls-server-name", "is not supported (the server URL's host is verified)"},
      {NULL, NULL}};
  if (kc_refuse(x, c, field, refused) < 0)
    return -1;
  const char *server, *ca, *ca_data;
  char f[200];
  snprintf(f, sizeof f, "%s.server", field);
  if (kc_string(x, c, "server", f, &server) < 0)
    return -1;
  if (!server)
    return kc_bad(x, c, f, "is required");
  if (!(kc->server = strdup(server)))
    return ioq_fail(x->e, ENOMEM, "kubeconfig: out of memory keeping %s", f);
  snprintf(f, sizeof f, "%s.certificate-authority", field);
  if (kc_string(x, c, "certificate-authority", f, &ca) < 0 || (ca && kc_path(x, ca, &kc->ca_file) < 0))
    return -1;
  snprintf(f, sizeof f, "%s.certificate-authority-data", field);
  json_object *at = NULL;
  json_object_object_get_ex(c, "certificate-authority-data", &at);
  if (kc_string(x, c, "certificate-authority-data", f, &ca_data) < 0 ||
      (ca_data && kc_base64(x, at, f, ca_data, &kc->ca) < 0))
    return -1;
  json_object *ins;
  if (json_object_object_get_ex(c, "insecure-skip-tls-verify", &ins) && ins) {
    snprintf(f, sizeof f, "%s.insecure-skip-tls-verify", field);
    if (!json_object_is_type(ins, json_type_boolean))
      return kc_bad(x, ins, f, "must be true or false");
    kc->insecure = json_object_get_boolean(ins);
    /* kubectl refuses the same contradiction */
    if (kc->insecure && (kc->ca_file || kc->ca.data))
      return kc_bad(x, ins, f, "is true together with a certificate authority: choose one");
  }
  return 0;
}

static int kc_user(struct kc_ctx *x, json_object *u, const char *field, struct ioq_kubeconfig *kc) {
  static const char *const refused[][2] = {
      {"exec", "credential plugins (exec) are not supported: give this user a token, tokenFile "
               "or client-certificate and client-key"},
      {"auth-provider", "auth provider plugins are not supported: give this user a token, "
                        "tokenFile or client-certificate and client-key"},
      {"username", "basic authentication is not supported"},
      {"password", "basic authentication is not supported"},
      {"as", "impersonation is not supported"},
      {NULL, NULL}};
  if (kc_refuse(x, u, field, refused) < 0)
    return -1;
  static const struct {
    const char *key;
    bool path, data;
  } fields[] = {{"token", false, false},
                {"tokenFile", true, false},
                {"client-certificate", true, false},
                {"client-certificate-data", false, true},
                {"client-key", true, false},
                {"client-key-data", false, true}};
  char **str_out[] = {&kc->token, &kc->token_file, &kc->cert_file, NULL, &kc->key_file, NULL};
  struct ioq_blob *blob_out[] = {NULL, NULL, NULL, &kc->cert, NULL, &kc->key};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    const char *v;
    char f[200];
    snprintf(f, sizeof f, "%s.%s", field, fields[i].key);
    if (kc_string(x, u, fields[i].key, f, &v) < 0)
      return -1;
    if (!v)
      continue;
    json_object *at = NULL;
    json_object_object_get_ex(u, fields[i].key, &at);
    int rc = 0;
    if (fields[i].data)
      rc = kc_base64(x, at, f, v, blob_out[i]);
    else if (fields[i].path)
      rc = kc_path(x, v, str_out[i]);
    else if (!(*str_out[i] = strdup(v)))
      rc = ioq_fail(x->e, ENOMEM, "kubeconfig: out of memory keeping %s", f);
    if (rc < 0)
      return -1;
  }
  bool cert = kc->cert_file || kc->cert.data, key = kc->key_file || kc->key.data;
  if (cert != key)
    return kc_bad(x, u, field, cert ? "has a client certificate without client-key(-data)"
                                    : "has a client key without client-certificate(-data)");
  return 0;
}

static int kc_parse(struct kc_ctx *x, json_object *root, const char *context,
                    struct ioq_kubeconfig *kc) {
  if (!json_object_is_type(root, json_type_object))
    return kc_bad(x, root, "(top level)", "must be a mapping");
  const char *cur = context, *cluster, *user;
  if (!cur && kc_string(x, root, "current-context", "current-context", &cur) < 0)
    return -1;
  if (!cur)
    return kc_bad(x, root, "current-context",
                  "is not set (kubectl config use-context NAME, or pass --context)");
  if (!(kc->context = strdup(cur)))
    return ioq_fail(x->e, ENOMEM, "kubeconfig: out of memory keeping current-context");
  json_object *ctx, *cl, *us;
  if (kc_find(x, root, "contexts", "context", cur, &ctx) < 0 ||
      kc_string(x, ctx, "cluster", "context.cluster", &cluster) < 0 ||
      kc_string(x, ctx, "user", "context.user", &user) < 0)
    return -1;
  if (!cluster)
    return kc_bad(x, ctx, "context.cluster", "is required");
  const char *ns;
  if (kc_string(x, ctx, "namespace", "context.namespace", &ns) < 0)
    return -1;
  if (ns && !(kc->namespace = strdup(ns)))
    return ioq_fail(x->e, ENOMEM, "kubeconfig: out of memory keeping context.namespace");
  if (kc_find(x, root, "clusters", "cluster", cluster, &cl) < 0)
    return -1;
  char field[200];
  snprintf(field, sizeof field, "clusters[name=%.80s].cluster", cluster);
  if (kc_cluster(x, cl, field, kc) < 0)
    return -1;
  if (!user)
    return 0; /* no credentials: anonymous (or the CA only) */
  if (kc_find(x, root, "users", "user", user, &us) < 0)
    return -1;
  snprintf(field, sizeof field, "users[name=%.80s].user", user);
  return kc_user(x, us, field, kc);
}

int ioq_kubeconfig_load(const char *path, struct ioq_kubeconfig *kc, ioq_err *e) {
  return ioq_kubeconfig_load_context(path, NULL, kc, e);
}

int ioq_kubeconfig_load_context(const char *path, const char *context, struct ioq_kubeconfig *kc,
                                ioq_err *e) {
  memset(kc, 0, sizeof *kc);
  struct kc_ctx x = {.path = path, .e = e};
  snprintf(x.dir, sizeof x.dir, "%s", path);
  char *d = dirname(x.dir);
  if (d != x.dir) /* dirname() may answer in place, or with a static "." */
    memmove(x.dir, d, strlen(d) + 1);
  char *text;
  size_t len;
  /* a kubeconfig with a few embedded certificates is a few KiB */
  if (ioq_read_file(path, &text, &len, 1u << 20, e) < 0) {
    ioq_err_prefix(e, "kubeconfig");
    return -1;
  }
  char src[4200];
  snprintf(src, sizeof src, "kubeconfig %s", path);
  json_object *root;
  /* kubeconfigs with hundreds of contexts have a few thousand values */
  int rc = ioq_yaml_to_json(text, len, src, 65536, &root, e);
  free(text);
  if (rc < 0)
    return -1;
  rc = kc_parse(&x, root, context && *context ? context : NULL, kc);
  json_object_put(root);
  if (rc < 0)
    ioq_kubeconfig_free(kc);
  return rc;
}

void ioq_kubeconfig_free(struct ioq_kubeconfig *kc) {
  free(kc->context);
  free(kc->namespace);
  free(kc->server);
  free(kc->ca_file);
  free(kc->ca.data);
  free(kc->token);
  free(kc->token_file);
  free(kc->cert_file);
  free(kc->key_file);
  free(kc->cert.data);
  free(kc->key.data);
  memset(kc, 0, sizeof *kc);
}

// SPDX-License-Identifier: Apache-2.0
/* Kubernetes API client: credentials and single requests. */
#include "kube/kube.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "kube/kube_jfilter.h"
#include "kube/kubeconfig.h"
#include "kube_internal.h"
#include "base/grow.h"

struct ioq_kube {
  char *server;
  char *token_file;
  char *ca_file;
  /* from a kubeconfig */
  char *static_token; /* users[].user.token (no file to re-read) */
  char *cert_file, *key_file;
  struct ioq_blob ca_blob, cert_blob, key_blob;
  bool insecure;
  char *kubeconfig; /* its path, for messages */
  char *context;    /* the kubeconfig context used */
  char *ns;         /* the context's namespace, or the service account's; NULL = none */
  long timeout_ms;
  char *user_agent;
  /* cached bearer token, re-read when the file's mtime changes */
  pthread_mutex_t lock;
  char *token;
  struct timespec token_mtime;
};

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

struct ioq_kube *ioq_kube_new(const struct ioq_kube_opts *o, ioq_err *e) {
  pthread_once(&g_curl_once, curl_init_once);
  struct ioq_kube *k = calloc(1, sizeof *k);
  if (!k) {
    ioq_fail(e, ENOMEM, "out of memory building the kube client");
    return NULL;
  }
  pthread_mutex_init(&k->lock, NULL);
  k->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
  k->user_agent = strdup(o->user_agent ? o->user_agent : "ioqos/" IOQOS_VERSION);
  const char *kcpath = o->kubeconfig && *o->kubeconfig ? o->kubeconfig : NULL;
  bool explicit = (o->server && *o->server) || (o->token_file && *o->token_file) ||
                  (o->ca_file && *o->ca_file);
  if (kcpath && explicit) {
    ioq_fail(e, IOQ_EINVAL_INPUT,
             "kube client: --kubeconfig %s conflicts with --kube-api-server/--kube-token-file/"
             "--kube-ca-file: give one of the two",
             kcpath);
    ioq_kube_free(k);
    return NULL;
  }
  if (!kcpath && !(o->server && *o->server)) {
    const char *env = getenv(IOQ_KUBECONFIG_ENV);
    if (env && *env && strchr(env, ':')) {
      ioq_fail(e, IOQ_EINVAL_INPUT,
               "kube client: %s=%s lists several files; ioqos reads one: pass it with --kubeconfig",
               IOQ_KUBECONFIG_ENV, env);
      ioq_kube_free(k);
      return NULL;
    }
    if (env && *env)
      kcpath = env;
  }
  if (!kcpath && o->context && *o->context) {
    ioq_fail(e, IOQ_EINVAL_INPUT,
             "kube client: context '%s' asked for, but there is no kubeconfig to read it from",
             o->context);
    ioq_kube_free(k);
    return NULL;
  }
  if (kcpath) {
    struct ioq_kubeconfig kc;
    if (ioq_kubeconfig_load_context(kcpath, o->context, &kc, e) < 0) {
      ioq_kube_free(k);
      return NULL;
    }
    /* the loaded strings move into the client */
    k->kubeconfig = strdup(kcpath);
    k->server = kc.server;
    k->token_file = kc.token_file;
    k->static_token = kc.token_file ? NULL : kc.token; /* tokenFile wins, as in client-go */
    if (kc.token_file)
      free(kc.token);
    k->ca_file = kc.ca_file;
    k->cert_file = kc.cert_file;
    k->key_file = kc.key_file;
    k->ca_blob = kc.ca;
    k->cert_blob = kc.cert;
    k->key_blob = kc.key;
    k->insecure = kc.insecure;
    k->context = kc.context;
    k->ns = kc.namespace;
    if (!k->kubeconfig) {
      ioq_fail(e, ENOMEM, "out of memory keeping the kubeconfig path");
      ioq_kube_free(k);
      return NULL;
    }
  } else if (o->server && *o->server) {
    k->server = strdup(o->server);
    k->token_file = dup_or_null(o->token_file);
    k->ca_file = dup_or_null(o->ca_file);
  } else {
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    const char *sa = o->sa_dir ? o->sa_dir : IOQ_KUBE_SA_DIR;
    if (!host || !*host || !port || !*port) {
      ioq_fail(e, IOQ_EINVAL_INPUT,
               "kube client: no API server given and not in a cluster "
               "(KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset); pass --kube-api-server");
      ioq_kube_free(k);
      return NULL;
    }
    char url[512], tok[1024], ca[1024];
    /* an IPv6 service host needs brackets in the URL */
    snprintf(url, sizeof url, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    snprintf(tok, sizeof tok, "%s/token", sa);
    snprintf(ca, sizeof ca, "%s/ca.crt", sa);
    k->server = strdup(url);
    k->token_file = strdup(o->token_file && *o->token_file ? o->token_file : tok);
    k->ca_file = strdup(o->ca_file && *o->ca_file ? o->ca_file : ca);
    /* the pod's own namespace, kubectl's default in a cluster (optional) */
    char nsf[1024], *nsv = NULL;
    snprintf(nsf, sizeof nsf, "%s/namespace", sa);
    ioq_err ne = {0};
    if (ioq_path_exists(nsf) && ioq_read_file(nsf, &nsv, NULL, 4096, &ne) == 0) {
      ioq_trim(nsv);
      if (*nsv)
        k->ns = nsv;
      else
        free(nsv);
    }
  }
  size_t l = k->server ? strlen(k->server) : 0;
  while (l > 0 && k->server[l - 1] == '/')
    k->server[--l] = '\0';
  if (!k->server || !k->user_agent) {
    ioq_fail(e, ENOMEM, "out of memory keeping the API server URL and User-Agent");
    ioq_kube_free(k);
    return NULL;
  }
  if (strncmp(k->server, "http://", 7) != 0 && strncmp(k->server, "https://", 8) != 0) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "kube client: API server URL '%s' must start with https:// or http://",
             k->server);
    ioq_kube_free(k);
    return NULL;
  }
  /* a bearer token in clear text is a credential for anyone on the path */
  const char *optin = getenv(IOQ_KUBE_INSECURE_TOKEN_ENV);
  if ((k->token_file || k->static_token) && strncmp(k->server, "http://", 7) == 0 &&
      !o->allow_insecure_token && !(optin && strcmp(optin, "1") == 0)) {
    ioq_fail(e, IOQ_EINVAL_INPUT,
             "kube client: refusing to send the bearer token of %s over plain http:// to %s; use "
             "https://, or set %s=1 to allow it (test set-ups only)",
             k->token_file ? k->token_file : k->kubeconfig, k->server, IOQ_KUBE_INSECURE_TOKEN_ENV);
    ioq_kube_free(k);
    return NULL;
  }
  if (k->token_file && !ioq_path_exists(k->token_file)) {
    ioq_fail(e, ENOENT, "kube client: token file %s does not exist", k->token_file);
    ioq_kube_free(k);
    return NULL;
  }
  const char *files[][2] = {{"CA file", k->ca_file},
                            {"client certificate", k->cert_file},
                            {"client key", k->key_file}};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    if (files[i][1] && !ioq_path_exists(files[i][1])) {
      ioq_fail(e, ENOENT, "kube client: %s %s does not exist%s%s", files[i][0], files[i][1],
               k->kubeconfig ? " (named in kubeconfig " : "", k->kubeconfig ? k->kubeconfig : "");
      if (k->kubeconfig)
        strncat(e->msg, ")", sizeof e->msg - strlen(e->msg) - 1);
      ioq_kube_free(k);
      return NULL;
    }
  return k;
}

void ioq_kube_free(struct ioq_kube *k) {
  if (!k)
    return;
  free(k->server);
  free(k->token_file);
  free(k->ca_file);
  free(k->user_agent);
  free(k->token);
  free(k->static_token);
  free(k->cert_file);
  free(k->key_file);
  free(k->ca_blob.data);
  free(k->cert_blob.data);
  free(k->key_blob.data);
  free(k->kubeconfig);
  free(k->context);
  free(k->ns);
  pthread_mutex_destroy(&k->lock);
  free(k);
}

const char *ioq_kube_server(const struct ioq_kube *k) { return k->server; }
const char *ioq_kube_context(const struct ioq_kube *k) { return k->context; }
const char *ioq_kube_namespace(const struct ioq_kube *k) { return k->ns; }

/* Returns a malloc'd "Authorization: Bearer ..." header, NULL if no token
 * file is configured; -1 on read errors. */
static int auth_header(struct ioq_kube *k, char **out, ioq_err *e) {
  *out = NULL;
  if (k->static_token) {
    if (asprintf(out, "Authorization: Bearer %s", k->static_token) < 0) {
      *out = NULL;
      return ioq_fail(e, ENOMEM, "out of memory building the Authorization header");
    }
    return 0;
  }
  if (!k->token_file)
    return 0;
  struct stat st;
  if (stat(k->token_file, &st) < 0)
    return ioq_fail_errno(e, "stat token file %s", k->token_file);
  pthread_mutex_lock(&k->lock);
  if (!k->token || st.st_mtim.tv_sec != k->token_mtime.tv_sec ||
      st.st_mtim.tv_nsec != k->token_mtime.tv_nsec) {
    char *tok;
    if (ioq_read_file(k->token_file, &tok, NULL, 64 * 1024, e) < 0) {
      pthread_mutex_unlock(&k->lock);
      return -1;
    }
    ioq_trim(tok);
    free(k->token);
    k->token = tok;
    k->token_mtime = st.st_mtim;
  }
  int n = asprintf(out, "Authorization: Bearer %s", k->token);
  pthread_mutex_unlock(&k->lock);
  if (n < 0) {
    *out = NULL;
    return ioq_fail(e, ENOMEM, "out of memory building the Authorization header");
  }
  return 0;
}

struct buf {
  char *data;
  size_t len, cap, max;
  bool overflow;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud) {
  struct buf *b = ud;
  size_t n = size * nmemb;
  if (b->len + n + 1 > b->max) {
    b->overflow = true;
    return 0; /* aborts the transfer */
  }
  char *nd = ioq_grow(b->data, &b->cap, b->len + n + 1, 1, 16384);
  if (!nd)
    return 0;
  b->data = nd;
  memcpy(b->data + b->len, ptr, n);
  b->len += n;
  b->data[b->len] = '\0';
  return n;
}

/* Shared handle set-up for requests and watches (kube_internal.h). */
CURL *ioq_kube_curl_handle(struct ioq_kube *k, const char *path, struct curl_slist **hdrs,
                           const char *content_type, ioq_err *e) {
  char *auth;
  if (auth_header(k, &auth, e) < 0)
    return NULL;
  CURL *c = curl_easy_init();
  if (!c) {
    free(auth);
    ioq_fail(e, ENOMEM, "curl_easy_init failed");
    return NULL;
  }
  char *url;
  if (asprintf(&url, "%s%s", k->server, path) < 0) {
    free(auth);
    curl_easy_cleanup(c);
    ioq_fail(e, ENOMEM, "out of memory building the request URL");
    return NULL;
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  free(url);
  *hdrs = curl_slist_append(NULL, "Accept: application/json");
  if (auth) {
    *hdrs = curl_slist_append(*hdrs, auth);
    free(auth);
  }
  if (content_type) {
    char ct[128];
    snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
    *hdrs = curl_slist_append(*hdrs, ct);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
  curl_easy_setopt(c, CURLOPT_USERAGENT, k->user_agent);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM-based DNS timeouts */
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, k->timeout_ms < 5000 ? k->timeout_ms : 5000L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  /* a peer that vanished (node lost, NAT entry dropped) never closes the
   * connection: probe an idle one after 10 s, every 5 s; with the kernel's
   * 9 probes (tcp_keepalive_probes) it is declared dead within 55 s */
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, (long)IOQ_KUBE_KEEPIDLE_S);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, (long)IOQ_KUBE_KEEPINTVL_S);
  if (k->ca_file)
    curl_easy_setopt(c, CURLOPT_CAINFO, k->ca_file);
  if (k->ca_blob.data) {
    struct curl_blob b = {k->ca_blob.data, k->ca_blob.len, CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &b);
  }
  if (k->cert_file)
    curl_easy_setopt(c, CURLOPT_SSLCERT, k->cert_file);
  if (k->key_file)
    curl_easy_setopt(c, CURLOPT_SSLKEY, k->key_file);
  if (k->cert_blob.data) {
    struct curl_blob b = {k->cert_blob.data, k->cert_blob.len, CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &b);
  }
  if (k->key_blob.data) {
    struct curl_blob b = {k->key_blob.data, k->key_blob.len, CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &b);
  }
  if (k->insecure) { /* insecure-skip-tls-verify: the kubeconfig asked for it */
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  return c;
}

void ioq_kube_resp_free(struct ioq_kube_resp *r) {
  if (!r)
    return;
  free(r->body);
  r->body = NULL;
  r->len = 0;
}

/* Aborts a transfer once *ud (an atomic_bool) turns true. */
static int on_stop_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
  (void)a, (void)b, (void)c, (void)d;
  return atomic_load((atomic_bool *)ud) ? 1 : 0;
}

/* The part every one-shot request shares: where the reply goes, the
 * timeout, the error text, the stop flag; performs the transfer and frees
 * the handle and headers. *status is the HTTP status (0 without a reply). */
static CURLcode perform(struct ioq_kube *k, CURL *c, struct curl_slist *hdrs,
                        curl_write_callback write_fn, void *write_data, atomic_bool *stop,
                        char *errbuf, long *status) {
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_fn);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, write_data);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, k->timeout_ms);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  if (stop) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_stop_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, stop);
  }
  CURLcode rc = curl_easy_perform(c);
  *status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
  curl_easy_cleanup(c);
  curl_slist_free_all(hdrs);
  return rc;
}

static int kube_do(struct ioq_kube *k, const char *method, const char *path,
                   const char *content_type, const char *body, atomic_bool *stop,
                   struct ioq_kube_resp *resp, ioq_err *e) {
  memset(resp, 0, sizeof *resp);
  struct curl_slist *hdrs = NULL;
  CURL *c = ioq_kube_curl_handle(k, path, &hdrs, body ? content_type : NULL, e);
  if (!c)
    return -1;
  struct buf b = {.max = 256u << 20};
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  } else if (strcmp(method, "GET") == 0) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  }
  long status;
  CURLcode rc = perform(k, c, hdrs, on_body, &b, stop, errbuf, &status);
  if (rc != CURLE_OK) {
    free(b.data);
    if (rc == CURLE_ABORTED_BY_CALLBACK)
      return ioq_fail(e, ECANCELED, "%s %s%s: stopped", method, k->server, path);
    if (b.overflow)
      return ioq_fail(e, EFBIG, "%s %s%s: reply larger than %zu bytes", method, k->server, path, b.max);
    return ioq_fail(e, EIO, "%s %s%s: %s", method, k->server, path,
                    errbuf[0] ? errbuf : curl_easy_strerror(rc));
  }
  resp->status = status;
  resp->body = b.data ? b.data : strdup("");
  resp->len = b.len;
  return 0;
}

int ioq_kube_do(struct ioq_kube *k, const char *method, const char *path,
                const char *content_type, const char *body, struct ioq_kube_resp *resp, ioq_err *e) {
  return kube_do(k, method, path, content_type, body, NULL, resp, e);
}

char *ioq_kube_escape(const char *s) {
  CURL *c = curl_easy_init();
  if (!c)
    return NULL;
  char *esc = curl_easy_escape(c, s, 0);
  char *out = esc ? strdup(esc) : NULL;
  curl_free(esc);
  curl_easy_cleanup(c);
  return out;
}

/* Turns a reply into the JSON result or an error with the API's message. */
static int finish_json(const char *method, const char *path, struct ioq_kube_resp *r,
                       json_object **out, long *status, ioq_err *e) {
  if (status)
    *status = r->status;
  json_object *j = r->len ? json_tokener_parse(r->body) : NULL;
  if (r->status < 200 || r->status > 299) {
    const char *msg = NULL;
    json_object *m;
    if (j && json_object_object_get_ex(j, "message", &m) && json_object_is_type(m, json_type_string))
      msg = json_object_get_string(m);
    ioq_fail(e, r->status == 404 ? IOQ_ENOTFOUND : r->status == 409 ? IOQ_ECONFLICT : EIO,
             "%s %s: HTTP %ld: %.300s", method, path, r->status,
             msg ? msg : (r->len ? r->body : "(empty reply)"));
    json_object_put(j);
    return -1;
  }
  if (out) {
    if (!j)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s %s: reply is not JSON: %.120s", method, path, r->body);
    *out = j;
  } else {
    json_object_put(j);
  }
  return 0;
}

int ioq_kube_get_json_until(struct ioq_kube *k, const char *path, atomic_bool *stop,
                            json_object **out, long *status, ioq_err *e) {
  if (status)
    *status = 0;
  struct ioq_kube_resp r;
  if (kube_do(k, "GET", path, NULL, NULL, stop, &r, e) < 0)
    return -1;
  int rc = finish_json("GET", path, &r, out, status, e);
  ioq_kube_resp_free(&r);
  return rc;
}

int ioq_kube_get_json(struct ioq_kube *k, const char *path, json_object **out, long *status,
                      ioq_err *e) {
  return ioq_kube_get_json_until(k, path, NULL, out, status, e);
}

int ioq_kube_send_json(struct ioq_kube *k, const char *method, const char *path,
                       const char *content_type, json_object *body, json_object **out,
                       long *status, ioq_err *e) {
  if (status)
    *status = 0;
  const char *txt = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
  struct ioq_kube_resp r;
  if (ioq_kube_do(k, method, path, content_type ? content_type : "application/json", txt, &r, e) < 0)
    return -1;
  int rc = finish_json(method, path, &r, out, status, e);
  ioq_kube_resp_free(&r);
  return rc;
}

int ioq_kube_merge_patch(struct ioq_kube *k, const char *path, json_object *patch,
                         json_object **out, long *status, ioq_err *e) {
  return ioq_kube_send_json(k, "PATCH", path, "application/merge-patch+json", patch, out, status, e);
}

/* ---- filtered GET: the body goes through the JSON filter as it arrives ---- */

struct fsink {
  CURL *c;
  struct ioq_jf *jf;
  struct ioq_kube_errbody err; /* an error reply's start */
  ioq_err jerr;
  bool jfailed;
};

static size_t on_filtered(char *ptr, size_t size, size_t nmemb, void *ud) {
  struct fsink *s = ud;
  size_t n = size * nmemb;
  if (ioq_kube_errbody_take(&s->err, s->c, ptr, n))
    return n;
  if (ioq_jf_feed(s->jf, ptr, n, &s->jerr) < 0) {
    s->jfailed = true;
    return 0; /* aborts the transfer */
  }
  return n;
}

int ioq_kube_get_filtered(struct ioq_kube *k, const char *path, atomic_bool *stop,
                          const struct ioq_jf_rule *root, size_t unit_cost_max,
                          void (*on_unit)(void *ud, json_object *unit, bool truncated), void *ud,
                          json_object **out, long *status, ioq_err *e) {
  if (out)
    *out = NULL;
  if (status)
    *status = 0;
  struct fsink s = {0};
  if (!(s.jf = ioq_jf_new(root, unit_cost_max, on_unit, ud, e)))
    return -1;
  struct curl_slist *hdrs = NULL;
  CURL *c = ioq_kube_curl_handle(k, path, &hdrs, NULL, e);
  if (!c) {
    ioq_jf_free(s.jf);
    return -1;
  }
  s.c = c;
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  long st;
  CURLcode rc = perform(k, c, hdrs, on_filtered, &s, stop, errbuf, &st);
  if (status)
    *status = st;
  int ret = 0;
  if (s.jfailed) {
    *e = s.jerr;
    ioq_err_prefix(e, "GET %s%s", k->server, path);
    ret = -1;
  } else if (rc != CURLE_OK) {
    if (rc == CURLE_ABORTED_BY_CALLBACK)
      ret = ioq_fail(e, ECANCELED, "GET %s%s: stopped", k->server, path);
    else
      ret = ioq_fail(e, EIO, "GET %s%s: %s", k->server, path,
                     errbuf[0] ? errbuf : curl_easy_strerror(rc));
  } else if (st < 200 || st > 299) {
    json_object *j;
    const char *msg = ioq_kube_errbody_message(&s.err, &j);
    ioq_fail(e, st == 404 ? IOQ_ENOTFOUND : st == 409 ? IOQ_ECONFLICT : EIO,
             "GET %s: HTTP %ld: %.300s", path, st, msg);
    json_object_put(j);
    ret = -1;
  } else if (ioq_jf_finish(s.jf, out, e) < 0) {
    ioq_err_prefix(e, "GET %s", path);
    ret = -1;
  }
  ioq_jf_free(s.jf);
  return ret;
}

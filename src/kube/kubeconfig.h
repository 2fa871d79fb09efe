// SPDX-License-Identifier: Apache-2.0
/* kubeconfig (kubectl's client configuration file): the current context's
 * cluster and user, for the API client (kube.h). Supported: clusters[].
 * cluster.server, contexts[].context.namespace, certificate-authority(-data), insecure-skip-tls-verify;
 * users[].user.token, tokenFile, client-certificate(-data), client-key(-data).
 * Auth plugins (exec, auth-provider), basic auth and connection settings this
 * client does not implement (proxy-url, tls-server-name) are errors naming
 * the field, never ignored. Relative paths are relative to the file's
 * directory, as kubectl reads them. */
#ifndef IOQOS_KUBECONFIG_H
#define IOQOS_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define IOQ_KUBECONFIG_ENV "KUBECONFIG"

struct ioq_blob {
  char *data; /* decoded PEM; NULL = none */
  size_t len;
};

struct ioq_kubeconfig {
  char *context;   /* the current context's name, for logs */
  char *namespace; /* the context's namespace (kubectl's default); NULL = none */
  char *server;
  char *ca_file;
  struct ioq_blob ca;
  bool insecure; /* insecure-skip-tls-verify */
  char *token;
  char *token_file; /* wins over token, as in client-go: it is re-read */
  char *cert_file, *key_file;
  struct ioq_blob cert, key;
};

/* Errors: "kubeconfig PATH: line N: FIELD: what". */
int ioq_kubeconfig_load(const char *path, struct ioq_kubeconfig *kc, ioq_err *e)
    __attribute__((warn_unused_result));
/* The same with the context called `context` instead of current-context
 * (kubectl --context); NULL or "" = current-context. A context the file
 * does not have is an error naming it. */
int ioq_kubeconfig_load_context(const char *path, const char *context, struct ioq_kubeconfig *kc,
                                ioq_err *e)
    __attribute__((warn_unused_result));
void ioq_kubeconfig_free(struct ioq_kubeconfig *kc);

#endif

// SPDX-License-Identifier: Apache-2.0
/* Command-line flags of ioqos-scheduler-ext (documented by --help and in
 * docs/extender.md). */
#ifndef IOQOS_EXT_FLAGS_H
#define IOQOS_EXT_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "base/error.h"
#include "base/log.h"

#define EXT_MAX_SCHEDULER_NAMES 8
#define EXT_DEFAULT_SCHEDULER_NAME "ioqos-scheduler"

struct ext_flags {
  const char *listen;
  const char *metrics_listen;
  const char *tls_cert, *tls_key; /* file paths */
  const char *tls_client_ca;      /* file path */
  const char *tls_client_subject;
  const char *scheduler_names[EXT_MAX_SCHEDULER_NAMES]; /* bind serves pods of these */
  size_t n_scheduler_names;
  bool scheduler_names_from_env;   /* a --scheduler-name flag replaces them */
  char scheduler_names_buf[1024]; /* IOQOS_SCHEDULER_NAME's names */
  enum ioq_policy policy;
  unsigned assume_ttl_s;
  size_t max_request_bytes;
  size_t max_request_memory; /* 0 = derived from the container's memory limit */
  unsigned threads;
  unsigned max_connections;
  unsigned idle_timeout_s;
  unsigned max_connections_per_ip;
  unsigned request_deadline_s;
  unsigned annotation_max_age_s; /* 0 = node annotations never go stale */
  unsigned shutdown_grace_s;
  const char *kube_api_server, *kube_token_file, *kube_ca_file;
  const char *kubeconfig; /* NULL = KUBECONFIG if set, else in-cluster */
  unsigned kube_timeout_s;
  bool no_kube;
  int node_cache; /* -1 = default (on when the API is reachable), 0, 1 */
  enum ioq_log_level log_level;
  enum ioq_log_format log_format;
  bool help, version;
};

/* Fills defaults, then parses argv. Usage errors fail with a message. */
int ext_flags_parse(int argc, char **argv, struct ext_flags *f, ioq_err *e);
void ext_flags_usage(FILE *out);

#endif

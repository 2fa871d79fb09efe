// SPDX-License-Identifier: Apache-2.0
/* Command-line flags of ioqos-plugin (and their environment equivalents).
 * A flag beats its environment variable, which beats the default. */
#ifndef IOQOS_PLUGIN_OPTS_H
#define IOQOS_PLUGIN_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"
#include "base/log.h"
#include "cgroup/podcg.h"

#define PLUGIN_OPTS_MAX_WARNINGS 4

enum plugin_mode { PLUGIN_MODE_DEVICE_PLUGIN, PLUGIN_MODE_DRA };

struct plugin_opts {
  /* device-plugin: ioqos/bandwidth and ioqos/iops through kubelet's device
   * plugin API (+ the scheduler extender); dra: one ResourceSlice device per
   * disk with consumable capacity, claims prepared through kubelet's DRA
   * plugin API (docs/dra.md). One mode per node: a disk is never sold twice. */
  enum plugin_mode mode;
  const char *kubelet_plugins_dir;  /* dra: <dir>/ioqos.io/dra.sock */
  const char *kubelet_registry_dir; /* dra: <dir>/ioqos.io-reg.sock */
  const char *device_plugin_dir;    /* kubelet's device-plugins dir */
  const char *pod_resources_socket; /* kubelet's pod resources socket */
  const char *state_dir;            /* state kept across restarts */
  const char *config;               /* NULL = built-in defaults */
  const char *node_name;
  const char *kube_api_server;      /* NULL = in-cluster */
  const char *kube_token_file;
  const char *kube_ca_file;
  const char *kubeconfig;           /* NULL = none (KUBECONFIG, else in-cluster) */
  const char *cgroup_root;          /* cgroupfs mount root */
  const char *sysfs_root;
  enum ioq_cg_driver cgroup_driver;
  const char *kubelet_cgroup_root;  /* kubelet --cgroup-root */
  const char *metrics_address;      /* "" = disabled */
  const char *health_address;       /* "" = probes only on metrics_address */
  const char *explain_socket;       /* unix socket of /v1/explain; NULL = disabled */
  char explain_socket_buf[108];     /* the default, <state-dir>/plugin.sock (sun_path size) */
  unsigned http_timeout_s;          /* absolute limit per HTTP request */
  unsigned http_max_conns;          /* per listener */
  unsigned http_max_conns_per_ip;   /* per listener and client address */
  enum ioq_log_level log_level;
  enum ioq_log_format log_format;
  bool help, version;
  /* deprecated spellings used; main logs them once logging is set up */
  char warnings[PLUGIN_OPTS_MAX_WARNINGS][160];
  size_t n_warnings;
};

/* Parses argv (and getenv). Returns 0, or -1 with a message naming the flag.
 * Strings point into argv/environ or static defaults. */
int plugin_opts_parse(int argc, char **argv, struct plugin_opts *o, ioq_err *e);

void plugin_opts_usage(FILE *f);

#endif

// SPDX-License-Identifier: Apache-2.0
/* ioqos-plugin flags (plugin/daemon/support/opts.c): defaults, environment
 * fallbacks, precedence and errors that name the flag. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "base/listenaddr.h"
#include "support/opts.h"

static int parse(struct plugin_opts *o, ioq_err *e, int argc, char **argv) {
  return plugin_opts_parse(argc, argv, o, e);
}

static void clean_env(void) {
  unsetenv("NODE_NAME");
  unsetenv("IOQOS_METRICS_ADDRESS");
  unsetenv("IOQOS_HEALTH_ADDRESS");
  unsetenv("IOQOS_HTTP_REQUEST_TIMEOUT");
  unsetenv("IOQOS_CGROUP_DRIVER");
  unsetenv("IOQOS_STATE_DIR");
  unsetenv("IOQOS_CGROUPFS_ROOT");
  unsetenv("IOQOS_CGROUP_ROOT");
  unsetenv("IOQOS_LOG_FORMAT");
  unsetenv("IOQOS_EXPLAIN_SOCKET");
}

TestSuite(opts, .init = clean_env);

Test(opts, defaults) {
  char *argv[] = {"ioqos-plugin", "--node-name", "n1", NULL};
  struct plugin_opts o;
  ioq_err e;
  cr_assert_eq(parse(&o, &e, 3, argv), 0, "%s", e.msg);
  cr_assert_str_eq(o.device_plugin_dir, "/var/lib/kubelet/device-plugins");
  cr_assert_str_eq(o.pod_resources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  cr_assert_str_eq(o.cgroup_root, "/sys/fs/cgroup");
  cr_assert_str_eq(o.sysfs_root, "/sys");
  cr_assert_str_eq(o.kubelet_cgroup_root, "/");
  cr_assert_str_eq(o.state_dir, "/var/lib/ioqos");
  cr_assert_str_eq(o.metrics_address, "127.0.0.1:9464", "loopback unless told");
  cr_assert_str_eq(o.health_address, "");
  cr_assert_eq(o.http_timeout_s, 10);
  cr_assert_eq(o.http_max_conns, 64);
  cr_assert_eq(o.http_max_conns_per_ip, 4);
  cr_assert_eq(o.cgroup_driver, IOQ_CG_DRIVER_AUTO);
  cr_assert_eq(o.log_level, IOQ_LOG_INFO);
  cr_assert_eq(o.log_format, IOQ_LOG_TEXT);
  cr_assert_null(o.config);
  cr_assert_null(o.kube_api_server);
  cr_assert_str_eq(o.explain_socket, "/var/lib/ioqos/plugin.sock", "in the state dir");
}

Test(opts, explain_socket) {
  struct plugin_opts o;
  ioq_err e;
  char *a1[] = {"ioqos-plugin", "--node-name=n", "--state-dir=/run/x/", NULL};
  cr_assert_eq(parse(&o, &e, 3, a1), 0, "%s", e.msg);
  cr_assert_str_eq(o.explain_socket, "/run/x/plugin.sock", "follows --state-dir");
  char *a2[] = {"ioqos-plugin", "--node-name=n", "--explain-socket=off", NULL};
  cr_assert_eq(parse(&o, &e, 3, a2), 0, "%s", e.msg);
  cr_assert_null(o.explain_socket, "off disables it");
  setenv("IOQOS_EXPLAIN_SOCKET", "/run/ioqos.sock", 1);
  char *a3[] = {"ioqos-plugin", "--node-name=n", NULL};
  cr_assert_eq(parse(&o, &e, 2, a3), 0, "%s", e.msg);
  cr_assert_str_eq(o.explain_socket, "/run/ioqos.sock");
  char *a4[] = {"ioqos-plugin", "--node-name=n", "--explain-socket=rel.sock", NULL};
  cr_assert_eq(parse(&o, &e, 3, a4), -1);
  cr_assert(strstr(e.msg, "--explain-socket 'rel.sock': must be an absolute path or off"), "%s", e.msg);
  unsetenv("IOQOS_EXPLAIN_SOCKET");
  char longp[300] = "--explain-socket=/";
  memset(longp + strlen(longp), 'a', 200);
  char *a5[] = {"ioqos-plugin", "--node-name=n", longp, NULL};
  cr_assert_eq(parse(&o, &e, 3, a5), -1);
  cr_assert(strstr(e.msg, "longer than a unix socket path can be"), "%s", e.msg);
  char longd[300] = "--state-dir=/";
  memset(longd + strlen(longd), 'd', 100);
  char *a6[] = {"ioqos-plugin", "--node-name=n", longd, NULL};
  cr_assert_eq(parse(&o, &e, 3, a6), -1);
  cr_assert(strstr(e.msg, "give --explain-socket"), "%s", e.msg);
}

Test(opts, env_then_flag_precedence) {
  setenv("NODE_NAME", "from-env", 1);
  setenv("IOQOS_CGROUP_DRIVER", "systemd", 1);
  char *argv[] = {"ioqos-plugin", "--metrics-address=", "--cgroup-driver", "cgroupfs", NULL};
  struct plugin_opts o;
  ioq_err e;
  cr_assert_eq(parse(&o, &e, 4, argv), 0, "%s", e.msg);
  cr_assert_str_eq(o.node_name, "from-env");
  cr_assert_eq(o.cgroup_driver, IOQ_CG_DRIVER_CGROUPFS);
  cr_assert_str_eq(o.metrics_address, "", "empty disables metrics");
}

/* --cgroupfs-root names the mount in every binary; the old --cgroup-root
 * (and IOQOS_CGROUP_ROOT) keep working but leave a warning for the log */
Test(opts, cgroupfs_root_new_name_no_warning) {
  setenv("IOQOS_CGROUPFS_ROOT", "/env/cg", 1);
  char *argv[] = {"ioqos-plugin", "--node-name=n", NULL};
  struct plugin_opts o;
  ioq_err e;
  cr_assert_eq(parse(&o, &e, 2, argv), 0, "%s", e.msg);
  cr_assert_str_eq(o.cgroup_root, "/env/cg");
  cr_assert_eq(o.n_warnings, 0);
  char *argv2[] = {"ioqos-plugin", "--node-name=n", "--cgroupfs-root=/flag/cg", NULL};
  cr_assert_eq(parse(&o, &e, 3, argv2), 0, "%s", e.msg);
  cr_assert_str_eq(o.cgroup_root, "/flag/cg", "the flag wins over the env");
  cr_assert_eq(o.n_warnings, 0);
}

Test(opts, cgroup_root_old_flag_works_and_warns) {
  char *argv[] = {"ioqos-plugin", "--node-name=n", "--cgroup-root", "/old/cg", NULL};
  struct plugin_opts o;
  ioq_err e;
  cr_assert_eq(parse(&o, &e, 4, argv), 0, "%s", e.msg);
  cr_assert_str_eq(o.cgroup_root, "/old/cg");
  cr_assert_eq(o.n_warnings, 1);
  cr_assert(strstr(o.warnings[0], "--cgroup-root is deprecated") &&
                strstr(o.warnings[0], "use --cgroupfs-root"),
            "%s", o.warnings[0]);
}

Test(opts, cgroup_root_old_env_works_and_warns) {
  setenv("IOQOS_CGROUP_ROOT", "/old/env", 1);
  char *argv[] = {"ioqos-plugin", "--node-name=n", NULL};
  struct plugin_opts o;
  ioq_err e;
  cr_assert_eq(parse(&o, &e, 2, argv), 0, "%s", e.msg);
  cr_assert_str_eq(o.cgroup_root, "/old/env");
  cr_assert_eq(o.n_warnings, 1);
  cr_assert(strstr(o.warnings[0], "IOQOS_CGROUP_ROOT is deprecated") &&
                strstr(o.warnings[0], "use IOQOS_CGROUPFS_ROOT"),
            "%s", o.warnings[0]);
  /* the new env beats the old one, silently */
  setenv("IOQOS_CGROUPFS_ROOT", "/new/env", 1);
  cr_assert_eq(parse(&o, &e, 2, argv), 0, "%s", e.msg);
  cr_assert_str_eq(o.cgroup_root, "/new/env");
  cr_assert_eq(o.n_warnings, 0);
}

Test(opts, help_lists_new_and_deprecated_names) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  plugin_opts_usage(f);
  fclose(f);
  cr_assert(strstr(buf, "--cgroupfs-root DIR"), "%s", buf);
  cr_assert(strstr(buf, "env IOQOS_CGROUPFS_ROOT"), "%s", buf);
  cr_assert(strstr(buf, "deprecated: --cgroup-root, env IOQOS_CGROUP_ROOT"), "%s", buf);
  free(buf);
}

/* issue 14 item 4 */
Test(opts, log_format_from_env_and_flag) {
  setenv("NODE_NAME", "n", 1);
  setenv("IOQOS_LOG_FORMAT", "json", 1);
  char *argv[] = {"ioqos-plugin", "--log-format=text", NULL};
  struct plugin_opts o;
  ioq_err e;
  cr_assert_eq(parse(&o, &e, 1, argv), 0, "%s", e.msg);
  cr_assert_eq(o.log_format, IOQ_LOG_JSON, "from the environment");
  cr_assert_eq(parse(&o, &e, 2, argv), 0, "%s", e.msg);
  cr_assert_eq(o.log_format, IOQ_LOG_TEXT, "the flag wins");
  setenv("IOQOS_LOG_FORMAT", "logfmt", 1);
  cr_assert_eq(parse(&o, &e, 1, argv), -1);
  cr_assert(strstr(e.msg, "--log-format 'logfmt': must be text or json"), "%s", e.msg);
}

Test(opts, http_limits_from_env_and_flags) {
  setenv("IOQOS_HTTP_REQUEST_TIMEOUT", "3", 1);
  setenv("IOQOS_HEALTH_ADDRESS", "10.0.0.5:9465", 1);
  char *argv[] = {"ioqos-plugin", "--node-name=n", "--metrics-address=10.0.0.5:9464",
                  "--http-max-connections=8", "--http-max-connections-per-ip", "2", NULL};
  struct plugin_opts o;
  ioq_err e;
  cr_assert_eq(parse(&o, &e, 6, argv), 0, "%s", e.msg);
  cr_assert_eq(o.http_timeout_s, 3);
  cr_assert_str_eq(o.health_address, "10.0.0.5:9465");
  cr_assert_eq(o.http_max_conns, 8);
  cr_assert_eq(o.http_max_conns_per_ip, 2);
}

struct bad {
  char a[3][64];
  int n;
  char want[96];
};

ParameterizedTestParameters(opts, errors) {
  static struct bad cases[] = {
      {{"--bogus"}, 1, "unknown flag --bogus"},
      {{"--node-name"}, 1, "--node-name needs a value"},
      {{"--node-name", "n", "extra"}, 3, "unexpected argument 'extra'"},
      {{"--node-name=n", "--cgroup-driver=docker"}, 2, "--cgroup-driver"},
      {{"--node-name=n", "--log-level=loud"}, 2, "--log-level 'loud'"},
      {{"--node-name=n", "--metrics-address=9464"}, 2, "--metrics-address"},
      {{"--node-name=n", "--metrics-address=:99999"}, 2, "port must be 1-65535"},
      {{"--node-name=n", "--cgroupfs-root=relative"}, 2, "--cgroupfs-root 'relative': must be an absolute path"},
      {{"--node-name=n", "--cgroup-root=relative"}, 2, "--cgroupfs-root 'relative': must be an absolute path"},
      {{"--node-name=n", "--cgroup-root=/a", "--cgroupfs-root=/b"}, 3,
       "--cgroupfs-root and its deprecated spelling --cgroup-root both given"},
      {{"--node-name=n", "--kube-api-server=ftp://x"}, 2, "must start with http:// or https://"},
      {{"--log-level=debug"}, 1, "--node-name (or NODE_NAME) is required"},
      {{"--node-name=n", "--health-address=127.0.0.1:9464"}, 2, "same as --metrics-address"},
      {{"--node-name=n", "--health-address=x"}, 2, "--health-address"},
      {{"--node-name=n", "--metrics-address=", "--health-address=:9465"}, 3,
       "--health-address needs --metrics-address"},
      {{"--node-name=n", "--http-request-timeout=0"}, 2, "--http-request-timeout '0': must be 1-3600"},
      {{"--node-name=n", "--http-max-connections=lots"}, 2, "--http-max-connections 'lots'"},
      {{"--node-name=n", "--http-max-connections-per-ip=70000"}, 2, "must be 1-65536"},
  };
  return cr_make_param_array(struct bad, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad *c, opts, errors) {
  unsetenv("NODE_NAME");
  char *argv[5] = {"ioqos-plugin"};
  for (int i = 0; i < c->n; i++)
    argv[i + 1] = c->a[i];
  struct plugin_opts o;
  ioq_err e = {0};
  cr_assert_eq(parse(&o, &e, c->n + 1, argv), -1);
  cr_assert(strstr(e.msg, c->want), "'%s' lacks '%s'", e.msg, c->want);
}

/* the daemon's addresses go through the shared parser (base/listenaddr.h,
 * tested in full by test_listenaddr.c) without IOQ_LISTEN_PORT0 */
Test(opts, listen_address_forms) {
  struct ioq_listen_addr la;
  ioq_err e;
  cr_assert_eq(ioq_parse_listen(":9464", 0, &la, &e), 0);
  cr_assert_str_eq(la.host, "");
  cr_assert_eq(la.port, 9464);
  cr_assert_eq(ioq_parse_listen("127.0.0.1:80", 0, &la, &e), 0);
  cr_assert_str_eq(la.host, "127.0.0.1");
  cr_assert_eq(ioq_parse_listen("[::1]:8080", 0, &la, &e), 0);
  cr_assert_str_eq(la.host, "::1");
  cr_assert_eq(la.port, 8080);
  cr_assert_eq(ioq_parse_listen("[::1]8080", 0, &la, &e), -1);
}

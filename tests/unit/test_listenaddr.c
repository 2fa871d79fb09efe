// SPDX-License-Identifier: Apache-2.0
/* The one listen-address parser (base/listenaddr.h) of the plugin's and the
 * extender's HTTP servers: every accepted form, the refusals and their texts
 * (the flags' tests, test_plugin_opts and test_extender_misc, look for them). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <string.h>

#include "base/listenaddr.h"

static unsigned port_of(const struct ioq_listen_addr *la) {
  if (la->ss.ss_family == AF_INET6)
    return ntohs(((const struct sockaddr_in6 *)&la->ss)->sin6_port);
  return ntohs(((const struct sockaddr_in *)&la->ss)->sin_port);
}

Test(listen, every_ipv4_address) {
  struct ioq_listen_addr la;
  ioq_err e = {0};
  cr_assert_eq(ioq_parse_listen(":9464", 0, &la, &e), 0, "%s", e.msg);
  cr_assert_eq(la.ss.ss_family, AF_INET);
  cr_assert_eq(la.len, sizeof(struct sockaddr_in));
  cr_assert_eq(((struct sockaddr_in *)&la.ss)->sin_addr.s_addr, htonl(INADDR_ANY));
  cr_assert_str_eq(la.host, "");
  cr_assert_eq(la.port, 9464);
  cr_assert_eq(port_of(&la), 9464);
}

Test(listen, numeric_ipv4) {
  struct ioq_listen_addr la;
  ioq_err e = {0};
  cr_assert_eq(ioq_parse_listen("127.0.0.1:80", 0, &la, &e), 0, "%s", e.msg);
  cr_assert_eq(la.ss.ss_family, AF_INET);
  cr_assert_eq(((struct sockaddr_in *)&la.ss)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  cr_assert_str_eq(la.host, "127.0.0.1");
  cr_assert_eq(port_of(&la), 80);
}

Test(listen, ipv6_bracketed_and_bare) {
  struct ioq_listen_addr la;
  ioq_err e = {0};
  cr_assert_eq(ioq_parse_listen("[::1]:8080", 0, &la, &e), 0, "%s", e.msg);
  cr_assert_eq(la.ss.ss_family, AF_INET6);
  cr_assert_eq(la.len, sizeof(struct sockaddr_in6));
  cr_assert(IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&la.ss)->sin6_addr));
  cr_assert_str_eq(la.host, "::1");
  cr_assert_eq(port_of(&la), 8080);
  cr_assert_eq(ioq_parse_listen("[::]:443", 0, &la, &e), 0, "%s", e.msg);
  cr_assert(IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&la.ss)->sin6_addr));
  /* $(POD_IP):PORT on an IPv6 cluster: the last ':' starts the port */
  cr_assert_eq(ioq_parse_listen("fd00::5:9464", 0, &la, &e), 0, "%s", e.msg);
  cr_assert_eq(la.ss.ss_family, AF_INET6);
  cr_assert_str_eq(la.host, "fd00::5");
  cr_assert_eq(port_of(&la), 9464);
}

Test(listen, port_zero_only_when_allowed) {
  struct ioq_listen_addr la;
  ioq_err e = {0};
  cr_assert_eq(ioq_parse_listen("[::1]:0", IOQ_LISTEN_PORT0, &la, &e), 0, "%s", e.msg);
  cr_assert_eq(la.port, 0);
  cr_assert_eq(ioq_parse_listen(":0", 0, &la, &e), -1);
  cr_assert(strstr(e.msg, "port must be 1-65535"), "%s", e.msg);
  cr_assert_eq(ioq_parse_listen(":99999", IOQ_LISTEN_PORT0, &la, &e), -1);
  cr_assert(strstr(e.msg, "port must be 0-65535"), "%s", e.msg);
  cr_assert_eq(ioq_parse_listen(":65535", 0, &la, &e), 0, "%s", e.msg);
}

struct bad {
  const char *in, *want;
};

Test(listen, refusals_name_the_problem) {
  static const struct bad bad[] = {
      {"", "is empty"},
      {"8888", "has no port"},
      {"nowhere", "has no port"},
      {"[::1]8080", "has no port"},
      {"host:80", "not a numeric IPv4 address"},
      {"localhost:9464", "not a numeric IPv4 address"},
      {"1.2.3.4:99999", "port must be"},
      {"1.2.3.4:", "port must be"},
      {":-1", "port must be"},
      {":+80", "port must be"},
      {": 80", "port must be"},
      {":80x", "port must be"},
      {"[::1:80", "unbalanced '['"},
      {"[x]:1", "not a numeric IPv6 address"},
      {"[1.2.3.4]:1", "not a numeric IPv6 address"},
      {"[]:1", "holds no IPv6 address"},
      {"1:2:3:4:5:6:7:8:9:10:80", "not a numeric IPv6 address"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct ioq_listen_addr la;
    ioq_err e = {0};
    cr_assert_eq(ioq_parse_listen(bad[i].in, IOQ_LISTEN_PORT0, &la, &e), -1, "'%s' accepted",
                 bad[i].in);
    cr_assert(strstr(e.msg, bad[i].want), "'%s': '%s' lacks '%s'", bad[i].in, e.msg, bad[i].want);
  }
}

Test(listen, long_host_is_refused_not_cut) {
  char s[200];
  memset(s, '1', sizeof s);
  s[150] = ':';
  s[151] = '8';
  s[152] = '\0';
  struct ioq_listen_addr la;
  ioq_err e = {0};
  cr_assert_eq(ioq_parse_listen(s, 0, &la, &e), -1);
  cr_assert(strstr(e.msg, "host too long"), "%s", e.msg);
  cr_assert_eq(ioq_parse_listen(NULL, 0, &la, &e), -1);
}

// SPDX-License-Identifier: Apache-2.0
/* "[HOST]:PORT" -> sockaddr (listenaddr.h). getaddrinfo with
 * AI_NUMERICHOST: no name lookup, IPv6 scope ids (%eth0) understood. */
#include "base/listenaddr.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

#include "base/fsutil.h"

/* host (no brackets, not empty) of family fam -> out->ss */
static int numeric(const char *s, const char *host, int fam, struct ioq_listen_addr *out,
                   ioq_err *e) {
  struct addrinfo hints = {.ai_family = fam, .ai_flags = AI_NUMERICHOST | AI_PASSIVE,
                           .ai_socktype = SOCK_STREAM};
  struct addrinfo *ai = NULL;
  if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai || ai->ai_addrlen > sizeof out->ss) {
    if (ai)
      freeaddrinfo(ai);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "listen address '%s': '%s' is not a numeric %s address%s",
                    s, host, fam == AF_INET6 ? "IPv6" : "IPv4",
                    fam == AF_INET6 ? "" : " (IPv6: [ADDR]:PORT)");
  }
  memcpy(&out->ss, ai->ai_addr, ai->ai_addrlen);
  out->len = (socklen_t)ai->ai_addrlen;
  freeaddrinfo(ai);
  return 0;
}

int ioq_parse_listen(const char *s, unsigned flags, struct ioq_listen_addr *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!s || !*s)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "listen address is empty (want [HOST]:PORT, e.g. :9464)");
  const char *colon, *host = s;
  size_t hl;
  bool bracketed = s[0] == '[';
  if (bracketed) {
    const char *close = strchr(s, ']');
    if (!close)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "listen address '%s': unbalanced '['", s);
    if (close[1] != ':')
      return ioq_fail(e, IOQ_EINVAL_INPUT, "listen address '%s' has no port (want [IPV6]:PORT)", s);
    host = s + 1;
    hl = (size_t)(close - host);
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon)
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "listen address '%s' has no port (want [HOST]:PORT, e.g. :9464)", s);
    hl = (size_t)(colon - s);
  }
  uint64_t port;
  bool port0 = flags & IOQ_LISTEN_PORT0;
  if (ioq_parse_u64(colon + 1, &port) < 0 || port > 65535 || (port == 0 && !port0))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "listen address '%s': port must be %s-65535", s,
                    port0 ? "0" : "1");
  if (hl >= sizeof out->host)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "listen address '%s': host too long", s);
  memcpy(out->host, host, hl);
  out->host[hl] = '\0';
  out->port = (unsigned)port;
  if (bracketed && !hl)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "listen address '%s': '[]' holds no IPv6 address", s);
  if (!hl) { /* :PORT */
    struct sockaddr_in *a4 = (struct sockaddr_in *)&out->ss;
    a4->sin_family = AF_INET;
    a4->sin_addr.s_addr = htonl(INADDR_ANY);
    out->len = sizeof *a4;
  } else if (numeric(s, out->host, bracketed || strchr(out->host, ':') ? AF_INET6 : AF_INET, out,
                     e) < 0) {
    return -1;
  }
  if (out->ss.ss_family == AF_INET6)
    ((struct sockaddr_in6 *)&out->ss)->sin6_port = htons((uint16_t)port);
  else
    ((struct sockaddr_in *)&out->ss)->sin_port = htons((uint16_t)port);
  return 0;
}

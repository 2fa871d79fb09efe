// SPDX-License-Identifier: Apache-2.0
/* Listen addresses of the HTTP servers ("[HOST]:PORT"), one parser for the
 * plugin's --metrics-address / --health-address and the extender's --listen /
 * --metrics-listen. Accepted:
 *   :PORT            every IPv4 address
 *   IPV4:PORT        a numeric IPv4 address (127.0.0.1:9464)
 *   [IPV6]:PORT      a numeric IPv6 address ([::]:443, [fe80::1%eth0]:80)
 *   IPV6:PORT        a bare IPv6 address, as $(POD_IP):PORT gives on an
 *                    IPv6 cluster (fd00::5:9464: the last ':' starts the port)
 * Host names are refused (a server binds an address, not a name). PORT is
 * decimal, 1-65535, or 0 too with IOQ_LISTEN_PORT0 (the kernel picks one). */
#ifndef IOQOS_LISTENADDR_H
#define IOQOS_LISTENADDR_H

#include <stddef.h>
#include <sys/socket.h>

#include "base/error.h"

#define IOQ_LISTEN_PORT0 1u /* port 0 is allowed */

struct ioq_listen_addr {
  struct sockaddr_storage ss; /* family AF_INET or AF_INET6, port set */
  socklen_t len;              /* of the sockaddr in ss */
  char host[64];              /* the address as written, without brackets; "" = any */
  unsigned port;
};

/* Parses s (flags: IOQ_LISTEN_*). 0, or -1 with a message quoting s: "listen
 * address 'x' has no port (...)", "...: port must be 1-65535", "...: 'h' is
 * not a numeric IPv4 address", ... out is zeroed first. */
int ioq_parse_listen(const char *s, unsigned flags, struct ioq_listen_addr *out, ioq_err *e)
    __attribute__((warn_unused_result));

#endif

// SPDX-License-Identifier: Apache-2.0
/* Reloads the extender's TLS certificate, key and client CA when their
 * files change (cert-manager, or a kubelet-mounted Secret whose files are
 * swapped by a symlink), without dropping the listening socket. */
#ifndef IOQOS_EXT_TLSWATCH_H
#define IOQOS_EXT_TLSWATCH_H

#include "httpd.h"
#include "base/error.h"

struct ext_tlswatch;

/* Polls the files every interval_ms; the contents h serves now are
 * cert/key/ca (PEM text, copied). ca_path may be NULL. */
struct ext_tlswatch *ext_tlswatch_start(struct ext_httpd *h, const char *cert_path,
                                        const char *key_path, const char *ca_path,
                                        const char *cert, const char *key, const char *ca,
                                        unsigned interval_ms, ioq_err *e);
/* Stops the thread; h is no longer touched afterwards. */
void ext_tlswatch_stop(struct ext_tlswatch *w);

#endif

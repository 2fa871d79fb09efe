// SPDX-License-Identifier: Apache-2.0
/* Refused requests: each one is counted in
 * ioqos_extender_rejected_requests_total{reason} and logged. A client can
 * repeat a refusal as often as it likes, so the reasons logged at warn write
 * at most one line per reason per EXT_REFUSAL_LOG_WINDOW_S (base/lograte.h):
 * the first at once, the ones held back after it at debug only, their number
 * as suppressed=N on the reason's next warn line, or in a summary line
 * `more requests refused reason=R suppressed=N since_s=S` from
 * ext_refusals_tick once the window is over, and at exit. The reasons a
 * client error causes (400, 404, 405, 413) are logged at debug, one line
 * each, as every request is at that level. Memory: one slot per reason.
 * Thread-safe. */
#ifndef IOQOS_EXT_REFUSAL_H
#define IOQOS_EXT_REFUSAL_H

#include "metrics.h"

/* At most one warn line per reason in this many seconds. */
#define EXT_REFUSAL_LOG_WINDOW_S 10

struct ext_refusals;

/* Counts into m (not owned). NULL on OOM. */
struct ext_refusals *ext_refusals_new(struct ext_metrics *m);
/* Logs the lines still held back, then frees. */
void ext_refusals_free(struct ext_refusals *r);

/* One refused request: counted, and logged as `request refused reason=
 * verb= status= error=` (status 0: the connection was closed without a
 * reply). */
void ext_refused(struct ext_refusals *r, enum ext_reject why, enum ext_verb verb, unsigned status,
                 const char *error);

/* Writes the summary of each reason whose window is over with lines held
 * back. Call it every second or so. */
void ext_refusals_tick(struct ext_refusals *r);

/* What a libmicrohttpd log message (its text in libmicrohttpd 0.9.75) says;
 * *status: the reply libmicrohttpd sent itself, 0 if none. */
enum ext_mhd_msg {
  EXT_MHD_OTHER = 0, /* a server message: logged at warn, every one */
  EXT_MHD_REFUSAL,   /* one connection or request refused: *why */
  EXT_MHD_DETAIL,    /* detail of a refusal whose own message follows: debug */
};
enum ext_mhd_msg ext_refusal_mhd_kind(const char *msg, enum ext_reject *why, unsigned *status);

#endif

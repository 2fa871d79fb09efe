// SPDX-License-Identifier: Apache-2.0
/* Registration with kubelet, on its own thread: kubelet calls back into our
 * endpoint (GetDevicePluginOptions) while Register is in flight, so Register
 * must never run on a gRPC event-loop thread.
 *
 * Kubelet restart: the new kubelet deletes every socket in the
 * device-plugins directory and then listens on kubelet.sock again. We watch
 * the directory (inotify, plus a periodic check in case events are lost):
 * our socket gone -> serve again on a fresh socket; kubelet.sock replaced ->
 * register again. Grants live in the cgroups and in kubelet's pod resources
 * view, so nothing is lost. While kubelet is away, retries back off
 * exponentially (1 s .. 30 s) and restart at once when kubelet.sock appears. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "grpcs.h"
#include "ioqos/log.h"
#include "metrics.h"
#include "ioqos/monoclock.h"
#include "plugin.h"
#include "registrar.h"
#include "rpc_client.h"

#define CHECK_EVERY_MS 1000
#define BACKOFF_MIN_S 1.0
#define BACKOFF_MAX_S 30.0

struct registrar {
  struct plugin *p;
  pthread_t thread;
  int ino_fd;
  atomic_bool stop;
  dev_t kubelet_dev;
  ino_t kubelet_ino;
  bool kubelet_seen;
};

static int do_register(struct plugin *p, struct endpoint *ep, ioq_err *e) {
  V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
  opts.pre_start_required = 1;
  opts.get_preferred_allocation_available = 1;
  V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
  req.version = DP_API_VERSION;
  req.endpoint = ep->sock_name;
  req.resource_name = (char *)ioq_resource_name(ep->res);
  req.options = &opts;
  ProtobufCMessage *resp = NULL;
  int rc = rpc_call_unary(p->kubelet_sock, "/v1beta1.Registration/Register", &req.base,
                          &v1beta1__empty__descriptor, &resp, REGISTER_TIMEOUT_MS, NULL, e);
  if (resp)
    protobuf_c_message_free_unpacked(resp, NULL);
  return rc;
}

static void check(struct registrar *rg) {
  struct plugin *p = rg->p;
  struct stat ks;
  bool kubelet_up = stat(p->kubelet_sock, &ks) == 0 && S_ISSOCK(ks.st_mode);
  if (kubelet_up && (!rg->kubelet_seen || ks.st_dev != rg->kubelet_dev ||
                     ks.st_ino != rg->kubelet_ino)) {
    if (rg->kubelet_seen) {
      ioq_info("kubelet socket re-created (kubelet restarted) socket=%s", p->kubelet_sock);
      metrics_inc(p->metrics, C_KUBELET_RESTARTS);
    }
    rg->kubelet_seen = true;
    rg->kubelet_dev = ks.st_dev;
    rg->kubelet_ino = ks.st_ino;
  }
  double now = ioq_mono_s();
  for (int r = 0; r < IOQ_RES_COUNT && !atomic_load(&rg->stop); r++) {
    struct endpoint *ep = &p->ep[r];
    if (!endpoint_socket_intact(ep)) {
      ioq_warn("own socket gone, serving again resource=%s socket=%s", ioq_resource_name(ep->res),
               ep->sock_path);
      atomic_store(&ep->registered, false);
      endpoint_stop(ep, false);
      ioq_err e;
      if (endpoint_start(ep, &e) < 0) {
        ioq_error("serving again failed resource=%s error=\"%s\"", ioq_resource_name(ep->res),
                  e.msg);
        continue; /* next check retries */
      }
      metrics_inc_res(p->metrics, C_RESERVES, ep->res);
      ep->backoff = 0;
      ep->next_attempt = 0;
    }
    if (atomic_load(&ep->registered) &&
        (!kubelet_up || ks.st_dev != ep->kubelet_dev || ks.st_ino != ep->kubelet_ino)) {
      if (kubelet_up) { /* a new kubelet: register again at once */
        atomic_store(&ep->registered, false);
        ep->backoff = 0;
        ep->next_attempt = 0;
      }
      continue;
    }
    if (atomic_load(&ep->registered) || !kubelet_up || now < ep->next_attempt)
      continue;
    ioq_err e;
    if (do_register(p, ep, &e) == 0) {
      atomic_store(&ep->registered, true);
      ep->kubelet_dev = ks.st_dev;
      ep->kubelet_ino = ks.st_ino;
      ep->backoff = 0;
      metrics_inc_res(p->metrics, C_REGISTER_OK, ep->res);
      ioq_info("registered with kubelet resource=%s endpoint=%s kubelet=%s",
               ioq_resource_name(ep->res), ep->sock_name, p->kubelet_sock);
    } else {
      ep->backoff = ep->backoff < BACKOFF_MIN_S ? BACKOFF_MIN_S
                    : ep->backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S
                                                      : ep->backoff * 2;
      ep->next_attempt = ioq_mono_s() + ep->backoff;
      metrics_inc_res(p->metrics, C_REGISTER_FAIL, ep->res);
      ioq_warn("register with kubelet failed resource=%s retry_in=%.0fs error=\"%s\"",
               ioq_resource_name(ep->res), ep->backoff, e.msg);
    }
  }
}

static void *registrar_main(void *arg) {
  struct registrar *rg = arg;
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  while (!atomic_load(&rg->stop)) {
    check(rg);
    /* sleep until the directory changes, the next retry is due, or a second passed */
    struct pollfd pfd = {.fd = rg->ino_fd, .events = POLLIN};
    int rc = poll(&pfd, rg->ino_fd >= 0 ? 1 : 0, CHECK_EVERY_MS);
    if (rc > 0 && (pfd.revents & POLLIN)) {
      ssize_t n = read(rg->ino_fd, buf, sizeof buf);
      for (char *q = buf; n > 0 && q < buf + n;) {
        const struct inotify_event *ev = (const struct inotify_event *)q;
        if (ev->len)
          ioq_debug("device-plugins dir event name=%s mask=0x%x", ev->name, ev->mask);
        q += sizeof *ev + ev->len;
      }
    }
  }
  return NULL;
}

struct registrar *registrar_start(struct plugin *p, ioq_err *e) {
  struct registrar *rg = calloc(1, sizeof *rg);
  if (!rg)
    return ioq_fail(e, ENOMEM, "registrar: out of memory allocating the registrar"), NULL;
  rg->p = p;
  rg->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (rg->ino_fd < 0 ||
      inotify_add_watch(rg->ino_fd, p->opts.device_plugin_dir,
                        IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF) < 0) {
    /* the periodic check still catches everything, a little later */
    ioq_warn("inotify on the device-plugins dir unavailable, polling dir=%s error=\"%s\"",
             p->opts.device_plugin_dir, strerror(errno));
    if (rg->ino_fd >= 0)
      close(rg->ino_fd);
    rg->ino_fd = -1;
  }
  int rc = pthread_create(&rg->thread, NULL, registrar_main, rg);
  if (rc != 0) {
    if (rg->ino_fd >= 0)
      close(rg->ino_fd);
    free(rg);
    errno = rc;
    return ioq_fail_errno(e, "registrar thread"), NULL;
  }
  return rg;
}

void registrar_stop(struct registrar *rg) {
  if (!rg)
    return;
  atomic_store(&rg->stop, true);
  pthread_join(rg->thread, NULL);
  if (rg->ino_fd >= 0)
    close(rg->ino_fd);
  free(rg);
}

// SPDX-License-Identifier: Apache-2.0
/* Registration with kubelet, on its own thread, and the one place that
 * decides ioqos_kubelet_registered.
 *
 * Device-plugin mode: kubelet calls back into our endpoint
 * (GetDevicePluginOptions) while Register is in flight, so Register must
 * never run on a gRPC event-loop thread.
 *
 * Kubelet restart: the new kubelet deletes every socket in the
 * device-plugins directory and then listens on kubelet.sock again. We watch
 * the directory (inotify, plus a periodic check in case events are lost):
 * our socket gone -> serve again on a fresh socket; kubelet.sock replaced ->
 * register again. A kubelet.sock is a new kubelet when it was seen gone (or
 * not a socket) since the last one, when inotify reports it created, or
 * when its (dev, inode, birth time) differ: a filesystem may give the new
 * file the old one's inode (ext4 does at once), so the inode alone cannot
 * tell. Each new kubelet gets the next generation number; an endpoint is
 * registered with the generation it last registered with. Grants live in the cgroups and in kubelet's pod resources
 * view, so nothing is lost. While kubelet is away, retries back off
 * exponentially (1 s .. 30 s) and restart at once when kubelet.sock appears.
 *
 * The gauge is 1 only while the kubelet we registered with is there now:
 * every check looks at kubelet.sock, and a socket gone or one nobody
 * accepts connections on (a kubelet that died leaves its file behind) drops
 * it to 0 at once. No Register is tried until kubelet accepts again.
 *
 * DRA mode: kubelet registers the driver itself (plugins_registry), so there
 * is nothing to call; the same checks watch the registration socket too and
 * pass kubelet.sock's liveness to the driver (dradriver_watch): every
 * kubelet serves kubelet.sock, DRA or not. */
#include <errno.h>
#include <fcntl.h> /* AT_FDCWD */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h> /* makedev */
#include <unistd.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "endpoint.h"
#include "dradriver.h"
#include "support/grpcs.h"
#include "base/log.h"
#include "support/metrics.h"
#include "base/monoclock.h"
#include "plugin.h"
#include "registrar.h"
#include "support/rpc_client.h"

#define CHECK_EVERY_MS 1000
#define BACKOFF_MIN_S 1.0
#define BACKOFF_MAX_S 30.0

struct registrar {
  struct plugin *p;
  pthread_t thread;
  int ino_fd;
  atomic_bool stop;
  /* the kubelet.sock last seen (registrar thread only) */
  unsigned long kubelet_gen; /* 0 = none seen yet; +1 for each new kubelet */
  dev_t kubelet_dev;
  ino_t kubelet_ino;
  struct statx_timestamp kubelet_btime; /* zero when the filesystem has none */
  bool kubelet_gone;    /* seen absent since: the next one is new whatever its inode */
  bool kubelet_created; /* inotify: kubelet.sock created or moved into place */
};

/* kubelet.sock as one check found it */
struct kubelet_view {
  bool present; /* a socket file; dev, ino, btime: its identity */
  bool live;    /* and kubelet accepts connections on it */
  dev_t dev;
  ino_t ino;
  struct statx_timestamp btime; /* zero when the filesystem keeps none */
  char why[IOQ_ERR_MSG_MAX]; /* why not live */
};

static void look_at_kubelet(const char *sock, struct kubelet_view *kv) {
  memset(kv, 0, sizeof *kv);
  struct statx st;
  if (statx(AT_FDCWD, sock, 0, STATX_TYPE | STATX_INO | STATX_BTIME, &st) < 0) {
    snprintf(kv->why, sizeof kv->why, "kubelet socket %s",
             errno == ENOENT ? "gone" : strerror(errno));
    return;
  }
  if (!S_ISSOCK(st.stx_mode)) {
    snprintf(kv->why, sizeof kv->why, "kubelet socket path is not a socket");
    return;
  }
  kv->present = true;
  kv->dev = makedev(st.stx_dev_major, st.stx_dev_minor);
  kv->ino = st.stx_ino;
  if (st.stx_mask & STATX_BTIME)
    kv->btime = st.stx_btime;
  ioq_err e;
  int rc = endpoint_probe(sock, &e);
  kv->live = rc == 1;
  if (rc == 0)
    snprintf(kv->why, sizeof kv->why, "kubelet socket refuses connections (kubelet not running)");
  else if (rc < 0)
    snprintf(kv->why, sizeof kv->why, "kubelet socket not connectable: %s", e.msg);
}

/* Counts a kubelet.sock that is a new file, a kubelet restart: it was seen
 * gone since the last one, inotify saw it created, or its identity differs. */
static void note_kubelet(struct registrar *rg, const struct kubelet_view *kv) {
  if (!kv->present) {
    if (rg->kubelet_gen)
      rg->kubelet_gone = true;
    return;
  }
  bool same = rg->kubelet_gen && !rg->kubelet_gone && !rg->kubelet_created &&
              kv->dev == rg->kubelet_dev && kv->ino == rg->kubelet_ino &&
              kv->btime.tv_sec == rg->kubelet_btime.tv_sec &&
              kv->btime.tv_nsec == rg->kubelet_btime.tv_nsec;
  rg->kubelet_created = false;
  if (same)
    return;
  if (rg->kubelet_gen) {
    ioq_info("kubelet socket re-created (kubelet restarted) socket=%s", rg->p->kubelet_sock);
    metrics_inc(rg->p->metrics, C_KUBELET_RESTARTS);
  }
  rg->kubelet_gen++;
  rg->kubelet_gone = false;
  rg->kubelet_dev = kv->dev;
  rg->kubelet_ino = kv->ino;
  rg->kubelet_btime = kv->btime;
}

/* The gauge of one resource; logs each change with its reason. */
static void set_registered(struct plugin *p, struct endpoint *ep, bool on, const char *why) {
  if (atomic_exchange(&ep->registered, on) == on)
    return;
  if (on)
    ioq_info("registered with kubelet resource=%s endpoint=%s kubelet=%s",
             ioq_resource_name(ep->res), ep->sock_name, p->kubelet_sock);
  else
    ioq_warn("kubelet registration lost resource=%s kubelet=%s reason=\"%s\"",
             ioq_resource_name(ep->res), p->kubelet_sock, why);
}

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

/* Our socket deleted means kubelet restarted (it deletes every socket in the
 * directory): serve a fresh one. false while that fails (retried next check). */
static bool keep_serving(struct plugin *p, struct endpoint *ep) {
  if (endpoint_socket_intact(ep))
    return true;
  set_registered(p, ep, false, "own socket deleted (kubelet restarting)");
  ioq_warn("own socket gone, serving again resource=%s socket=%s", ioq_resource_name(ep->res),
           ep->sock_path);
  endpoint_stop(ep, false);
  ioq_err e;
  if (endpoint_start(ep, &e) < 0) {
    ioq_error("serving again failed resource=%s error=\"%s\"", ioq_resource_name(ep->res), e.msg);
    return false;
  }
  metrics_inc_res(p->metrics, C_RESERVES, ep->res);
  ep->backoff = 0;
  ep->next_attempt = 0;
  return true;
}

/* true while registered with the kubelet that is there now; drops the
 * gauge as soon as that kubelet is gone or another one took its place. */
static bool still_registered(struct registrar *rg, struct endpoint *ep,
                             const struct kubelet_view *kv) {
  struct plugin *p = rg->p;
  if (!atomic_load(&ep->registered))
    return false;
  if (!kv->live) {
    set_registered(p, ep, false, kv->why);
    return false;
  }
  if (ep->kubelet_gen == rg->kubelet_gen)
    return true;
  set_registered(p, ep, false, "kubelet socket re-created (a new kubelet)");
  ep->backoff = 0; /* a new kubelet: register again at once */
  ep->next_attempt = 0;
  return false;
}

/* kubelet's answer to a Register for an endpoint it already streams from (kubelet >= 1.37:
 * the device manager keeps one connection per resource and socket path until its
 * ListAndWatch ends) */
#define KUBELET_ALREADY_CONNECTED "device plugin already connected"

/* Registered with the kubelet behind kubelet.sock now. The identity is looked at again
 * after Register: during a kubelet restart the file looked at before the call can be the
 * old kubelet's, still accepting while the new one's cleanup runs, while Register already
 * reached the new one; keeping the old identity would read the next check as another
 * kubelet and register again, which kubelet refuses (seen on a loaded node: the gauge
 * stayed 0 and /readyz 503 for minutes while kubelet streamed from us). */
static void registered_with(struct registrar *rg, struct endpoint *ep) {
  struct kubelet_view now;
  look_at_kubelet(rg->p->kubelet_sock, &now);
  if (now.live)
    note_kubelet(rg, &now);
  ep->kubelet_gen = rg->kubelet_gen;
  ep->backoff = 0;
  set_registered(rg->p, ep, true, NULL);
}

static void try_register(struct registrar *rg, struct endpoint *ep) {
  struct plugin *p = rg->p;
  ioq_err e;
  if (do_register(p, ep, &e) == 0) {
    metrics_inc_res(p->metrics, C_REGISTER_OK, ep->res);
    registered_with(rg, ep);
    return;
  }
  /* kubelet refuses because it already holds a connection to this socket path: when it
   * streams ListAndWatch from the socket we serve now, that connection is ours and the
   * registration stands (a stream of an older socket of ours ended when we stopped it) */
  if (strstr(e.msg, KUBELET_ALREADY_CONNECTED) && endpoint_streams(ep) > 0) {
    ioq_info("kubelet already streams from our socket, registration stands resource=%s "
             "endpoint=%s kubelet_said=\"%s\"",
             ioq_resource_name(ep->res), ep->sock_name, e.msg);
    registered_with(rg, ep);
    return;
  }
  ep->backoff = ep->backoff < BACKOFF_MIN_S ? BACKOFF_MIN_S
                : ep->backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S
                                                  : ep->backoff * 2;
  ep->next_attempt = ioq_mono_s() + ep->backoff;
  metrics_inc_res(p->metrics, C_REGISTER_FAIL, ep->res);
  ioq_warn("register with kubelet failed resource=%s retry_in=%.0fs error=\"%s\"",
           ioq_resource_name(ep->res), ep->backoff, e.msg);
}

static void check(struct registrar *rg) {
  struct plugin *p = rg->p;
  struct kubelet_view kv;
  look_at_kubelet(p->kubelet_sock, &kv);
  note_kubelet(rg, &kv);
  if (p->opts.mode == PLUGIN_MODE_DRA) {
    dradriver_watch(p->drad, kv.live, kv.why);
    return;
  }
  double now = ioq_mono_s();
  for (int r = 0; r < IOQ_RES_COUNT && !atomic_load(&rg->stop); r++) {
    struct endpoint *ep = p->ep[r];
    if (!keep_serving(p, ep) || still_registered(rg, ep, &kv) || !kv.live || now < ep->next_attempt)
      continue;
    try_register(rg, ep);
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
          ioq_debug("kubelet dir event name=%s mask=0x%x", ev->name, ev->mask);
        /* a new kubelet.sock, even where the check never saw the old one gone */
        if (ev->len && (ev->mask & (IN_CREATE | IN_MOVED_TO)) &&
            !strcmp(ev->name, KUBELET_SOCKET_NAME))
          rg->kubelet_created = true;
        q += sizeof *ev + ev->len;
      }
    }
  }
  return NULL;
}

/* The directories whose sockets the checks look at: kubelet.sock's, and in
 * DRA mode the registration socket's. -1 when inotify is unavailable (the
 * periodic check still catches everything, a little later). */
static int watch_dirs(const struct plugin *p) {
  const uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF;
  const char *dirs[2] = {p->opts.device_plugin_dir,
                         p->opts.mode == PLUGIN_MODE_DRA ? p->opts.kubelet_registry_dir : NULL};
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    ioq_warn("inotify unavailable, polling error=\"%s\"", strerror(errno));
    return -1;
  }
  for (int i = 0; i < 2 && dirs[i]; i++)
    if (inotify_add_watch(fd, dirs[i], mask) < 0) {
      ioq_warn("inotify on a kubelet dir unavailable, polling dir=%s error=\"%s\"", dirs[i],
               strerror(errno));
      close(fd);
      return -1;
    }
  return fd;
}

struct registrar *registrar_start(struct plugin *p, ioq_err *e) {
  struct registrar *rg = calloc(1, sizeof *rg);
  if (!rg)
    return ioq_fail(e, ENOMEM, "registrar: out of memory allocating the registrar"), NULL;
  rg->p = p;
  rg->ino_fd = watch_dirs(p);
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

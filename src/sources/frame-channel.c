/*
 * The channel ffmpeg writes its frames into, read by a thread of its own (src/sources/frame-channel.ts):
 * a Unix socket pair, one end ffmpeg's stdout, the other read with recv(MSG_WAITALL) straight
 * into the frame buffer, one call per frame. Node's own reads of a pipe or socket take at most
 * what the socket holds (64 KB a read through a child's stdout, each into a new buffer, then a
 * copy into the frame; about 200 KB with net.Socket's onread): 34–60 JavaScript callbacks a
 * 3.1 MB 1080p frame, which cost Node more CPU than the letterbox. Here the kernel fills the
 * frame and JavaScript hears of it once. Built by `npm ci` (scripts/build.mjs) with the system's
 * C compiler; without it, frames come through FrameSocket or the stdout pipe.
 *
 * open(callback) → [channel, childFd]: childFd (close-on-exec, so no other child inherits it) is
 * given to spawn as ffmpeg's stdout, then closed here with closeChild(channel).
 * read(channel, uint8array): fills it from the socket on the channel's thread, then calls
 * callback(bytes, errno) on the main thread: bytes < its length at the end of the stream (or an
 * error, errno > 0). One read at a time; the array is held until the callback, and must not
 * be detached (transferred) before it: the thread writes into its memory, which a detached
 * array's new owner may free (the frame pool's buffers never are). An exception the callback
 * throws goes to 'uncaughtException'.
 * close(channel): stops the thread (a read in progress ends, without a callback) and closes both ends.
 */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
  int fd, child_fd;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint8_t *ptr;
  size_t len, got;
  int err, pending, closing, closed, joined;
  int refs; /* the JavaScript handle and the thread-safe function: freed when both are gone */
  napi_threadsafe_function tsfn;
  napi_ref buf;
} channel_t;

static void unref_channel(channel_t *ch) {
  if (--ch->refs > 0) return;
  pthread_mutex_destroy(&ch->mu);
  pthread_cond_destroy(&ch->cv);
  free(ch);
}

static void *reader(void *arg) {
  channel_t *ch = arg;
  for (;;) {
    pthread_mutex_lock(&ch->mu);
    while (!ch->pending && !ch->closing) pthread_cond_wait(&ch->cv, &ch->mu);
    if (ch->closing) {
      pthread_mutex_unlock(&ch->mu);
      return NULL;
    }
    uint8_t *p = ch->ptr;
    size_t len = ch->len;
    pthread_mutex_unlock(&ch->mu);
    size_t got = 0;
    int err = 0;
    while (got < len) {
      ssize_t n = recv(ch->fd, p + got, len - got, MSG_WAITALL);
      if (n > 0) got += (size_t)n;
      else if (n == 0) break;
      else if (errno != EINTR) {
        err = errno;
        break;
      }
    }
    pthread_mutex_lock(&ch->mu);
    ch->pending = 0;
    ch->got = got;
    ch->err = err;
    int closing = ch->closing;
    pthread_mutex_unlock(&ch->mu);
    if (closing) return NULL;
    napi_call_threadsafe_function(ch->tsfn, NULL, napi_tsfn_blocking);
  }
}

static void call_js(napi_env env, napi_value cb, void *context, void *data) {
  (void)data;
  channel_t *ch = context;
  if (env == NULL || ch->closed) return;
  napi_unref_threadsafe_function(env, ch->tsfn);
  if (ch->buf) {
    napi_delete_reference(env, ch->buf);
    ch->buf = NULL;
  }
  napi_value argv[2], undef;
  napi_get_undefined(env, &undef);
  napi_create_double(env, (double)ch->got, &argv[0]);
  napi_create_int32(env, ch->err, &argv[1]);
  /* An exception the callback throws (a frame's consumer failing) goes to 'uncaughtException',
   * as one from a socket's or a pipe's reader does. Left to N-API, a thread-safe function's
   * callback that throws is only a warning (DEP0168): the exception was lost, and with it the
   * next read, so the source stalled without an error. */
  bool thrown = false;
  if (napi_call_function(env, undef, cb, 2, argv, NULL) != napi_ok && napi_is_exception_pending(env, &thrown) == napi_ok && thrown) {
    napi_value e;
    if (napi_get_and_clear_last_exception(env, &e) == napi_ok) napi_fatal_exception(env, e);
  }
}

/* Stops the thread (a recv in progress ends: shutdown wakes it) and closes both ends. */
static void stop_thread(channel_t *ch) {
  if (ch->joined) return;
  pthread_mutex_lock(&ch->mu);
  ch->closing = 1;
  pthread_cond_signal(&ch->cv);
  pthread_mutex_unlock(&ch->mu);
  shutdown(ch->fd, SHUT_RDWR);
  pthread_join(ch->thread, NULL);
  ch->joined = 1;
  close(ch->fd);
  ch->fd = -1;
  if (ch->child_fd >= 0) close(ch->child_fd);
  ch->child_fd = -1;
}

/* After close, or when Node's environment is torn down with the channel still open (the
 * process exits): the thread is stopped before anything it uses is freed. */
static void tsfn_finalize(napi_env env, void *data, void *hint) {
  (void)hint;
  channel_t *ch = data;
  ch->closed = 1;
  stop_thread(ch);
  if (ch->buf) {
    napi_delete_reference(env, ch->buf);
    ch->buf = NULL;
  }
  unref_channel(ch);
}

static void handle_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  unref_channel(data);
}

static channel_t *channel_of(napi_env env, napi_value v) {
  napi_valuetype t;
  void *p = NULL;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_external || napi_get_value_external(env, v, &p) != napi_ok) return NULL;
  return p;
}

static napi_value open_channel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value cb;
  if (napi_get_cb_info(env, info, &argc, &cb, NULL, NULL) != napi_ok || argc != 1) {
    napi_throw_type_error(env, NULL, "frame channel: open(callback)");
    return NULL;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    napi_throw_error(env, "ERR_FRAME_CHANNEL", "frame channel: socketpair failed");
    return NULL;
  }
  channel_t *ch = calloc(1, sizeof *ch);
  if (!ch) {
    close(sv[0]);
    close(sv[1]);
    napi_throw_error(env, NULL, "frame channel: out of memory");
    return NULL;
  }
  ch->fd = sv[0];
  ch->child_fd = sv[1];
  ch->refs = 2;
  pthread_mutex_init(&ch->mu, NULL);
  pthread_cond_init(&ch->cv, NULL);
  napi_value name, handle, childFd, result;
  napi_create_string_utf8(env, "argus frame channel", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, cb, NULL, name, 0, 1, ch, tsfn_finalize, ch, call_js, &ch->tsfn) != napi_ok) {
    close(sv[0]);
    close(sv[1]);
    pthread_mutex_destroy(&ch->mu);
    pthread_cond_destroy(&ch->cv);
    free(ch);
    napi_throw_error(env, NULL, "frame channel: no thread-safe function");
    return NULL;
  }
  /* Keeps the process alive only while a read is pending, as a socket being read would. */
  napi_unref_threadsafe_function(env, ch->tsfn);
  /* The thread needs little stack: one recv loop. */
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  int started = pthread_create(&ch->thread, &attr, reader, ch);
  pthread_attr_destroy(&attr);
  if (started != 0) {
    close(sv[0]);
    close(sv[1]);
    ch->fd = ch->child_fd = -1;
    ch->closed = 1;
    ch->joined = 1;
    ch->refs = 1; /* no handle was made: the function's finalizer frees it */
    napi_release_threadsafe_function(ch->tsfn, napi_tsfn_abort);
    napi_throw_error(env, "ERR_FRAME_CHANNEL", "frame channel: no thread");
    return NULL;
  }
  if (napi_create_external(env, ch, handle_finalize, NULL, &handle) != napi_ok) {
    napi_throw_error(env, NULL, "frame channel: no handle");
    return NULL;
  }
  napi_create_int32(env, ch->child_fd, &childFd);
  napi_create_array_with_length(env, 2, &result);
  napi_set_element(env, result, 0, handle);
  napi_set_element(env, result, 1, childFd);
  return result;
}

static napi_value read_frame(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value a[2];
  channel_t *ch;
  bool is = false;
  if (napi_get_cb_info(env, info, &argc, a, NULL, NULL) != napi_ok || argc != 2 || !(ch = channel_of(env, a[0])) || napi_is_typedarray(env, a[1], &is) != napi_ok || !is) {
    napi_throw_type_error(env, NULL, "frame channel: read(channel, Uint8Array)");
    return NULL;
  }
  napi_typedarray_type t;
  size_t len, off;
  void *data;
  napi_value ab;
  if (napi_get_typedarray_info(env, a[1], &t, &len, &data, &ab, &off) != napi_ok || t != napi_uint8_array || len == 0) {
    napi_throw_type_error(env, NULL, "frame channel: read needs a non-empty Uint8Array");
    return NULL;
  }
  if (ch->closed || ch->pending || ch->buf) {
    napi_throw_error(env, "ERR_FRAME_CHANNEL", ch->closed ? "frame channel: closed" : "frame channel: a read is pending");
    return NULL;
  }
  if (napi_create_reference(env, a[1], 1, &ch->buf) != napi_ok) {
    napi_throw_error(env, NULL, "frame channel: no reference");
    return NULL;
  }
  napi_ref_threadsafe_function(env, ch->tsfn);
  pthread_mutex_lock(&ch->mu);
  ch->ptr = data;
  ch->len = len;
  ch->pending = 1;
  pthread_cond_signal(&ch->cv);
  pthread_mutex_unlock(&ch->mu);
  return NULL;
}

/* The one argument of closeChild and close, a channel; NULL (a TypeError thrown) otherwise. */
static channel_t *channel_arg(napi_env env, napi_callback_info info, const char *usage) {
  size_t argc = 1;
  napi_value a;
  channel_t *ch = NULL;
  if (napi_get_cb_info(env, info, &argc, &a, NULL, NULL) != napi_ok || argc != 1 || !(ch = channel_of(env, a))) napi_throw_type_error(env, NULL, usage);
  return ch;
}

static napi_value close_child(napi_env env, napi_callback_info info) {
  channel_t *ch = channel_arg(env, info, "frame channel: closeChild(channel)");
  if (!ch) return NULL;
  if (ch->child_fd >= 0) close(ch->child_fd);
  ch->child_fd = -1;
  return NULL;
}

static napi_value close_channel(napi_env env, napi_callback_info info) {
  channel_t *ch = channel_arg(env, info, "frame channel: close(channel)");
  if (!ch || ch->closed) return NULL;
  ch->closed = 1;
  stop_thread(ch);
  if (ch->buf) {
    napi_delete_reference(env, ch->buf);
    ch->buf = NULL;
    napi_unref_threadsafe_function(env, ch->tsfn);
  }
  napi_release_threadsafe_function(ch->tsfn, napi_tsfn_abort);
  return NULL;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  const struct { const char *name; napi_callback cb; } fns[] = { { "open", open_channel }, { "read", read_frame }, { "closeChild", close_child }, { "close", close_channel } };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value fn;
    if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &fn) != napi_ok) return NULL;
    if (napi_set_named_property(env, exports, fns[i].name, fn) != napi_ok) return NULL;
  }
  return exports;
}

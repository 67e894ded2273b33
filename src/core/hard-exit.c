/*
 * _exit(2) for Node (src/core/native.ts hardExit): ends the process with a status of argus's
 * choosing without what process.exit does after its 'exit' handlers, which is to tear down Node's
 * environment and join every worker thread. A worker thread inside a native call that never
 * returns (an ONNX Runtime run of a model that does not end, a session still being built) is
 * never joined: process.exit waited for ever, and argus killed itself with SIGKILL instead
 * (status 137, the run's own status lost). The caller emits 'exit' first (the handlers end
 * argus's children and write the log lines held for a slow stderr reader); the writes of the log
 * are write(2)s, not C stdio, so nothing is left in a buffer here. The terminal's mode is put back
 * first (uv_tty_reset_mode, what Node's own exit calls: raw mode set through libuv, `setRawMode`,
 * undone), as _exit, like the SIGKILL before it, left the shell's terminal raw (no echo, no line
 * editing) after argus ended.
 *
 * exit(code): does not return. Built by `npm ci` (scripts/build.mjs); without it the caller
 * falls back to SIGKILL.
 */
#include <node_api.h>
#include <unistd.h>

/*
 * libuv's (uv.h), which the node binary exports. Declared here, not from <uv.h>: a Node whose
 * headers folder has node_api.h but not uv.h (libuv packaged apart, its headers not installed)
 * could not build this module at all, and every exit it makes was a SIGKILL again. Weak: a node
 * that does not export it still loads the module (the exit keeps its status, the mode stays).
 */
extern int uv_tty_reset_mode(void) __attribute__((weak));

static napi_value hard_exit(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t code = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc >= 1) napi_get_value_int32(env, argv[0], &code);
  if (uv_tty_reset_mode) uv_tty_reset_mode();
  _exit(code & 0xff);
  return NULL;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_value fn;
  if (napi_create_function(env, "exit", NAPI_AUTO_LENGTH, hard_exit, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "exit", fn) != napi_ok) return NULL;
  return exports;
}

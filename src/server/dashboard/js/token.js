/**
 * The access token the page was opened with (`/?token=…`), forwarded to everything the page
 * asks the server for: /api/sources and /ws.
 */
const params = new URLSearchParams(location.search);
// A `+` is itself (a base64 token pasted into the address bar), not form encoding's space: a token holds no space.
export const token = params.get('token')?.replace(/ /g, '+') ?? null;

/** `path` with the token appended to its query (unchanged without a token). */
export function withToken(path) {
  if (!token) return path;
  return `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;
}

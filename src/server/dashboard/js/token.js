/**
 * The access token the page was opened with (`/?token=…`), forwarded to everything the page
 * asks the server for: /api/sources and /ws.
 */
const params = new URLSearchParams(location.search);
export const token = params.get('token');

/** `path` with the token appended to its query (unchanged without a token). */
export function withToken(path) {
  if (!token) return path;
  return `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;
}

/**
 * An image URL for an alert's snapshot: the server's own (`url`: the WebSocket sends alerts with
 * their picture's address on the server, /api/snapshot?id=…, fetched with the page's session);
 * inline data (`mode: embed`) as a data URL; null for anything else. A `ref` (`mode: ref`) names a file on the argus host's disk, not a URL the
 * server answers: loading it as one showed a broken image. The list shows its name instead.
 */
export function snapshotSrc(snap) {
  if (!snap) return null;
  if (typeof snap.url === 'string' && snap.url.startsWith('/api/snapshot?')) return snap.url;
  if (typeof snap.data === 'string' && snap.data.length) return `data:${snap.contentType === 'image/jpeg' ? 'image/jpeg' : 'application/octet-stream'};base64,${snap.data}`;
  return null;
}

/** The file name of a snapshot ref (its folder is the argus host's, of no use in a browser). */
export function refName(ref) {
  return String(ref).split(/[\\/]/).pop();
}

/**
 * What the list shows for an alert that came without its snapshot (`snapshotOmitted`: its render
 * failed, too many waited, or, on the WebSocket, the picture was larger than the server holds):
 * a short word and, as its tooltip, the server's reason. Null when nothing was left out. Before,
 * such an alert showed an empty space, and one too large for the server came with a URL that
 * answered 404 and said "no longer held" for a picture never held.
 */
export function omittedNote(omitted) {
  if (!omitted || typeof omitted !== 'object') return null;
  const text = omitted.reason === 'too-large' ? 'too large' : omitted.reason === 'busy' ? 'skipped' : omitted.reason === 'failed' ? 'failed' : omitted.reason === 'no-frame' ? 'no frame' : 'left out';
  const detail = typeof omitted.detail === 'string' ? omitted.detail : '';
  return { text, title: `No snapshot: ${detail || 'it was left out'}` };
}

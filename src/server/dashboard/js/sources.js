/** The source records by id: the first mention of a source (any message or poll) creates its record and tile. */
import { $ } from './dom.js';
import { app, newSource } from './store.js';
import { buildTile, dropTile } from './tile.js';

export function ensureSource(id) {
  let s = app.sources.get(id);
  if (s) return s;
  s = newSource(id);
  s.el = buildTile(s);
  app.sources.set(id, s);
  const empty = $('#no-sources');
  if (empty) empty.hidden = true;
  return s;
}

/**
 * Takes a source's tile away: the server no longer has it (a hello that does not list it: argus
 * restarted without it). Its tile stayed, saying "no frames" of a camera that was no longer there.
 */
export function removeSource(id) {
  const s = app.sources.get(id);
  if (!s) return;
  app.sources.delete(id);
  dropTile(s);
  const empty = $('#no-sources');
  if (empty && app.sources.size === 0) empty.hidden = false;
}

/** The source records by id: the first mention of a source (any message or poll) creates its record and tile. */
import { $ } from './dom.js';
import { app, newSource } from './store.js';
import { buildTile } from './tile.js';

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

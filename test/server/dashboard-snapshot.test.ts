import { describe, expect, it } from 'vitest';

// The browser's own module (plain JS, no type declarations), imported as the page imports it.
type Snap = { contentType?: string; data?: string; ref?: string; url?: string } | undefined;
const load = async () =>
  (await import('../../src/server/dashboard/js/snapshot.js' as string)) as { snapshotSrc: (s: Snap) => string | null; refName: (r: string) => string; omittedNote: (o: unknown) => { text: string; title: string } | null };

describe('dashboard: an alert snapshot', () => {
  it('inline data is shown as a data URL', async () => {
    const { snapshotSrc } = await load();
    expect(snapshotSrc({ contentType: 'image/jpeg', data: '/9j/4AAQ' })).toBe('data:image/jpeg;base64,/9j/4AAQ');
    expect(snapshotSrc({ contentType: 'text/html', data: 'PGI+' })).toBe('data:application/octet-stream;base64,PGI+');
  });

  it('the WebSocket\'s form, the server\'s /api/snapshot URL, is loaded from the server (with the page\'s session); no other URL is', async () => {
    const { snapshotSrc } = await load();
    expect(snapshotSrc({ contentType: 'image/jpeg', url: '/api/snapshot?id=cam%3Ar%3A1' })).toBe('/api/snapshot?id=cam%3Ar%3A1');
    for (const url of ['https://evil.example/x.jpg', '//evil.example/x', 'javascript:alert(1)', '/api/sources']) expect(snapshotSrc({ contentType: 'image/jpeg', url }), url).toBeNull();
  });

  it('a ref names a file on the argus host, not a URL: it is not loaded (it gave a broken image) and only its name is shown', async () => {
    const { snapshotSrc, refName } = await load();
    expect(snapshotSrc({ contentType: 'image/jpeg', ref: '/var/lib/argus/snapshots/a-1.jpg' })).toBeNull();
    expect(refName('/var/lib/argus/snapshots/a-1.jpg')).toBe('a-1.jpg');
    expect(refName('C:\\argus\\snapshots\\a-2.jpg')).toBe('a-2.jpg');
    expect(snapshotSrc(undefined)).toBeNull();
  });

  it('an alert without its snapshot says why (snapshotOmitted: too large for the server, a failed render), its detail as the tooltip; it showed an empty space', async () => {
    const { omittedNote } = await load();
    expect(omittedNote({ reason: 'too-large', detail: 'the picture (9 bytes) is larger than the WebSocket holds' })).toEqual({ text: 'too large', title: 'No snapshot: the picture (9 bytes) is larger than the WebSocket holds' });
    expect(omittedNote({ reason: 'failed', detail: 'encode failed' })?.text).toBe('failed');
    expect(omittedNote({ reason: 'some-later-reason' })).toEqual({ text: 'left out', title: 'No snapshot: it was left out' });
    expect(omittedNote(undefined)).toBeNull();
  });
});

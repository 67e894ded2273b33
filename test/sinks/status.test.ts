// The status block on a terminal: redrawn in place at any width, never over a log line.
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { aboveStatus } from '../../src/core/log.js';
import { fit, sameTerminal, StatusArea } from '../../src/core/terminal.js';
import { forTerminal } from '../../src/core/text.js';
import { StatusReporter } from '../../src/sinks/status.js';
import { newSourceStats, recordTransition, type SourceStats } from '../../src/sources/stats.js';
import { FakeTty } from '../helpers/terminal.js';

/** A source whose status line is about 125 characters long, like a real one. */
function source(id: string): SourceStats {
  const st = newSourceStats(id);
  for (let i = 0; i < 50; i++) {
    st.e2e.add(40 + i);
    st.pipeline.add(30 + i);
  }
  st.producedBy = 'due';
  st.state = 'streaming';
  return st;
}

const statusRows = (tty: FakeTty, id = 'lobby') => tty.text().filter((l) => l.startsWith(`${id}  in `));

describe('status line on a terminal', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('a line wider than the terminal is cut to it, so each tick redraws in place (80 columns, 125-character line)', () => {
    const tty = new FakeTty(80);
    const st = source('lobby');
    const reporter = new StatusReporter([st], tty as never, 1000);
    expect(reporter.lines()[0].length).toBeGreaterThan(80);
    reporter.start();
    for (let i = 0; i < 5; i++) {
      st.framesIn += 10;
      vi.advanceTimersByTime(1000);
    }
    reporter.stop();
    const screen = tty.text();
    expect(screen).toHaveLength(1); // one row: no earlier status line left behind, no wrapped tail
    expect(screen[0]).toMatch(/^lobby {2}in 10\.0 fps/);
    expect(screen[0].length).toBeLessThan(80);
    expect(screen[0].endsWith('…')).toBe(true);
  });

  it('log lines written between ticks stay whole on the screen, above the block (pino through the block, and plain writes to the stream)', () => {
    const tty = new FakeTty(80);
    const st = source('lobby');
    const area = new StatusArea(tty);
    const logger = pino({ base: undefined, timestamp: false }, aboveStatus({ write: (s) => tty.write(s) }, area));
    const reporter = new StatusReporter([st], area, 1000);
    reporter.start();
    logger.info('starting');
    vi.advanceTimersByTime(1000);
    const warning = `source lobby: reconnecting after ${'x'.repeat(150)} (attempt 1)`;
    logger.warn(warning);
    logger.error('second line, 60 characters long ........................');
    vi.advanceTimersByTime(1000);
    tty.write('argus: written to stderr directly\n');
    vi.advanceTimersByTime(1000);
    reporter.stop();
    logger.info('after the run');

    const screen = tty.text();
    const joined = screen.join('\n');
    // Whole, with every wrapped row of the long one: (80-column rows joined back).
    const unwrapped = screen.join('');
    expect(unwrapped).toContain(JSON.stringify({ level: 40, msg: warning }));
    expect(unwrapped).toContain('"second line, 60 characters long ........................"');
    expect(joined).toContain('argus: written to stderr directly');
    expect(statusRows(tty)).toHaveLength(1);
    // Order: logs, then the last status block, then what came after the stop below it.
    expect(screen.at(-1)).toBe('{"level":30,"msg":"after the run"}');
    expect(screen.at(-2)).toMatch(/^lobby {2}in /);
    expect(screen.at(-3)).toBe('argus: written to stderr directly');
    expect(screen[0]).toBe('{"level":30,"msg":"starting"}');
  });

  it('a warning written to the stream between two ticks is not overwritten by the second', () => {
    const tty = new FakeTty(200);
    const reporter = new StatusReporter([source('lobby')], tty as never, 1000);
    reporter.start();
    vi.advanceTimersByTime(1000);
    tty.write('{"level":40,"msg":"source lobby: reconnecting"}\n');
    vi.advanceTimersByTime(1000);
    reporter.stop();
    expect(tty.text()).toEqual(['{"level":40,"msg":"source lobby: reconnecting"}', expect.stringMatching(/^lobby {2}in /)]);
  });

  it('a resize redraws the block at once at the new width, without leaving rows behind or covering a log line', () => {
    const tty = new FakeTty(200);
    const a = source('a');
    const b = source('b');
    const area = new StatusArea(tty);
    const reporter = new StatusReporter([a, b], area, 1000);
    area.print('log before\n');
    reporter.start();
    vi.advanceTimersByTime(1000);
    expect(tty.text()).toHaveLength(3);
    expect(tty.text()[1].endsWith('ms')).toBe(true); // 200 columns: the whole line

    tty.resize(60);
    expect(tty.text()).toHaveLength(3);
    expect(tty.text()[0]).toBe('log before');
    for (const l of tty.text().slice(1)) expect(l.length).toBeLessThanOrEqual(59);

    tty.resize(100);
    area.print('log after\n');
    vi.advanceTimersByTime(1000);
    expect(tty.text()).toEqual(['log before', 'log after', expect.stringMatching(/^a {2}in /), expect.stringMatching(/^b {2}in /)]);
    expect(tty.text()[2].length).toBe(99);
    reporter.stop();
    expect(tty.listenerCount('resize')).toBe(0);
  });

  it('a block taller than the terminal keeps a row free and says how many sources it left out', () => {
    const tty = new FakeTty(200, 10);
    const stats = Array.from({ length: 30 }, (_, i) => source(`cam${i}`));
    const reporter = new StatusReporter(stats, tty as never, 1000);
    reporter.start();
    vi.advanceTimersByTime(3000);
    reporter.stop();
    const screen = tty.text();
    expect(screen).toHaveLength(9);
    expect(screen[0]).toMatch(/^cam0 /);
    expect(screen[7]).toMatch(/^cam7 /);
    expect(screen[8]).toBe('… and 22 more sources');
  });

  it('text that does not end its line (a progress bar) is not overwritten: the block goes on the next row', () => {
    const tty = new FakeTty(120);
    const reporter = new StatusReporter([source('lobby')], tty as never, 1000);
    reporter.start();
    vi.advanceTimersByTime(1000);
    tty.write('downloading 40%');
    vi.advanceTimersByTime(1000);
    reporter.stop();
    expect(tty.text()).toEqual(['downloading 40%', expect.stringMatching(/^lobby {2}in /)]);
  });

  it('a burst of log lines costs the terminal their own bytes, not the whole block again per line: the block comes back once after it', () => {
    const tty = new FakeTty(200, 60);
    const stats = Array.from({ length: 40 }, (_, i) => source(`cam${i}`));
    const area = new StatusArea(tty);
    let bytes = 0;
    const logger = pino({ base: undefined, timestamp: false }, aboveStatus({ write: (s) => ((bytes += s.length), tty.write(s)) }, area));
    const reporter = new StatusReporter(stats, area, 1000);
    reporter.start();
    vi.advanceTimersByTime(1000); // the block: 40 rows
    const line = JSON.stringify({ level: 30, msg: 'source cam7: reconnecting' }).length + 1;
    for (let i = 0; i < 1000; i++) logger.info('source cam7: reconnecting');
    // The lines themselves and one erase of the block: it was drawn again per line (4.7 MB).
    expect(bytes).toBeLessThan(1000 * line + 100);
    vi.advanceTimersByTime(150);
    const screen = tty.text();
    expect(screen.slice(-40).every((l) => /^cam\d+ {2}in /.test(l))).toBe(true); // back at the bottom
    expect(screen.at(-41)).toBe('{"level":30,"msg":"source cam7: reconnecting"}');
    reporter.stop();
  });

  it('with stdout carrying data to the same terminal (--jsonl -), plain lines: a redraw in place would erase the data lines written between ticks', () => {
    const tty = new FakeTty(200);
    const raw: string[] = [];
    const write = tty.write.bind(tty);
    tty.write = (c: string | Uint8Array) => (raw.push(String(c)), write(c));
    const reporter = new StatusReporter([source('lobby')], tty as never, 1000, false);
    reporter.start();
    vi.advanceTimersByTime(1000);
    tty.write('{"seq":1}\n{"seq":2}\n'); // stdout, not through the block
    vi.advanceTimersByTime(1000);
    reporter.stop();
    const screen = tty.text();
    expect(screen.filter((l) => l.startsWith('{"seq"'))).toEqual(['{"seq":1}', '{"seq":2}']);
    expect(screen.filter((l) => l.startsWith('[status] lobby'))).toHaveLength(2);
    expect(raw.join('')).not.toMatch(/\x1b\[\d+A/);
  });

  it('text without its newline written just after a log line (before the block is back) is not erased by the block', () => {
    const tty = new FakeTty(120);
    const area = new StatusArea(tty);
    const reporter = new StatusReporter([source('lobby')], area, 1000);
    reporter.start();
    vi.advanceTimersByTime(1000);
    area.print('a log line\n');
    tty.write('progress 42%'); // within the 0.1 s before the block comes back
    vi.advanceTimersByTime(150);
    vi.advanceTimersByTime(1000);
    tty.write(' done\n');
    vi.advanceTimersByTime(1000);
    reporter.stop();
    expect(tty.text().slice(0, 3)).toEqual(['a log line', 'progress 42%', ' done']);
    expect(tty.text().at(-1)).toMatch(/^lobby {2}in /);
  });

  it('stdout to the same terminal (an extension’s console.log): its lines stay above the block too', () => {
    const tty = new FakeTty(120);
    // Its own file descriptor: writes reach the screen without going through stderr's write.
    const screen = FakeTty.prototype.write.bind(tty);
    const stdout = { isTTY: true, write: (c: string | Uint8Array) => screen(c) };
    const area = new StatusArea(tty, [stdout]);
    const reporter = new StatusReporter([source('lobby')], area, 1000);
    reporter.start();
    vi.advanceTimersByTime(1000);
    stdout.write('{"seq":1}\n');
    stdout.write('{"seq":2}\n');
    vi.advanceTimersByTime(1000);
    stdout.write('{"seq":3}\n');
    vi.advanceTimersByTime(1000);
    reporter.stop();
    expect(tty.text()).toEqual(['{"seq":1}', '{"seq":2}', '{"seq":3}', expect.stringMatching(/^lobby {2}in /)]);
  });

  it('sameTerminal: not for a file or /dev/null, nor when stderr is not a terminal', () => {
    expect(sameTerminal('/dev/null')).toBe(false);
    expect(sameTerminal(process.execPath)).toBe(false);
  });

  it('elsewhere (not a terminal) each tick writes plain lines, as before', () => {
    const writes: string[] = [];
    const stream = { isTTY: false, write: (s: string) => (writes.push(s), true) };
    const reporter = new StatusReporter([source('lobby')], stream, 1000);
    reporter.start();
    vi.advanceTimersByTime(2000);
    reporter.stop();
    expect(writes).toHaveLength(2);
    for (const w of writes) expect(w).toMatch(/^\[status\] lobby {2}in .* pipeline p50 [\d.]+ ms {2}p99 [\d.]+ ms\n$/);
    expect(writes.join('')).not.toContain('\x1b');
  });
});

describe('status line: the state of a source that is not streaming', () => {
  it('a camera down (reconnecting, stalled), an ended file and a failed source say so with the reason; a streaming one says nothing more', () => {
    const up = source('up');
    const down = source('down');
    recordTransition(down, { source: 'down', state: 'reconnecting', previous: 'streaming', reason: 'source "down": ffmpeg exited with code 1: camera: 10.0.0.7:554: ECONNREFUSED; retry 3 in 0.5 s', at: 0, attempt: 3 });
    const stalled = source('stalled');
    recordTransition(stalled, { source: 'stalled', state: 'stalled', previous: 'streaming', reason: 'no frame for 2.0 s', at: 0, attempt: 0 });
    const ended = source('ended');
    recordTransition(ended, { source: 'ended', state: 'ended', previous: 'streaming', reason: 'end of file', at: 0, attempt: 0 });
    const failed = source('failed');
    failed.error = new Error('source "failed": gave up after 3 attempts\nffmpeg: rtsp://admin:hunter2@10.0.0.9/x: 401');
    const [a, b, c, d, e] = new StatusReporter([up, down, stalled, ended, failed], { isTTY: false, write: () => true }).lines();
    expect(a).toMatch(/pipeline p50 [\d.]+ ms {2}p99 [\d.]+ ms$/);
    // Before, the line of a camera down for an hour differed from a quiet camera's only by 0.0 fps, beside its last frames' latency.
    expect(b).toMatch(/ms {2}RECONNECTING: source "down": ffmpeg exited with code 1: camera: 10\.0\.0\.7:554: ECONNREFUSED; retry 3 in 0\.5 s$/);
    expect(c).toMatch(/ms {2}STALLED: no frame for 2\.0 s$/);
    expect(d).toMatch(/ms {2}ENDED: end of file$/);
    expect(e).toMatch(/ms {2}FAILED: source "failed": gave up after 3 attempts$/);
  });
});

describe('fit', () => {
  it('cuts to the width in terminal columns: wide characters count two', () => {
    expect(fit('abc', 3)).toBe('abc');
    expect(fit('abcdef', 4)).toBe('abc…');
    expect(fit('大厅摄像头 ok', 8)).toBe('大厅摄…');
  });

  it('shows control characters as forTerminal does, \\xNN (one policy for untrusted text on a terminal), and measures them so', () => {
    expect(fit('FAILED: \x1b[31mred\r', 40)).toBe('FAILED: \\x1b[31mred\\x0d');
    expect(fit('a\u009b2J\u0007 \uD800', 40)).toBe(forTerminal('a\u009b2J\u0007 \uD800'));
    expect(fit('a\u009b2J\u0007 \uD800', 40)).toBe('a\\x9b2J\\x07 \uFFFD');
    // The escape's four characters take four columns: cut after them, never inside one.
    expect(fit('ab\x1bcdef', 8)).toBe('ab\\x1bc…');
    expect(fit('ab\x1bcdef', 5)).toBe('ab…');
    expect(fit('ab\r\ncdef', 11)).toBe('ab\\x0d\\x0a…'); // CR LF, one character to the segmenter
  });

  it('measures with string-width: emoji outside the CJK blocks, emoji sequences and combining marks take the columns a terminal gives them, and a cut never splits a character', () => {
    expect(fit('🚀🚀🚀', 5)).toBe('🚀🚀…'); // 6 columns (the hand-written table counted 3)
    expect(fit('👩‍👩‍👧 ok', 5)).toBe('👩‍👩‍👧 ok'); // one family emoji: 2 columns, not 6
    expect(fit('🇯🇵🇯🇵🇯🇵', 5)).toBe('🇯🇵🇯🇵…'); // a flag is one character of 2 columns
    expect(fit('Кра\u0483\u0483сная', 7)).toBe('Кра\u0483\u0483сная'); // combining marks outside U+0300–U+036F: no column
    expect(fit('e\u0301e\u0301e\u0301e\u0301', 3)).toBe('e\u0301e\u0301…'); // the mark stays with its letter
    expect(fit('ｶﾒﾗ１ ok', 8)).toBe('ｶﾒﾗ１ ok'); // half-width katakana 1 column, full-width digit 2
  });
});

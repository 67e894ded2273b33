import { createServer, connect, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import { HttpRelay } from '../../src/sources/http-relay.js';
import { MAX_PENDING, PEER_WAIT_MS, peerOwner, readTable, sharedReads, type Peer, type PeerOwner } from '../../src/sources/relay-door.js';

const HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n';
const HEADER6 = '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n';
const UID = 1000;
const hex = (p: number) => p.toString(16).toUpperCase().padStart(4, '0');
/** A line of /proc/net/tcp: the socket `local` → `remote` (addresses as the table writes them), state `st`, owned by `uid`. */
const row = (local: string, remote: string, uid: number, st = '01', inode = 1) => `   0: ${local} ${remote} ${st} 00000000:00000000 00:00000000 00000000 ${uid}        0 ${inode} 1 0000000000000000 20 4 30 10 -1\n`;
const RELAY = 4000;
const PEER_PORT = 40000;
/** The peer as the relay's socket names it (remoteAddress, remotePort). */
const PEER: Peer = { address: '127.0.0.1', port: PEER_PORT };
/** The peer's socket (127.0.0.1:PEER → 127.0.0.1:RELAY) and the relay's side of it. */
const peerRow = (uid: number, st = '01', from = '0100007F') => row(`${from}:${hex(PEER_PORT)}`, `0100007F:${hex(RELAY)}`, uid, st);
const relaySide = row(`0100007F:${hex(RELAY)}`, `0100007F:${hex(PEER_PORT)}`, UID);
const listener = row(`0100007F:${hex(RELAY)}`, '00000000:0000', UID, '0A');

/** A lookup over tables that change from read to read (`tcp(i)`, `tcp6(i)` for the i-th read), on a virtual clock: sleeping advances it. */
function tables(tcp: (read: number) => string | undefined, tcp6: (read: number) => string | undefined = () => HEADER6) {
  let t = 0;
  let reads = 0;
  return {
    get reads() {
      return reads;
    },
    get elapsed() {
      return t;
    },
    lookup: {
      uid: UID,
      now: () => t,
      sleep: async (ms: number) => void (t += ms),
      read: async (path: string) => (path.endsWith('6') ? tcp6(reads - 1) : tcp(reads++)),
    },
  };
}

describe("peerOwner: the owner of a connection to a relay, from the kernel's socket tables", () => {
  it("argus's own user's socket is `own`, another user's `foreign`; a TIME_WAIT entry (the kernel's, uid 0) is no owner", async () => {
    expect(await peerOwner(RELAY, PEER, tables(() => HEADER + listener + relaySide + peerRow(UID)).lookup)).toBe('own');
    expect(await peerOwner(RELAY, PEER, tables(() => HEADER + listener + peerRow(UID + 1) + relaySide).lookup)).toBe('foreign');
    const tw = tables(() => HEADER + listener + peerRow(0, '06'));
    expect(await peerOwner(RELAY, PEER, tw.lookup)).toBe('missing');
    // Closed (TIME_WAIT alone): decided at the first read, not after PEER_WAIT_MS of reads.
    expect(tw.reads).toBe(1);
    expect(tw.elapsed).toBe(0);
    // An earlier connection's TIME_WAIT entry beside a live one of the same ports: the live one decides.
    expect(await peerOwner(RELAY, PEER, tables(() => HEADER + listener + peerRow(0, '06') + relaySide + peerRow(UID)).lookup)).toBe('own');
    expect(await peerOwner(RELAY, PEER, tables(() => HEADER + listener + peerRow(0, '06') + peerRow(UID + 1)).lookup)).toBe('foreign');
  });

  it("the peer's socket is the one of its address too: another user's bound to 127.0.0.2 on the port of ffmpeg's own connection is not taken for ffmpeg's", async () => {
    // ffmpeg's 127.0.0.1:P → relay, and another user's 127.0.0.2:P → relay (the same port from
    // another loopback address: any local process may bind it): each is its own, whichever the table lists first.
    const both = HEADER + listener + peerRow(UID) + peerRow(UID + 1, '01', '0200007F') + relaySide;
    expect(await peerOwner(RELAY, { address: '127.0.0.2', port: PEER_PORT }, tables(() => both).lookup)).toBe('foreign');
    expect(await peerOwner(RELAY, PEER, tables(() => both).lookup)).toBe('own');
    const reversed = HEADER + listener + peerRow(UID + 1) + peerRow(UID, '01', '0200007F');
    expect(await peerOwner(RELAY, { address: '127.0.0.2', port: PEER_PORT }, tables(() => reversed).lookup)).toBe('own');
    // From an IPv6 socket (Node may name the address v4-mapped), in tcp6.
    const six = HEADER6 + row(`0000000000000000FFFF00000100007F:${hex(PEER_PORT)}`, `0000000000000000FFFF00000100007F:${hex(RELAY)}`, UID) + row(`0000000000000000FFFF00000200007F:${hex(PEER_PORT)}`, `0000000000000000FFFF00000100007F:${hex(RELAY)}`, UID + 1);
    expect(await peerOwner(RELAY, { address: '::ffff:127.0.0.2', port: PEER_PORT }, tables(() => HEADER + listener, () => six).lookup)).toBe('foreign');
    expect(await peerOwner(RELAY, { address: '127.0.0.2', port: PEER_PORT }, tables(() => HEADER + listener, () => six).lookup)).toBe('foreign');
    // An address that is no IPv4 one cannot be looked up: refused, never served.
    expect(await peerOwner(RELAY, { address: '::1', port: PEER_PORT }, tables(() => both).lookup)).toBe('missing');
  });

  it("a socket its process closed (inode 0: FIN_WAIT2 after it sent a request and closed, uid 0 in the table) is no one's, even for argus run as root", async () => {
    const closedPeer = (st: string) => row(`0100007F:${hex(PEER_PORT)}`, `0100007F:${hex(RELAY)}`, 0, st, 0);
    for (const st of ['05', '04', '08', '0B']) {
      const t = tables(() => HEADER + listener + relaySide + closedPeer(st));
      expect(await peerOwner(RELAY, PEER, { ...t.lookup, uid: 0 }), st).toBe('missing');
      expect(t.reads).toBe(1);
    }
    // A live one beside it decides.
    expect(await peerOwner(RELAY, PEER, { ...tables(() => HEADER + closedPeer('05') + peerRow(0)).lookup, uid: 0 })).toBe('own');
  });

  it('a lookup whose connection closed stops at its next read (`missing`)', async () => {
    const gone = new AbortController();
    const t = tables((i) => {
      if (i === 2) gone.abort();
      return HEADER + listener + relaySide;
    });
    expect(await peerOwner(RELAY, PEER, { ...t.lookup, signal: gone.signal })).toBe('missing');
    expect(t.reads).toBe(3);
    expect(t.elapsed).toBeLessThan(PEER_WAIT_MS);
  });

  it('a peer connected from an IPv6 socket to ::ffff:127.0.0.1 is found in /proc/net/tcp6 (it was never found, and served)', async () => {
    const mapped = (a: string) => `0000000000000000FFFF0000${a}`;
    const six = HEADER6 + row(`${mapped('0100007F')}:${hex(PEER_PORT)}`, `${mapped('0100007F')}:${hex(RELAY)}`, UID + 1);
    expect(await peerOwner(RELAY, PEER, tables(() => HEADER + listener + relaySide, () => six).lookup)).toBe('foreign');
    const bigEndian = HEADER6 + row(`00000000000000000000FFFF7F000001:${hex(PEER_PORT)}`, `00000000000000000000FFFF7F000001:${hex(RELAY)}`, UID);
    expect(await peerOwner(RELAY, PEER, tables(() => HEADER + listener, () => bigEndian).lookup)).toBe('own');
  });

  it('a socket a read skipped is found by a later read within PEER_WAIT_MS (past the 5 reads that were all it got)', async () => {
    const t = tables((i) => HEADER + listener + relaySide + (i >= 8 ? peerRow(UID) : ''));
    expect(await peerOwner(RELAY, PEER, t.lookup)).toBe('own');
    expect(t.reads).toBe(9);
    expect(t.elapsed).toBeLessThan(PEER_WAIT_MS);
  });

  it('a socket not found in PEER_WAIT_MS is `missing` (refused), not served: read again with growing pauses, on the clock, not a count', async () => {
    const t = tables(() => HEADER + listener + relaySide);
    expect(await peerOwner(RELAY, PEER, t.lookup)).toBe('missing');
    expect(t.elapsed).toBe(PEER_WAIT_MS);
    expect(t.reads).toBeGreaterThan(5);
    expect(t.reads).toBeLessThan(20);
  });

  it('tables that cannot tell are `unknown`: none (not Linux), none listing a socket (WSL 1), no uid', async () => {
    expect(await peerOwner(RELAY, PEER, tables(() => undefined, () => undefined).lookup)).toBe('unknown');
    expect(await peerOwner(RELAY, PEER, tables(() => HEADER).lookup)).toBe('unknown');
    expect(await peerOwner(RELAY, PEER, { ...tables(() => HEADER + peerRow(UID)).lookup, uid: undefined })).toBe('unknown');
  });

  it('a table that cannot be read (EMFILE: argus out of file descriptors) tells nothing: the socket is looked for again, and refused if never read, not served as `unknown`', async () => {
    const emfile = () => Promise.reject(Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' }));
    const never = tables(() => HEADER);
    expect(await peerOwner(RELAY, PEER, { ...never.lookup, read: emfile })).toBe('missing');
    // One table read, the other not: no verdict from the one alone (it may not be the peer's).
    const half = tables(() => HEADER);
    expect(await peerOwner(RELAY, PEER, { ...half.lookup, read: (path) => (path.endsWith('6') ? half.lookup.read(path) : emfile()) })).toBe('missing');
    // A read that failed once, then the socket found.
    let failed = 0;
    const later = tables(() => HEADER + listener + relaySide + peerRow(UID + 1));
    expect(await peerOwner(RELAY, PEER, { ...later.lookup, read: (path) => (failed++ === 0 ? emfile() : later.lookup.read(path)) })).toBe('foreign');
    // The tables' own reader: only a table that is not there (ENOENT) is none; any other failure is one (it read as none, and was served).
    expect(await readTable('/proc/no-such-table')).toBeUndefined();
    await expect(readTable('/proc')).rejects.toMatchObject({ code: 'EISDIR' });
  });

  it("only the socket's own line is read: its addresses after a space (not inside a longer address), in a table given as bytes", async () => {
    // An IPv6 socket whose address ends as the peer's IPv4 one does, another user's: not the peer's.
    const lookalike = HEADER6 + row(`0000000000000000FFFF00000100007F:${hex(PEER_PORT)}`, `0100007F:${hex(RELAY)}`, UID + 1);
    const t = tables(() => HEADER + listener + relaySide, () => lookalike);
    expect(await peerOwner(RELAY, PEER, { ...t.lookup, signal: AbortSignal.abort() })).toBe('missing');
    const many = HEADER + Array.from({ length: 5000 }, (_, i) => row(`0100007F:${hex(10000 + i)}`, `0100007F:${hex(RELAY)}`, UID + 1)).join('') + peerRow(UID, '06') + peerRow(UID);
    const bytes = { ...tables(() => HEADER).lookup, read: async (path: string) => (path.endsWith('6') ? undefined : Buffer.from(many, 'latin1')) };
    expect(await peerOwner(RELAY, PEER, bytes)).toBe('own');
    expect(await peerOwner(RELAY, { address: '127.0.0.1', port: 10007 }, bytes)).toBe('foreign');
  });

  it('the tables are read once at a time, however many lookups wait: each asked for while a read runs shares the next read (one started after it was asked)', async () => {
    const started: { path: string; done: (text: string) => void }[] = [];
    const read = sharedReads((path: string) => new Promise<string>((done) => started.push({ path, done })));
    const first = read('/t');
    const waiting = Array.from({ length: 10 }, () => read('/t'));
    const other = read('/t6');
    expect(started.map((s) => s.path)).toEqual(['/t', '/t6']);
    started[0].done('before');
    expect(await first).toBe('before');
    await new Promise((r) => setImmediate(r));
    // The ten share one read, started once the first ended (the first's text may predate their sockets).
    expect(started.map((s) => s.path)).toEqual(['/t', '/t6', '/t']);
    started[2].done('after');
    expect(await Promise.all(waiting)).toEqual(Array(10).fill('after'));
    started[1].done('six');
    expect(await other).toBe('six');
    // Nothing runs: the next asks anew.
    const again = read('/t');
    expect(started).toHaveLength(4);
    started[3].done('again');
    expect(await again).toBe('again');
  });

  it("in the kernel's own tables: this process's connections are found, over IPv4 and from an IPv6 socket to ::ffff:127.0.0.1, and taken for another user's under another uid", async () => {
    const server = createServer(() => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const four = connect(port, '127.0.0.1');
    // An IPv6 socket (Node connects one to a v4-mapped address), listed only in /proc/net/tcp6.
    const six = connect({ port, host: '::ffff:127.0.0.1', family: 6 });
    await Promise.all([four, six].map((s) => new Promise((r) => s.on('connect', r))));
    try {
      for (const s of [four, six]) {
        const peer = { address: s.localAddress!, port: s.localPort! };
        expect(await peerOwner(port, peer)).toBe('own');
        expect(await peerOwner(port, peer, { uid: process.getuid!() + 1 })).toBe('foreign');
        // The same port from another address is another socket: not found.
        expect(await peerOwner(port, { address: '127.0.0.3', port: s.localPort! }, { signal: AbortSignal.abort() })).toBe('missing');
      }
    } finally {
      four.destroy();
      six.destroy();
      server.close();
    }
  });
});

describe("a relay's door (RelayDoor, through the HTTP relay)", () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const c of closers.splice(0)) c();
  });

  /** A camera that takes connections and answers nothing (each held open), counting them. */
  async function silentCamera() {
    const held: Socket[] = [];
    const server = createServer((s) => void held.push(s.on('error', () => {})));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => {
      held.forEach((s) => s.destroy());
      server.close();
    });
    return { port: (server.address() as { port: number }).port, held };
  }

  async function relayTo(port: number, o: { peerCheck: () => Promise<PeerOwner>; maxConnections?: number }) {
    const lines: { msg: string; fields?: Record<string, unknown>; level?: string }[] = [];
    const relay = new HttpRelay(`http://admin:pw@127.0.0.1:${port}/x`, { ...o, log: (msg, fields, level) => void lines.push({ msg, fields, level }) });
    const at = Number(new URL(await relay.listen()).port);
    closers.push(() => relay.close());
    const open = () => {
      const s = connect(at, '127.0.0.1').on('error', () => {});
      closers.push(() => s.destroy());
      return s;
    };
    return { relay, lines, open };
  }
  const until = async (cond: () => boolean) => {
    while (!cond()) await new Promise((r) => setImmediate(r));
  };
  /** Waits until `s` is closed by the relay or the camera holds `reached` connections (a relay that took it: the test fails, not hangs). */
  const refusedOr = async (s: Socket, camera: { held: Socket[] }, reached: number) => {
    await until(() => s.destroyed || camera.held.length >= reached);
    return s.destroyed;
  };

  it('a connection whose owner is not found is refused, with a warning coded VAP_ERR_RELAY_REFUSED; the camera never sees it', async () => {
    const camera = await silentCamera();
    const { lines, open } = await relayTo(camera.port, { peerCheck: async () => 'missing' });
    expect(await refusedOr(open(), camera, 1)).toBe(true);
    expect(camera.held).toHaveLength(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', fields: { code: ErrorCodes.RELAY_REFUSED } });
    expect(lines[0].msg).toMatch(/HTTP relay to 127\.0\.0\.1:\d+: a connection from port \d+ was refused: its socket was not found .* within 2 s/);
  });

  it("another user's is refused alike, naming why", async () => {
    const camera = await silentCamera();
    const { lines, open } = await relayTo(camera.port, { peerCheck: async () => 'foreign' });
    expect(await refusedOr(open(), camera, 1)).toBe(true);
    expect(camera.held).toHaveLength(0);
    expect(lines[0].msg).toMatch(/another user's/);
  });

  it('at most maxConnections open at once: one more is refused and told, and one is taken again once one closes', async () => {
    const camera = await silentCamera();
    const { relay, lines, open } = await relayTo(camera.port, { peerCheck: async () => 'own', maxConnections: 2 });
    const first = open();
    open();
    await until(() => camera.held.length === 2);
    expect(await refusedOr(open(), camera, 3)).toBe(true);
    expect(camera.held).toHaveLength(2);
    expect(lines.map((l) => l.fields?.code)).toEqual([ErrorCodes.RELAY_REFUSED]);
    expect(lines[0].msg).toMatch(/the relay has 2 connections open, its most/);
    first.destroy();
    await until(() => relay['main'].door.openConnections === 1);
    open();
    await until(() => camera.held.length === 3);
  });

  it('a connection that closes while its owner is looked up is dropped then, unlogged, its lookup told to stop, and the next one is not held behind it', async () => {
    const camera = await silentCamera();
    const signals: AbortSignal[] = [];
    let calls = 0;
    const { lines, open } = await relayTo(camera.port, {
      // The first lookup never answers (a socket not found); the second is ffmpeg's.
      peerCheck: ((_relay: number, _peer: Peer, signal?: AbortSignal) => {
        signals.push(signal!);
        return calls++ === 0 ? new Promise<PeerOwner>(() => {}) : Promise.resolve<PeerOwner>('own');
      }) as () => Promise<PeerOwner>,
    });
    const first = open();
    await until(() => calls === 1);
    first.destroy();
    await until(() => signals[0].aborted);
    open();
    await until(() => camera.held.length === 1);
    expect(lines).toHaveLength(0);
  });

  it("the door looks up the peer by its address and port (a connection from 127.0.0.2 is looked up as 127.0.0.2's)", async () => {
    const camera = await silentCamera();
    const asked: Peer[] = [];
    const { relay } = await relayTo(camera.port, { peerCheck: (async (_relay: number, peer: Peer) => (asked.push(peer), 'own')) as () => Promise<PeerOwner> });
    const s = connect({ port: relay['main'].door.port, host: '127.0.0.1', localAddress: '127.0.0.2' }).on('error', () => {});
    closers.push(() => s.destroy());
    await until(() => camera.held.length === 1);
    await new Promise((r) => (s.localPort ? r(0) : s.once('connect', r)));
    expect(asked).toEqual([{ address: '127.0.0.2', port: s.localPort }]);
  });

  it('at most MAX_PENDING wait for their owner to be found: one more is refused at once', async () => {
    const camera = await silentCamera();
    let release!: () => void;
    const answered = new Promise<PeerOwner>((r) => (release = () => r('own')));
    let asked = 0;
    const { lines, open } = await relayTo(camera.port, {
      peerCheck: () => {
        asked++;
        return answered;
      },
      maxConnections: MAX_PENDING + 1,
    });
    for (let i = 0; i < MAX_PENDING; i++) open();
    await until(() => asked === MAX_PENDING);
    const extra = open();
    await until(() => extra.destroyed || asked > MAX_PENDING);
    expect(extra.destroyed).toBe(true);
    expect(asked).toBe(MAX_PENDING);
    expect(lines[0].msg).toMatch(new RegExp(`${MAX_PENDING} connections already wait`));
    release();
    await until(() => camera.held.length === MAX_PENDING);
  });
});

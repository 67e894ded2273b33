import { readFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { ErrorCodes } from '../core/errors.js';
import { ThrottledLog, type LogFn } from '../core/log.js';

/**
 * Who owns the process at the other end of a connection to a relay (peerOwner): `own`, argus's
 * own user; `foreign`, another user; `missing`, its socket not found in the kernel's tables
 * within PEER_WAIT_MS; `unknown`, tables that cannot tell (not Linux; WSL 1's, which list no
 * sockets at all).
 */
export type PeerOwner = 'own' | 'foreign' | 'missing' | 'unknown';

/** The other end of a connection to a relay, as the relay's socket names it (remoteAddress, remotePort): `127.0.0.2`, or v4-mapped `::ffff:127.0.0.2`. */
export interface Peer {
  address: string;
  port: number;
}

/** Who owns the connection to the relay's `relayPort` from `peer` (peerOwner; tests give their own). */
export type PeerCheck = (relayPort: number, peer: Peer, signal?: AbortSignal) => Promise<PeerOwner>;

/** How long the tables are read again for a connection's socket before it is refused (`missing`), ms. */
export const PEER_WAIT_MS = 2000;
/** The first pause between two reads of the tables, ms; each next one twice as long, up to PEER_READ_GAP_MAX_MS. */
const PEER_READ_GAP_MS = 5;
const PEER_READ_GAP_MAX_MS = 250;

/** The kernel's tables of TCP sockets: IPv4, and IPv6, where an IPv6 socket connected to ::ffff:127.0.0.1 is listed. */
export const SOCKET_TABLES = ['/proc/net/tcp', '/proc/net/tcp6'] as const;

/** A socket table's text: as the kernel wrote it (its bytes, searched as they are), or a string (tests). */
export type SocketTable = string | Buffer;

/** What peerOwner reads and waits with (tests give a table that changes from read to read, and a virtual clock). */
export interface PeerLookup {
  /** A table's text, or undefined where there is none (ENOENT: not Linux; tcp6 without IPv6); rejects where it cannot be read now (EMFILE). */
  read?: (path: string) => Promise<SocketTable | undefined>;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** This process's user id; undefined where there is none (not POSIX). */
  uid?: number | undefined;
  /** The connection closed: stop looking (`missing`). */
  signal?: AbortSignal;
}

const hex4 = (p: number) => p.toString(16).toUpperCase().padStart(4, '0');

/** A TCP socket's state in the tables: TIME_WAIT's entries are the kernel's (uid 0), not a process's. */
const TIME_WAIT = '06';
/**
 * The inode of a socket no process holds: its process closed it (FIN_WAIT1, FIN_WAIT2, CLOSING,
 * LAST_ACK after close; the kernel lists a FIN_WAIT2 one as its own, uid 0). A local process that
 * connected, sent a request and closed at once, before argus accepted the connection (its event
 * loop busy), was found as uid 0 in FIN_WAIT2: argus run as root took it for its own, and the
 * camera got the request with the relay's credentials added (`GET /cgi-bin/reboot.cgi`, blind).
 */
const NO_INODE = '0';

/**
 * The peer's socket as the tables write its local and remote address (`peer` → 127.0.0.1:`relayPort`),
 * each form a [local, remote] pair: IPv4 in the host's byte order (little- or big-endian), and
 * IPv6's v4-mapped `::ffff:a.b.c.d` (each 32-bit word in the host's byte order), for a socket
 * connected from an IPv6 one. None for an address that is not IPv4 (no such socket reaches 127.0.0.1).
 */
function socketForms(relayPort: number, peer: Peer): [string, string][] {
  const m = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/i.exec(peer.address);
  if (!m) return [];
  const b = m.slice(1).map((x) => Number(x).toString(16).toUpperCase().padStart(2, '0'));
  const forms: [string, string][] = [];
  for (const [from, relay, mapped] of [
    [b[3] + b[2] + b[1] + b[0], '0100007F', '0000000000000000FFFF0000'],
    [b.join(''), '7F000001', '00000000000000000000FFFF'],
  ]) {
    forms.push([`${from}:${hex4(peer.port)}`, `${relay}:${hex4(relayPort)}`]);
    forms.push([`${mapped}${from}:${hex4(peer.port)}`, `${mapped}${relay}:${hex4(relayPort)}`]);
  }
  return forms;
}

/**
 * The owner's uid of the peer's socket in the tables' texts: the socket whose local address and
 * port are the peer's, and whose remote address is the relay's 127.0.0.1:`relayPort`, in either
 * family (socketForms). Its address too, not its port alone: another user's process may bind
 * 127.0.0.2 (any loopback address, or the host's own) on the port of ffmpeg's connection and
 * connect from there, and the table's first socket of that port, ffmpeg's, was taken for its
 * own. `closed` when the only such socket is in TIME_WAIT or no process holds it (NO_INODE: its
 * process closed it; nothing can read from it); undefined when no table lists it.
 *
 * The socket's two addresses are searched for in the text as it is (`local remote `, after a
 * space), and only its line is read: a host with many sockets has long tables (13 MB for 100 000),
 * and each line split and compared took 140 ms of the event loop for one lookup at that size,
 * 20 ms at 10 000, for every connection any local process makes to a relay.
 */
function ownerIn(tables: readonly SocketTable[], relayPort: number, peer: Peer): number | 'closed' | undefined {
  const needles = socketForms(relayPort, peer).map(([local, remote]) => `${local} ${remote} `);
  let closed = false;
  for (const text of tables) {
    for (const needle of needles) {
      for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) {
        if (charCode(text, at - 1) !== SPACE) continue;
        const end = text.indexOf('\n', at);
        // st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
        const f = slice(text, at + needle.length, end < 0 ? text.length : end).trim().split(/\s+/);
        // (An earlier connection's entry may share the addresses with a live one: the live one decides.)
        if (f[0] === TIME_WAIT || f[6] === NO_INODE) closed = true;
        else return Number(f[4]);
      }
    }
  }
  return closed ? 'closed' : undefined;
}

const SPACE = 0x20;
const charCode = (text: SocketTable, at: number) => (typeof text === 'string' ? text.charCodeAt(at) : text[at]);
const slice = (text: SocketTable, from: number, to: number) => (typeof text === 'string' ? text.slice(from, to) : text.toString('latin1', from, to));

/** A table's bytes; undefined where there is none (ENOENT); any other failure rejects (peerOwner reads again). */
export function readTable(path: string): Promise<Buffer | undefined> {
  return readFile(path).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined;
    throw e;
  });
}

/**
 * `read`, shared: a read asked for while one of the same table runs waits for the next one to
 * start (one started after it was asked: the peer's socket, there before its connection was
 * accepted, is in it), which every read asked for meanwhile shares. So at most one read of each
 * table runs at once, however many connections wait for their owner: the kernel writes the whole
 * table for each (150 ms for 18 000 sockets, on a thread of libuv's pool of 4, which argus's file
 * writes share), and each connection any local process made read both tables at least once.
 */
export function sharedReads<T>(read: (path: string) => Promise<T>): (path: string) => Promise<T> {
  const reads = new Map<string, { running?: Promise<T>; next?: Promise<T> }>();
  return (path) => {
    let r = reads.get(path);
    if (!r) reads.set(path, (r = {}));
    const at = r;
    const start = (): Promise<T> => {
      const p: Promise<T> = read(path).finally(() => {
        if (at.running === p) at.running = undefined;
      });
      return (at.running = p);
    };
    if (!at.running) return start();
    const after = () => {
      at.next = undefined;
      // (One another lookup started once the last ended began after these were asked for: shared.)
      return at.running ?? start();
    };
    return (at.next ??= at.running.then(after, after));
  };
}

/** The tables as every lookup reads them (readTable, sharedReads). */
const readShared = sharedReads(readTable);

/** Whether a table's text lists any socket (a line after the header): WSL 1's list none. */
function listsSockets(text: SocketTable): boolean {
  const nl = text.indexOf('\n');
  return nl >= 0 && /^\s*\d+:/.test(slice(text, nl + 1, nl + 33));
}

/**
 * Who owns the process connected to `relayPort` on 127.0.0.1 from `peer` (PeerOwner): the
 * uid of its socket in /proc/net/tcp and /proc/net/tcp6 (SOCKET_TABLES; one connected from an
 * IPv6 socket to ::ffff:127.0.0.1 is listed only in the second: read in the first alone, it was
 * never found, and served). The peer's socket is there before the relay accepts the connection
 * (the client's side is established first), but the tables are read a page at a time and are no
 * snapshot: a read while other sockets come and go can skip one. So they are read again, with
 * pauses growing from PEER_READ_GAP_MS, until the socket is found or PEER_WAIT_MS have passed:
 * then it is `missing`, and refused. (It was served after 5 reads not finding it: any process
 * that kept its socket out of the table read got the camera's credentials.)
 */
export async function peerOwner(relayPort: number, peer: Peer, o: PeerLookup = {}): Promise<PeerOwner> {
  const uid = 'uid' in o ? o.uid : process.getuid?.();
  if (uid === undefined) return 'unknown';
  const read = o.read ?? readShared;
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const start = now();
  for (let gap = PEER_READ_GAP_MS; ; gap = Math.min(gap * 2, PEER_READ_GAP_MAX_MS)) {
    const reads = await Promise.allSettled(SOCKET_TABLES.map(read));
    const tables = reads.flatMap((r) => (r.status === 'fulfilled' && r.value !== undefined ? [r.value] : []));
    const owner = ownerIn(tables, relayPort, peer);
    // A peer that closed its socket (it may have sent a request first, which keeps its side of
    // the connection from reading as closed here until it is read) has nothing to be served.
    if (owner === 'closed') return 'missing';
    if (owner !== undefined) return owner === uid ? 'own' : 'foreign';
    // No tables (not Linux), or tables that list no sockets at all (WSL 1): they cannot tell. A
    // table that could not be read (EMFILE) tells nothing: it was taken for none, and any local
    // process connecting while argus was out of file descriptors was served.
    if (reads.every((r) => r.status === 'fulfilled') && !tables.some(listsSockets)) return 'unknown';
    const left = start + PEER_WAIT_MS - now();
    if (left <= 0 || o.signal?.aborted) return 'missing';
    await sleep(Math.min(gap, left));
  }
}

/** What a relay's door is told. */
export interface RelayDoorOptions {
  /** Takes an admitted connection (paused: resumed once the camera is reached). */
  accept: (down: Socket) => void;
  /** At most this many admitted connections open at once; another is refused while they are. */
  maxOpen: number;
  /** The admitted connections `maxOpen` counts, where doors share it (an HTTP relay's, one a route); its own by default. */
  open?: Set<Socket>;
  /** Who owns a connection (peerOwner; tests give their own). */
  peerCheck?: PeerCheck;
  /** Where refusals are told (a warning with VAP_ERR_RELAY_REFUSED; at most one line a kind each 10 s, then a count). */
  log?: LogFn;
  /** The relay, as the log names it: `the relay of rtsp://***@cam:554`. */
  name: string;
}

/** Connections at most waiting for their owner to be found; more are refused at once (each check reads the tables). */
export const MAX_PENDING = 32;

/**
 * The door of a relay on 127.0.0.1 (the RTSP relay's, rtsp-tap, and the HTTP relay's): any
 * local process can connect to it, and the relay adds the camera's credentials to what it
 * passes on, so only connections owned by argus's own user (ffmpeg's) are taken (peerOwner).
 * Another user's, one whose socket is not found in time, one past MAX_PENDING waiting for that
 * check, and one past `maxOpen` open connections are closed at once, each with a warning coded
 * VAP_ERR_RELAY_REFUSED (throttled: a local process can connect at will). Connections are decided
 * in the order they came: a later one's answer does not overtake an earlier one (ffmpeg's).
 * Where the tables cannot tell (`unknown`: not Linux, WSL 1), every local connection is taken.
 */
export class RelayDoor {
  private server: Server | undefined;
  private relayPort = 0;
  private pending = 0;
  private readonly open: Set<Socket>;
  /** The latest connection's decision: each waits for the one before it. */
  private decided: Promise<void> = Promise.resolve();
  private readonly peerCheck: PeerCheck;
  private readonly log: ThrottledLog | undefined;

  constructor(private readonly o: RelayDoorOptions) {
    this.peerCheck = o.peerCheck ?? ((relay, peer, signal) => peerOwner(relay, peer, { signal }));
    this.open = o.open ?? new Set();
    this.log = o.log && new ThrottledLog(o.log);
  }

  /** The port it listens on (0 before `listen`). */
  get port(): number {
    return this.relayPort;
  }

  /** Admitted connections open now (tests). */
  get openConnections(): number {
    return this.open.size;
  }

  /** Listens on 127.0.0.1, on a port the system picks; resolves with it (a failure to listen rejects). */
  async listen(): Promise<number> {
    // (Held at once: a close() while it starts to listen closes it.)
    const server = (this.server = createServer((down) => this.admit(down)));
    this.relayPort = await listenLoopback(server);
    return this.relayPort;
  }

  /** Stops listening (connections already taken are the relay's to end). */
  close(): void {
    this.server?.close();
    this.server = undefined;
  }

  private admit(down: Socket): void {
    down.on('error', () => {});
    down.pause();
    const peerPort = down.remotePort;
    const peerAddress = down.remoteAddress;
    if (peerPort === undefined || peerAddress === undefined) return void down.destroy();
    if (this.pending >= MAX_PENDING) return this.refuse(down, peerPort, 'busy', `${MAX_PENDING} connections already wait for their owner to be found`);
    this.pending++;
    // Checked at once, decided in the order the connections came. A connection that closes
    // before its owner is found is dropped then, unlogged, and its lookup stopped: its socket
    // leaves the tables, and the lookup would have waited PEER_WAIT_MS for it, with every later
    // connection (ffmpeg's) decided after it.
    const gone = new AbortController();
    const closed = new Promise<'closed'>((r) => down.once('close', () => r('closed')));
    down.once('close', () => gone.abort());
    const check = Promise.race([this.peerCheck(this.relayPort, { address: peerAddress, port: peerPort }, gone.signal).catch((): PeerOwner => 'missing'), closed]);
    this.decided = this.decided.then(() =>
      check.then((owner) => {
        this.pending--;
        if (owner === 'closed') return void down.destroy();
        if (owner === 'foreign') return this.refuse(down, peerPort, owner, "it is another user's (its socket's owner in /proc/net/tcp or tcp6)");
        if (owner === 'missing') return this.refuse(down, peerPort, owner, `its socket was not found in /proc/net/tcp or /proc/net/tcp6 within ${PEER_WAIT_MS / 1000} s, so its owner is not known`);
        if (down.destroyed || !this.server) return void down.destroy();
        if (this.open.size >= this.o.maxOpen) return this.refuse(down, peerPort, 'full', `the relay has ${this.o.maxOpen} connections open, its most`);
        this.open.add(down);
        down.once('close', () => this.open.delete(down));
        this.o.accept(down);
      }),
    );
  }

  private refuse(down: Socket, peerPort: number, kind: string, why: string): void {
    down.destroy();
    this.log?.log(kind, `${this.o.name}: a connection from port ${peerPort} was refused: ${why}`, { code: ErrorCodes.RELAY_REFUSED }, 'warn');
  }
}

/**
 * Makes `server` (a relay's) listen on 127.0.0.1, on a port the system picks: resolves with the
 * port once it listens (a failure to listen rejects; errors after that are the connections' own).
 */
export function listenLoopback(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      server.on('error', () => {});
      resolve((server.address() as { port: number }).port);
    });
  });
}

import { EventEmitter } from 'node:events';

/**
 * A small terminal for tests: `columns` wide, scrollback kept, xterm's autowrap (a character
 * written past the last column goes to the next row), and the sequences the status block uses:
 * CR, LF (as CR LF, like a pty's onlcr), ESC[nA, ESC[2K, ESC[J. `text()` is the screen, top
 * row first, without the empty rows at the end.
 */
export class FakeTty extends EventEmitter {
  readonly isTTY = true;
  readonly writes: string[] = [];
  private readonly grid: string[][] = [[]];
  private r = 0;
  private c = 0;

  constructor(
    public columns = 80,
    public rows = 40,
  ) {
    super();
  }

  write(chunk: string | Uint8Array): boolean {
    const s = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    this.writes.push(s);
    this.feed(s);
    return true;
  }

  resize(columns: number, rows = this.rows): void {
    this.columns = columns;
    this.rows = rows;
    this.emit('resize');
  }

  text(): string[] {
    const out = this.grid.map((row) => row.join('').trimEnd());
    while (out.length && out.at(-1) === '') out.pop();
    return out;
  }

  private feed(s: string): void {
    for (let i = 0; i < s.length; ) {
      const m = /^\x1b\[(\d*)([A-Za-z])/.exec(s.slice(i, i + 16));
      if (m) {
        const n = Number(m[1] || 1);
        if (m[2] === 'A') this.r = Math.max(0, this.r - n);
        else if (m[2] === 'K') this.grid[this.r] = [];
        else if (m[2] === 'J') {
          this.grid[this.r] = this.grid[this.r].slice(0, this.c);
          this.grid.length = this.r + 1;
        } else throw new Error(`unexpected sequence ${JSON.stringify(m[0])}`);
        i += m[0].length;
        continue;
      }
      const ch = String.fromCodePoint(s.codePointAt(i)!);
      i += ch.length;
      if (ch === '\r') this.c = 0;
      else if (ch === '\n') {
        this.r++;
        this.c = 0;
        while (this.grid.length <= this.r) this.grid.push([]);
      } else if (ch === '\x1b') throw new Error('a stray ESC');
      else {
        if (this.c >= this.columns) {
          this.r++;
          this.c = 0;
          while (this.grid.length <= this.r) this.grid.push([]);
        }
        const row = this.grid[this.r];
        while (row.length < this.c) row.push(' ');
        row[this.c++] = ch;
      }
    }
  }
}

import { describe, expect, it } from 'vitest';
import { escapeXml, forTerminal } from '../../src/core/text.js';

describe('escapeXml', () => {
  it('escapes markup, and shows what XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE/U+FFFF) as U+FFFD', () => {
    expect(escapeXml(`<a href="x">&'`)).toBe('&lt;a href=&quot;x&quot;&gt;&amp;&apos;');
    expect(escapeXml('fork\vlift\u0000\u001f\uFFFE\uFFFF')).toBe('fork\uFFFDlift\uFFFD\uFFFD\uFFFD\uFFFD');
    expect(escapeXml('a\uD800b\uDC00c')).toBe('a\uFFFDb\uFFFDc');
    expect(escapeXml('tab\tline\ncr\r café 人 🎥')).toBe('tab\tline\ncr\r café 人 🎥');
  });
});

describe('forTerminal', () => {
  it('shows C0 and C1 control characters and DEL escaped, so a record cannot retitle the window or clear the screen', () => {
    expect(forTerminal('\u001b]0;TITLE\u0007\u001b[2J')).toBe('\\x1b]0;TITLE\\x07\\x1b[2J');
    expect(forTerminal('a\u009b2Jb\u0085c\u007f')).toBe('a\\x9b2Jb\\x85c\\x7f');
    expect(forTerminal('one\ntwo\r\tthree\u0000')).toBe('one\\x0atwo\\x0d\\x09three\\x00');
  });

  it('shows lone surrogates as U+FFFD and keeps the rest of Unicode as is', () => {
    expect(forTerminal('x\uD800y\uDFFFz')).toBe('x\uFFFDy\uFFFDz');
    expect(forTerminal('café 人 🎥 naïve ÿ\u00a0')).toBe('café 人 🎥 naïve ÿ\u00a0');
  });
});

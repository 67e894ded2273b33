import { describe, expect, it } from 'vitest';
import { escapeXml } from '../../src/core/text.js';

describe('escapeXml', () => {
  it('escapes markup, and shows what XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE/U+FFFF) as U+FFFD', () => {
    expect(escapeXml(`<a href="x">&'`)).toBe('&lt;a href=&quot;x&quot;&gt;&amp;&apos;');
    expect(escapeXml('fork\vlift\u0000\u001f\uFFFE\uFFFF')).toBe('fork\uFFFDlift\uFFFD\uFFFD\uFFFD\uFFFD');
    expect(escapeXml('a\uD800b\uDC00c')).toBe('a\uFFFDb\uFFFDc');
    expect(escapeXml('tab\tline\ncr\r café 人 🎥')).toBe('tab\tline\ncr\r café 人 🎥');
  });
});

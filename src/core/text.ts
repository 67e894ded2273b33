/**
 * Untrusted text (class names from a model file or a manifest, fields of a Kafka record) made
 * safe for where it is written: SVG character data for libvips, or a terminal.
 */

/** A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

// Characters XML 1.0 cannot hold at all: C0 controls but tab, LF and CR; U+FFFE, U+FFFF; lone surrogates.
const XML_INVALID = new RegExp(`[\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\uFFFE\\uFFFF]|${LONE_SURROGATE.source}`, 'g');
const XML_MARKUP: Record<string, string> = { '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' };

/**
 * Text as XML (SVG) character data or attribute value: markup characters escaped, and characters
 * XML 1.0 cannot hold shown as U+FFFD. A label comes from the model file or a manifest: one `\v`
 * in it failed every drawing and every alert snapshot (libvips' XML parser: "PCDATA invalid Char
 * value 11").
 */
export function escapeXml(s: string): string {
  return s.replace(XML_INVALID, '\uFFFD').replace(/[<>&"']/g, (c) => XML_MARKUP[c]!);
}

// C0 controls (tab and line breaks included: a field is printed on one line), DEL, C1 controls
// (U+0080–U+009F: 0x9B is CSI on terminals that take 8-bit controls), lone surrogates.
const TERMINAL_UNSAFE = new RegExp(`[\\u0000-\\u001F\\u007F-\\u009F]|${LONE_SURROGATE.source}`, 'g');

/**
 * The one policy for untrusted text on a terminal (`argus consume`, `models inspect`, `detect`,
 * `preview`, and the status block's rows: `fit` in core/terminal.ts).
 * Untrusted text for a terminal, on one line: control characters (C0, DEL, C1) shown escaped as
 * `\xNN` (`\x1b]0;title\x07` prints as those characters instead of retitling the operator's
 * window or clearing the screen), lone surrogates as U+FFFD; the rest of Unicode ("café", CJK,
 * emoji) is kept as is. Backslashes are left alone: the output is for reading, not parsing.
 */
export function forTerminal(s: string): string {
  return s.replace(TERMINAL_UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code >= 0xd800 ? '\uFFFD' : `\\x${code.toString(16).padStart(2, '0')}`;
  });
}

/**
 * Untrusted text of several lines for a terminal (an error naming files, with ffmpeg's last
 * lines): each line through forTerminal, the line breaks kept.
 */
export function forTerminalLines(s: string): string {
  return s.split('\n').map(forTerminal).join('\n');
}

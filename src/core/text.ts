/**
 * Untrusted text (class names from a model file or a manifest, fields of a Kafka record) made
 * safe for where it is written: SVG character data for libvips.
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

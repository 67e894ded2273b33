/** Element lookup and creation. */

export const $ = (sel, root = document) => root.querySelector(sel);

/**
 * Creates `tag` with attributes (`class` sets className, `text` textContent; undefined, null
 * and false are left out, true is an empty attribute) and appends the children that are set.
 */
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

import { z } from 'zod';

/**
 * The id of a source, zone, line or rule: letters, digits, dot, dash, underscore; not only dots
 * (an id names files, as the annotated video's `{source}`: `..` would be the folder above).
 */
export const id = z.string().regex(/^(?!\.+$)[A-Za-z0-9_.-]+$/, 'use letters, digits, dot, dash or underscore (not only dots)');

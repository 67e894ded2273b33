import { z } from 'zod';

/** The id of a source, zone, line or rule: letters, digits, dot, dash and underscore only. */
export const id = z.string().regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, dot, dash or underscore');

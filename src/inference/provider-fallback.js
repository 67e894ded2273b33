// Plain JavaScript (types in provider-fallback.d.ts) so that the inference worker thread, which
// loads without a TypeScript loader, falls back between execution providers with the same code
// as a session on the main thread (inline-session.ts, through providers.ts).

/**
 * Creates a session with the first attempt that works, trying `attempts` in order. A failed
 * attempt is recorded with the first line of its error; if the last attempt fails too, its
 * error is thrown (with CPU last, that is CPU's own error: the model itself is at fault).
 * @template S, C
 * @param {readonly { provider: string, config: C }[]} attempts
 * @param {(config: C, provider: string) => Promise<S>} create
 * @returns {Promise<{ session: S, provider: string, failed: { provider: string, reason: string }[] }>}
 */
export async function openFirstWorking(attempts, create) {
  if (attempts.length === 0) throw new Error('no execution provider to try');
  const failed = [];
  for (const [i, { provider, config }] of attempts.entries()) {
    try {
      const session = await create(config, provider);
      return { session, provider, failed };
    } catch (e) {
      if (i === attempts.length - 1) throw e;
      failed.push({ provider, reason: String(e?.message ?? e).split('\n')[0] });
    }
  }
  throw new Error('unreachable: the last attempt returns or throws');
}

import { ArgusError, ErrorCodes } from '../core/errors.js';
import { defaultFfmpegPath } from '../sources/ffmpeg-path.js';
import { loadCatalog, loadModelManifest, resolveModelFile, resolveStream } from './catalog.js';

/** Fetches (or verifies) the default model and every catalogued stream. `signal` stops it: the download under way is abandoned (VAP_ERR_INTERRUPTED). */
export async function fetchAll(log: (m: string) => void, signal?: AbortSignal): Promise<void> {
  const stopped = (what: string) => {
    if (signal?.aborted) throw new ArgusError(ErrorCodes.INTERRUPTED, `assets: interrupted before ${what}`);
  };
  const { manifest } = await loadModelManifest('yolox-nano');
  log(`model ${manifest.name}: ${await resolveModelFile(manifest, { log, signal })}`);
  const cat = await loadCatalog();
  for (const s of cat.streams) {
    stopped(s.file);
    log(`stream ${s.file}: ${await resolveStream(s.file, defaultFfmpegPath(), { log, signal })}`);
  }
}

import { defaultFfmpegPath } from '../sources/ffmpeg-path.js';
import { loadCatalog, loadModelManifest, resolveModelFile, resolveStream } from './catalog.js';

/** Fetches (or verifies) the default model and every catalogued stream. */
export async function fetchAll(log: (m: string) => void): Promise<void> {
  const { manifest } = await loadModelManifest('yolox-nano');
  log(`model ${manifest.name}: ${await resolveModelFile(manifest, { log })}`);
  const cat = await loadCatalog();
  for (const s of cat.streams) log(`stream ${s.file}: ${await resolveStream(s.file, defaultFfmpegPath(), { log })}`);
}

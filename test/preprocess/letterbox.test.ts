import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { letterbox } from '../../src/core/geometry.js';
import { letterboxTensor, resizeLinear } from '../../src/preprocess/letterbox.js';
import { IDENTITY_NORMALIZE } from '../../src/preprocess/normalize.js';
import { MIRROR } from '../helpers/assets.js';
import { runCommand } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'argus-letterbox-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the exact letterbox (OpenCV INTER_LINEAR, reproduced)', () => {
  it('a 2:1 reduction on one axis averages neighbours; the other axis is copied', () => {
    const src = new Uint8Array([10, 10, 10, 20, 20, 20, 30, 30, 30, 41, 41, 41]); // 4×1
    expect(Array.from(resizeLinear(src, 4, 1, 2, 1))).toEqual([15, 15, 15, 36, 36, 36]);
  });

  it('an exact 2× reduction on both axes is the 2×2 mean, rounded (OpenCV switches to INTER_AREA)', () => {
    const src = new Uint8Array(4 * 2 * 3);
    [0, 1, 2, 3, 4, 5, 6, 7].forEach((v, i) => src.fill(v * 10, i * 3, i * 3 + 3)); // rows 0–3 / 4–7
    expect(Array.from(resizeLinear(src, 4, 2, 2, 1))).toEqual([25, 25, 25, 45, 45, 45]); // (0+10+40+50+2)>>2, (20+30+60+70+2)>>2
  });

  it('truncating letterbox sizes (YOLOX) and rounding ones (Ultralytics) differ by the pixel the reference says', () => {
    // 640×427 into 416: r = 0.65, 427 × 0.65 = 277.55.
    expect(letterbox(640, 427, 416, 416, 'top-left', 'floor').scaledHeight).toBe(277);
    expect(letterbox(640, 427, 416, 416, 'center', 'round').scaledHeight).toBe(278);
  });

  it('pads with the grey level, normalised, and writes planes in the model order', () => {
    const src = new Uint8Array(4 * 2 * 3);
    for (let i = 0; i < 8; i++) src.set([1, 2, 3], i * 3); // B, G, R
    const lb = letterbox(4, 2, 4, 4, 'top-left', 'floor');
    const dst = new Float32Array(4 * 4 * 3).fill(-1);
    letterboxTensor(src, 4, 2, 'bgr', lb, dst, { modelOrder: 'rgb', normalize: { scale: 1 / 255, mean: [0, 0, 0], std: [1, 1, 1] }, padValue: 114 });
    expect(dst[0] * 255).toBeCloseTo(3); // plane 0 is R
    expect(dst[16] * 255).toBeCloseTo(2);
    expect(dst[32] * 255).toBeCloseTo(1);
    expect(dst[8] * 255).toBeCloseTo(114); // row 2: padding
    expect(dst[47] * 255).toBeCloseTo(114);
  });

  describe('against OpenCV itself', () => {
    let venv: string;
    let cases: { name: string; w: number; h: number; dw: number; dh: number }[] = [];
    /** Runs a maker of this setup without holding up the event loop; its stdout, or an error with its stderr's end. */
    const made = async (cmd: string, args: string[]): Promise<string> => {
      const r = await runCommand(cmd, args, {}, 600_000);
      if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.code}: ${r.stderr.slice(-4000)}`);
      return r.stdout;
    };
    beforeAll(async () => {
      // The private environment with OpenCV from PyPI (the peers' and the reference test's).
      // Made asynchronously: on a fresh clone pip takes minutes (79 s in CI beside two busy
      // loops), and while a test file's event loop stands still vitest's calls from it to its
      // main process time out after 60 s ("Timeout calling onTaskUpdate", an error that failed
      // the run with every test passed).
      venv = (await made('bash', ['scripts/peers/setup.sh'])).trim().split('\n').at(-1)!;
      const images = readdirSync(join(MIRROR, 'images')).filter((f) => f.endsWith('.jpg')).slice(0, 4);
      const script = `
import cv2, json, sys
out = sys.argv[1]
cases = []
for i, f in enumerate(sys.argv[2:]):
    img = cv2.imread(f)
    h, w = img.shape[:2]
    r = min(416 / h, 416 / w)
    # YOLOX's size, an odd width, a small one, an upscale, an exact half
    for dw, dh in [(int(w * r), int(h * r)), (int(w * r) + 1, int(h * r)), (333, 187), (w * 2 // 3 + 1, h * 3 // 2), (w // 2, h // 2)]:
        name = f'{i}-{dw}x{dh}'
        img.tofile(f'{out}/{i}.src')
        cv2.resize(img, (dw, dh), interpolation=cv2.INTER_LINEAR).tofile(f'{out}/{name}.ref')
        cases.append({'name': name, 'src': i, 'w': w, 'h': h, 'dw': dw, 'dh': dh})
json.dump(cases, open(f'{out}/cases.json', 'w'))
`;
      writeFileSync(join(dir, 'gen.py'), script);
      await made(join(venv, 'bin', 'python'), [join(dir, 'gen.py'), dir, ...images.map((f) => join(MIRROR, 'images', f))]);
      cases = JSON.parse(readFileSync(join(dir, 'cases.json'), 'utf8'));
    }, 600_000);

    it.each(['native', 'js'] as const)('gives OpenCV 4.13’s bytes exactly, down- and upscaling, any width (%s)', (impl) => {
      expect(cases.length).toBeGreaterThanOrEqual(20);
      const wrong: string[] = [];
      for (const c of cases as (typeof cases[number] & { src: number })[]) {
        const src = readFileSync(join(dir, `${c.src}.src`));
        const ref = readFileSync(join(dir, `${c.name}.ref`));
        const got = resizeLinear(src, c.w, c.h, c.dw, c.dh, impl);
        let differ = 0;
        for (let i = 0; i < ref.length; i++) if (ref[i] !== got[i]) differ++;
        if (differ) wrong.push(`${c.w}x${c.h} → ${c.dw}x${c.dh}: ${differ} of ${ref.length} bytes differ`);
      }
      expect(wrong).toEqual([]);
    });
  });
});

import { writeModel } from './onnx-graphs.js';

/** Class names a hostile model file can carry: terminal escape sequences, a vertical tab, markup. */
export const HOSTILE_NAMES = ['\x1b]0;TITLE\x07\x1b[2J\x1b[31mRED', 'v\x0btab\x9b2J', 'café 人'];

/**
 * A YOLOv8-style 320×320 model with three classes named HOSTILE_NAMES, one box each at fixed
 * places (a letterboxed 640×360 picture: boxes at about [140, 80, 260, 240], [340, 80, 460, 240],
 * [240, 260, 400, 340]), and an escape sequence in a metadata value too.
 */
export function writeHostileModel(path: string): void {
  const A = 40 * 40 + 20 * 20 + 10 * 10;
  const C = HOSTILE_NAMES.length;
  const out = new Float32Array((4 + C) * A);
  [[100, 150, 60, 80], [200, 150, 60, 80], [160, 220, 80, 40]].forEach((box, c) => {
    const a = 100 + c * 50;
    box.forEach((v, r) => (out[r * A + a] = v));
    out[(4 + c) * A + a] = 0.9;
  });
  const q = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  writeModel(path, {
    input: { name: 'images', dims: [1, 3, 320, 320] },
    outputs: [{ name: 'output0', dims: [1, 4 + C, A], values: out }],
    metadata: { names: `{${HOSTILE_NAMES.map((n, i) => `${i}: ${q(n)}`).join(', ')}}`, imgsz: '[320, 320]', stride: '32', task: 'detect', author: 'x\x1b[2Ky' },
    producerName: 'pytorch',
  });
}

/** What a terminal would act on: C0 (but the line feed) and C1 control characters, DEL. */
export const TERMINAL_CONTROLS = /[\u0000-\u0009\u000B-\u001F\u007F-\u009F]/;

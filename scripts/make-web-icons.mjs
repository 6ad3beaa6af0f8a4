// The web client's home-screen icons, drawn deterministically with pngjs from media/icon.png (the
// extension's 128x128 icon): bilinear scaling to each size, the same bytes on every run.
//   icon-<n>.png           purpose "any": the icon as it is (rounded tile, transparent corners)
//   icon-maskable-<n>.png  purpose "maskable": the tile's colour to the edges, the icon inside the
//                          80% safe zone, so a launcher may cut any shape from it
//   apple-touch-icon.png   180x180 without transparency (iOS draws transparent pixels black)
// Usage: node scripts/make-web-icons.mjs [outdir]   (scripts/build-web.mjs runs it into media/web/icons)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PNG } from 'pngjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The tile's darker corner in make-icon.mjs: what shows around a maskable icon. */
const BACKGROUND = [0x13, 0x31, 0x5c];

function sample(src, x, y) {
  const cx = Math.min(Math.max(x, 0), src.width - 1);
  const cy = Math.min(Math.max(y, 0), src.height - 1);
  const x0 = Math.floor(cx), y0 = Math.floor(cy);
  const x1 = Math.min(x0 + 1, src.width - 1), y1 = Math.min(y0 + 1, src.height - 1);
  const fx = cx - x0, fy = cy - y0;
  const px = (xx, yy) => {
    const i = (yy * src.width + xx) * 4;
    return [src.data[i], src.data[i + 1], src.data[i + 2], src.data[i + 3]];
  };
  const [a, b, c, d] = [px(x0, y0), px(x1, y0), px(x0, y1), px(x1, y1)];
  // Premultiplied, so transparent pixels do not bleed their (meaningless) colour into edges.
  const out = [0, 0, 0, 0];
  const w = [(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy];
  [a, b, c, d].forEach((p, k) => {
    const alpha = (p[3] / 255) * w[k];
    out[0] += p[0] * alpha;
    out[1] += p[1] * alpha;
    out[2] += p[2] * alpha;
    out[3] += alpha;
  });
  return out[3] > 0 ? [out[0] / out[3], out[1] / out[3], out[2] / out[3], out[3] * 255] : [0, 0, 0, 0];
}

/** `size`² pixels; the icon drawn into [inset, size-inset]², over `background` when given. */
function draw(src, size, { inset = 0, background = null } = {}) {
  const png = new PNG({ width: size, height: size });
  const inner = size - 2 * inset;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const u = ((x + 0.5 - inset) / inner) * src.width - 0.5;
      const v = ((y + 0.5 - inset) / inner) * src.height - 0.5;
      const inside = x >= inset && x < size - inset && y >= inset && y < size - inset;
      let [r, g, b, a] = inside ? sample(src, u, v) : [0, 0, 0, 0];
      if (background) {
        const t = a / 255;
        [r, g, b, a] = [r * t + background[0] * (1 - t), g * t + background[1] * (1 - t), b * t + background[2] * (1 - t), 255];
      }
      const i = (y * size + x) * 4;
      png.data[i] = Math.round(r);
      png.data[i + 1] = Math.round(g);
      png.data[i + 2] = Math.round(b);
      png.data[i + 3] = Math.round(a);
    }
  }
  return PNG.sync.write(png, { colorType: 6 });
}

/** Writes the icons into `outdir`; returns their file names. */
export function makeWebIcons(outdir = join(ROOT, 'media', 'web', 'icons'), source = join(ROOT, 'media', 'icon.png')) {
  const src = PNG.sync.read(readFileSync(source));
  mkdirSync(outdir, { recursive: true });
  const files = {
    'icon-192.png': draw(src, 192),
    'icon-512.png': draw(src, 512),
    'icon-maskable-192.png': draw(src, 192, { inset: 19, background: BACKGROUND }),
    'icon-maskable-512.png': draw(src, 512, { inset: 51, background: BACKGROUND }),
    'apple-touch-icon.png': draw(src, 180, { background: BACKGROUND }),
  };
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(outdir, name), bytes);
  return Object.keys(files);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  console.log(`wrote ${makeWebIcons(out).join(', ')}`);
}

// Draws media/icon.png (128x128, the Marketplace icon) deterministically with pngjs: a desktop
// monitor and a phone on a blue tile, joined by a relay of dots. Shapes are signed distance
// functions sampled 4x4 per pixel, so edges are anti-aliased and the bytes never change.
// Usage: node scripts/make-icon.mjs [out.png]
import { writeFileSync } from 'node:fs';
import { PNG } from 'pngjs';

const SIZE = 128;
const SS = 4;

/** Signed distance to a rounded rectangle [x0,x1]x[y0,y1] with corner radius r (negative inside). */
const roundRect = (x0, y0, x1, y1, r) => (x, y) => {
  const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  const qx = Math.abs(x - cx) - ((x1 - x0) / 2 - r);
  const qy = Math.abs(y - cy) - ((y1 - y0) / 2 - r);
  return Math.hypot(Math.max(qx, 0), Math.max(qy, 0)) + Math.min(Math.max(qx, qy), 0) - r;
};
const circle = (cx, cy, r) => (x, y) => Math.hypot(x - cx, y - cy) - r;

const hex = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
const mix = (a, b, t) => a.map((v, i) => v + (b[i] - v) * t);
const TOP = hex('#1d4ed8');
const BOTTOM = hex('#13315c');
const WHITE = hex('#ffffff');
const ACCENT = hex('#38bdf8');
const SCREEN = hex('#0f2747');

// Paint order: later layers cover earlier ones.
const layers = [
  { sdf: roundRect(0, 0, 128, 128, 26), color: (x, y) => mix(TOP, BOTTOM, (x + y) / 256) },
  // The desktop: a monitor outline, its screen, neck and foot.
  { sdf: roundRect(12, 26, 80, 72, 7), color: () => WHITE },
  { sdf: roundRect(18, 32, 74, 66, 3), color: () => SCREEN },
  { sdf: roundRect(40, 71, 52, 84, 1), color: () => WHITE },
  { sdf: roundRect(28, 82, 64, 88, 3), color: () => WHITE },
  // A chat bubble on the desktop's screen.
  { sdf: roundRect(26, 40, 66, 56, 6), color: () => ACCENT },
  { sdf: circle(36, 48, 2.6), color: () => SCREEN },
  { sdf: circle(46, 48, 2.6), color: () => SCREEN },
  { sdf: circle(56, 48, 2.6), color: () => SCREEN },
  // The relay: dots from the desktop to the phone.
  { sdf: circle(86, 50, 2.4), color: () => ACCENT },
  { sdf: circle(92, 50, 2.4), color: () => ACCENT },
  // The phone.
  { sdf: roundRect(96, 36, 120, 100, 6), color: () => WHITE },
  { sdf: roundRect(99.5, 43, 116.5, 91, 2), color: () => SCREEN },
  { sdf: circle(108, 95.5, 1.8), color: () => SCREEN },
  { sdf: roundRect(101.5, 48, 114.5, 58, 3), color: () => ACCENT },
  { sdf: roundRect(101.5, 62, 111, 70, 3), color: () => WHITE },
];

export function drawIcon() {
  const png = new PNG({ width: SIZE, height: SIZE });
  for (let py = 0; py < SIZE; py++) {
    for (let px = 0; px < SIZE; px++) {
      let acc = [0, 0, 0, 0];
      for (let sy = 0; sy < SS; sy++) {
        for (let sx = 0; sx < SS; sx++) {
          const x = px + (sx + 0.5) / SS, y = py + (sy + 0.5) / SS;
          let rgb = null;
          for (const l of layers) if (l.sdf(x, y) <= 0) rgb = l.color(x, y);
          if (rgb) acc = [acc[0] + rgb[0], acc[1] + rgb[1], acc[2] + rgb[2], acc[3] + 1];
        }
      }
      const i = (py * SIZE + px) * 4;
      const n = acc[3];
      png.data[i] = n ? Math.round(acc[0] / n) : 0;
      png.data[i + 1] = n ? Math.round(acc[1] / n) : 0;
      png.data[i + 2] = n ? Math.round(acc[2] / n) : 0;
      png.data[i + 3] = Math.round((255 * n) / (SS * SS));
    }
  }
  return PNG.sync.write(png, { colorType: 6 });
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const out = process.argv[2] ?? 'media/icon.png';
  writeFileSync(out, drawIcon());
  console.log(`wrote ${out}`);
}

/**
 * jsQR (a small pure-JS QR decoder) built on its own into media/web/vendor/jsqr.js
 * (scripts/build-web.mjs), as an ES module the pairing screen imports by URL only where the
 * browser has no BarcodeDetector for QR codes (qrScan.ts). Kept out of the page's module graph,
 * it neither weighs on the first load nor splits the page's helpers into a chunk of their own.
 */
export { default } from 'jsqr';

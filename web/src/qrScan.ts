/**
 * Reading the desk's QR code with the phone's camera, in the page (the installed app has no
 * address bar to open a link with). `BarcodeDetector` where the browser has it (Chromium on
 * Android, Safari 17+ behind none); elsewhere jsQR, a small pure-JS decoder. This module is a chunk
 * of its own (main.ts imports it on "Scan the QR code"), and jsQR a further one, so neither weighs
 * on the first load.
 */
export interface Scanner {
  stop(): void;
}

type Detect = (frame: HTMLVideoElement) => Promise<string | null>;

interface BarcodeDetectorLike {
  detect(source: CanvasImageSource): Promise<{ rawValue: string }[]>;
}
declare const BarcodeDetector: { new (options: { formats: string[] }): BarcodeDetectorLike; getSupportedFormats?(): Promise<string[]> } | undefined;

async function detector(): Promise<Detect> {
  if (typeof BarcodeDetector !== 'undefined') {
    const formats = (await BarcodeDetector.getSupportedFormats?.().catch(() => [])) ?? [];
    if (formats.includes('qr_code')) {
      const d = new BarcodeDetector({ formats: ['qr_code'] });
      return async (frame) => (await d.detect(frame))[0]?.rawValue ?? null;
    }
  }
  // By URL, as highlight.js (code.ts): a file of its own (web/src/jsqr.entry.ts), not a chunk of the page.
  const { default: jsQR } = (await import(new URL('vendor/jsqr.js', document.baseURI).href)) as typeof import('./jsqr.entry');
  const canvas = document.createElement('canvas');
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  return async (frame) => {
    if (!ctx || !frame.videoWidth) return null;
    // A smaller copy decodes fast enough on a phone and still reads a QR code filling a third of the view.
    const scale = Math.min(1, 640 / Math.max(frame.videoWidth, frame.videoHeight));
    canvas.width = Math.round(frame.videoWidth * scale);
    canvas.height = Math.round(frame.videoHeight * scale);
    ctx.drawImage(frame, 0, 0, canvas.width, canvas.height);
    const image = ctx.getImageData(0, 0, canvas.width, canvas.height);
    return jsQR(image.data, image.width, image.height, { inversionAttempts: 'attemptBoth' })?.data ?? null;
  };
}

/**
 * Starts the back camera in `video` and calls `found` with the first QR code's text (then stops).
 * Rejects with a user-facing message when there is no camera or it was refused.
 */
export async function startScan(video: HTMLVideoElement, found: (text: string) => void): Promise<Scanner> {
  if (!navigator.mediaDevices?.getUserMedia) throw new Error('This browser cannot use the camera here. Enter the pairing code instead.');
  let stream: MediaStream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
  } catch (err) {
    const denied = err instanceof DOMException && (err.name === 'NotAllowedError' || err.name === 'SecurityError');
    throw new Error(denied ? 'The camera was not allowed. Allow it in the browser\'s settings, or enter the pairing code instead.' : 'No camera could be started. Enter the pairing code instead.');
  }
  let stopped = false;
  const stop = () => {
    stopped = true;
    for (const t of stream.getTracks()) t.stop();
    video.srcObject = null;
  };
  try {
    const detect = await detector();
    video.srcObject = stream;
    await video.play().catch(() => undefined);
    const tick = async () => {
      if (stopped) return;
      const text = await detect(video).catch(() => null);
      if (stopped) return;
      if (text) {
        stop();
        found(text);
        return;
      }
      setTimeout(() => void tick(), 200);
    };
    void tick();
  } catch (err) {
    stop();
    throw err;
  }
  return { stop };
}

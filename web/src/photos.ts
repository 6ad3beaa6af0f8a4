/**
 * Photos (issue 13): picked with the attach button (camera or library), downscaled on the phone to
 * at most MAX_SIDE px on the long side (re-encoded as JPEG, which also drops the camera's EXIF and
 * location; a small PNG is kept as it is), shown as removable thumbnails, then sent as image parts.
 * Shown as `data:` URLs (CSP img-src 'self' data:), from the chat's own stored copy.
 */
import { el, ui } from './dom';

export interface Photo {
  mediaType: 'image/jpeg' | 'image/png';
  /** Bare base64, as the relay takes it. */
  data: string;
}

export const MAX_SIDE = 1568;
export const MAX_PHOTOS = 8;
/** The relay's limit per photo, decoded (server/src/chat/request.ts MAX_IMAGE_BYTES). */
export const MAX_PHOTO_BYTES = 5 * 1024 * 1024;
/** The relay's limit for a request that carries photos (server/src/http/request.ts MAX_IMAGE_BODY_BYTES). */
export const MAX_REQUEST_BYTES = 10 * 1024 * 1024;
/** What photos may take of a request, as sent (base64), leaving room for the text and the JSON. */
export const MAX_REQUEST_PHOTO_BYTES = 9.5 * 1024 * 1024;

/** The photo's own size (what the relay's per-photo limit counts). */
export const photoBytes = (p: Photo) => Math.floor((p.data.length * 3) / 4);
/** What the photo adds to the request: its base64, a third more than the photo (issue 21). */
export const sentBytes = (p: Photo) => p.data.length;
export const photoUrl = (p: Photo) => `data:${p.mediaType};base64,${p.data}`;

/** The photos waiting to be sent with the next message. */
export let pending: Photo[] = [];

function readAsDataUrl(blob: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result));
    r.onerror = () => reject(r.error);
    r.readAsDataURL(blob);
  });
}

async function decode(file: File): Promise<{ source: CanvasImageSource; width: number; height: number }> {
  if ('createImageBitmap' in window) {
    try {
      const b = await createImageBitmap(file);
      return { source: b, width: b.width, height: b.height };
    } catch {
      /* try the <img> way */
    }
  }
  const img = new Image();
  img.src = await readAsDataUrl(file);
  await img.decode();
  return { source: img, width: img.naturalWidth, height: img.naturalHeight };
}

/** One picked file as it will be sent. */
export async function preparePhoto(file: File): Promise<Photo> {
  const { source, width, height } = await decode(file);
  const scale = Math.min(1, MAX_SIDE / Math.max(width, height));
  if (file.type === 'image/png' && scale === 1 && file.size <= 1024 * 1024) {
    return { mediaType: 'image/png', data: (await readAsDataUrl(file)).split(',', 2)[1] };
  }
  const canvas = el('canvas');
  canvas.width = Math.max(1, Math.round(width * scale));
  canvas.height = Math.max(1, Math.round(height * scale));
  const g = canvas.getContext('2d');
  if (!g) throw new Error('This browser cannot resize photos.');
  // A transparent PNG would turn black in a JPEG.
  g.fillStyle = '#fff';
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.drawImage(source, 0, 0, canvas.width, canvas.height);
  (source as ImageBitmap).close?.();
  return { mediaType: 'image/jpeg', data: canvas.toDataURL('image/jpeg', 0.85).split(',', 2)[1] };
}

/** Megabytes as a person reads them: "3", "0.4", "9.5"; a tenth only where it says something. */
export function formatMb(bytes: number): string {
  const mb = bytes / 1024 / 1024;
  if (mb >= 10) return String(Math.round(mb));
  // A small photo is "0.1", never "0".
  return String(Math.max(0.1, Math.round(mb * 10) / 10));
}
const mb = formatMb;

function attachError(text: string): void {
  ui.attachError.textContent = text;
}

export function renderPending(): void {
  ui.thumbs.replaceChildren(
    ...pending.map((p, i) => {
      const li = el('li');
      const img = el('img');
      img.src = photoUrl(p);
      img.alt = `Photo ${i + 1}`;
      const b = el('button', 'remove', '×');
      b.type = 'button';
      b.setAttribute('aria-label', `Remove photo ${i + 1}`);
      b.addEventListener('click', () => {
        pending.splice(pending.indexOf(p), 1);
        attachError('');
        renderPending();
      });
      li.append(img, b);
      return li;
    }),
  );
  ui.thumbs.hidden = !pending.length;
  // What Send will carry, counted as sent: the budget is visible before Send, not a 413 after it.
  const used = pending.reduce((n, x) => n + sentBytes(x), 0);
  ui.photoBudget.textContent = pending.length ? `${pending.length} photo${pending.length > 1 ? 's' : ''} · ${mb(used)} of ${mb(MAX_REQUEST_PHOTO_BYTES)} MB` : '';
  ui.photoBudget.classList.toggle('near', used > MAX_REQUEST_PHOTO_BYTES * 0.8);
  ui.photoBudget.hidden = !pending.length;
  // A photo may go without words.
  ui.message.required = !pending.length;
}

export function setPending(photos: Photo[]): void {
  pending = [...photos];
  attachError('');
  renderPending();
}

/** Picked files: each downscaled and added, past the limits refused with a message. */
export async function addFiles(files: File[]): Promise<void> {
  attachError('');
  const errors: string[] = [];
  for (const file of files) {
    if (pending.length >= MAX_PHOTOS) {
      errors.push(`At most ${MAX_PHOTOS} photos per message.`);
      break;
    }
    try {
      const photo = await preparePhoto(file);
      const total = pending.reduce((n, x) => n + sentBytes(x), sentBytes(photo));
      if (photoBytes(photo) > MAX_PHOTO_BYTES) errors.push(`${file.name} is over 5 MiB even after downscaling.`);
      else if (total > MAX_REQUEST_PHOTO_BYTES) errors.push(`${file.name} would take this message past the 10 MiB a message may carry (photos count a third more when sent).`);
      else if (pending.length >= MAX_PHOTOS) errors.push(`At most ${MAX_PHOTOS} photos per message.`);
      else pending.push(photo);
    } catch {
      errors.push(`${file.name} could not be read as an image.`);
    }
    renderPending();
  }
  attachError(errors.join(' '));
}

export function initPhotos(): void {
  ui.attach.addEventListener('click', () => ui.photoInput.click());
  ui.photoInput.addEventListener('change', () => {
    const files = [...(ui.photoInput.files ?? [])];
    ui.photoInput.value = '';
    void addFiles(files);
  });
}

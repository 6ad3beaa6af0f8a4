import type { ImageMediaType } from '../providers/types';

/**
 * What an image is, from its magic bytes: the first 16 base64 characters are its first 12
 * bytes. Every door's photos pass here (chat/request.ts checkImage), so a provider is never
 * sent bytes that are not an image under an image's name, nor a type the bytes contradict.
 */
export function imageTypeOf(base64: string): ImageMediaType | undefined {
  const head = Buffer.from(base64.slice(0, 16), 'base64');
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  if (head.subarray(0, 8).equals(PNG_SIGNATURE)) return 'image/png';
  if (head.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (head.subarray(0, 4).toString('latin1') === 'RIFF' && head.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return undefined;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export const NOT_AN_IMAGE = 'is not a JPEG, PNG, WebP or GIF image';

import { HttpError } from '../errors';
import { imageTypeOf, NOT_AN_IMAGE } from './imageType';
import { IMAGE_MEDIA_TYPES, type ChatImage, type ChatMessage, type Role } from '../providers/types';

export const MAX_MESSAGES = 1000;
/** Photos in one request at most (issue 13). */
export const MAX_IMAGES = 8;
/** One photo at most this many bytes once decoded. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
const ROLES: readonly Role[] = ['system', 'user', 'assistant'];

const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);
/** Past a photo limit: the same answer as a body too large (the body was read whole, so the connection stays). */
const tooLarge = (message: string) => new HttpError(413, 'request.body_too_large', message);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Standard base64 with its padding; decoded bytes counted without decoding. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Checks one photo: a media type of IMAGE_MEDIA_TYPES and non-empty standard base64 of at most
 * MAX_IMAGE_BYTES decoded, whose bytes are an image of one of those types. The type the bytes
 * show is the one kept (a phone may label a PNG as a JPEG). `field` and `dataField` name where
 * they came from in messages.
 */
export function checkImage(mediaType: unknown, data: unknown, field: string, dataField: string): ChatImage {
  if (typeof mediaType !== 'string' || !(IMAGE_MEDIA_TYPES as readonly string[]).includes(mediaType)) {
    throw invalid(`${field} must be one of ${IMAGE_MEDIA_TYPES.join(', ')}.`);
  }
  if (typeof data !== 'string' || data === '') throw invalid(`${dataField} must be the image as a base64 string.`);
  if (data.length % 4 !== 0 || !BASE64.test(data)) throw invalid(`${dataField} is not valid base64 (standard alphabet, with its = padding).`);
  const decoded = (data.length / 4) * 3 - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
  if (decoded > MAX_IMAGE_BYTES) {
    throw tooLarge(`${dataField} is ${(decoded / 1024 / 1024).toFixed(1)} MiB; an image may be at most ${MAX_IMAGE_BYTES / 1024 / 1024} MiB. Downscale it first.`);
  }
  const actual = imageTypeOf(data);
  if (!actual) throw invalid(`${dataField} ${NOT_AN_IMAGE}.`);
  return { mediaType: actual, data };
}

/**
 * Validates a chat request (CONTRACT §5; issue 13 for content as parts) and returns only what
 * DeskRelay uses: unknown fields, including any provider settings a caller sends, are dropped
 * here. `content` is a string, or an array of `{"type":"text","text"}` and
 * `{"type":"image","mediaType","data"}` parts: text parts are joined, images kept in order.
 */
export function parseChatRequest(body: unknown): ChatMessage[] {
  if (!isObject(body)) throw invalid('The body must be a JSON object with a "messages" array.');
  const { messages } = body;
  if (messages === undefined) throw invalid('messages is required: an array of {role, content} objects.');
  if (!Array.isArray(messages)) throw invalid('messages must be an array of {role, content} objects.');
  if (messages.length === 0) throw invalid('messages must hold at least one message.');
  if (messages.length > MAX_MESSAGES) throw invalid(`messages must hold at most ${MAX_MESSAGES} messages.`);
  let imageCount = 0;
  return messages.map((message, i) => {
    if (!isObject(message)) throw invalid(`messages[${i}] must be an object with role and content.`);
    const { role, content } = message;
    if (typeof role !== 'string' || !ROLES.includes(role as Role)) {
      throw invalid(`messages[${i}].role must be one of ${ROLES.join(', ')}.`);
    }
    if (typeof content === 'string') return { role: role as Role, content };
    if (!Array.isArray(content)) throw invalid(`messages[${i}].content must be a string or an array of text and image parts.`);
    let text = '';
    const images: ChatImage[] = [];
    content.forEach((part, j) => {
      const where = `messages[${i}].content[${j}]`;
      if (!isObject(part)) throw invalid(`messages[${i}].content must be a string or an array of text and image parts; ${where} is not a part object.`);
      if (part.type === 'text') {
        if (typeof part.text !== 'string') throw invalid(`${where}.text must be a string.`);
        text += part.text;
      } else if (part.type === 'image') {
        // Providers take photos from the user only (OpenAI and Anthropic refuse them elsewhere).
        if (role !== 'user') throw invalid(`${where} is an image in a ${role} message; only user messages may carry images.`);
        if (++imageCount > MAX_IMAGES) throw tooLarge(`A request may carry at most ${MAX_IMAGES} images; ${where} is one too many.`);
        images.push(checkImage(part.mediaType, part.data, `${where}.mediaType`, `${where}.data`));
      } else {
        throw invalid(`${where}.type must be "text" or "image".`);
      }
    });
    return images.length === 0 ? { role: role as Role, content: text } : { role: role as Role, content: text, images };
  });
}

/** True when a message of the request carries a photo (such a request may be up to MAX_IMAGE_BODY_BYTES). */
export function carriesImages(messages: readonly ChatMessage[]): boolean {
  return messages.some((m) => m.images !== undefined && m.images.length > 0);
}

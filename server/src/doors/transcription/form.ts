import type { IncomingMessage } from 'node:http';
import { readBody, tooLarge, type BodyContext } from '../../http/request';
import { HttpError } from '../../http/errors';
import { formBoundary, parseForm, type FormPart } from '../../http/multipart';

/** OpenAI's own limit for one audio file (API reference, "Create transcription": `file`, 25 MB). */
export const MAX_AUDIO_BYTES = 25 * 1024 * 1024;
/** The form around the file (boundaries, model, language, a prompt of a few hundred words). */
const FORM_OVERHEAD_BYTES = 256 * 1024;
/** OpenAI takes 224 tokens of prompt; a few thousand characters is more than that in any language. */
const MAX_PROMPT_CHARS = 4096;

/**
 * What phones record (Chromium: audio/webm;codecs=opus; Safari: audio/mp4) and the usual file
 * types, by Content-Type essence, and by file name when the part says only octet-stream.
 */
const AUDIO_TYPES: Record<string, string> = {
  'audio/webm': 'audio/webm',
  'video/webm': 'audio/webm',
  'audio/mp4': 'audio/mp4',
  'audio/m4a': 'audio/mp4',
  'audio/x-m4a': 'audio/mp4',
  'video/mp4': 'audio/mp4',
  'audio/wav': 'audio/wav',
  'audio/wave': 'audio/wav',
  'audio/x-wav': 'audio/wav',
  'audio/vnd.wave': 'audio/wav',
  'audio/mpeg': 'audio/mpeg',
  'audio/mp3': 'audio/mpeg',
  'audio/ogg': 'audio/ogg',
  'audio/opus': 'audio/ogg',
};
const EXTENSIONS: Record<string, string> = {
  webm: 'audio/webm',
  mp4: 'audio/mp4',
  m4a: 'audio/mp4',
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  mpeg: 'audio/mpeg',
  mpga: 'audio/mpeg',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/ogg',
};
const TYPE_NAMES = 'audio/webm, audio/mp4, audio/wav, audio/mpeg or audio/ogg';

export type ResponseFormat = 'json' | 'text';

/** The request, checked: the audio (its type normalised), and what the client asked of the text. */
export interface AudioForm {
  file: FormPart;
  language?: string;
  prompt?: string;
  responseFormat: ResponseFormat;
}

const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);
const unsupported = (message: string) => new HttpError(415, 'request.unsupported_media_type', message);

/** Reads and checks the multipart form (415 → 413/408/503 → 400 → 415 for the audio → 413). */
export async function readAudioForm(req: IncomingMessage, ctx: BodyContext): Promise<AudioForm> {
  const boundary = formBoundary(req.headers['content-type']);
  if (boundary === undefined) {
    throw unsupported('Send the audio as Content-Type: multipart/form-data with a boundary, its file in the field "file" (as OpenAI\'s API takes it).');
  }
  const maxBytes = MAX_AUDIO_BYTES + FORM_OVERHEAD_BYTES;
  let body: Buffer;
  try {
    body = await readBody(req, { maxBytes, timeoutMs: ctx.options.bodyTimeoutMs, budget: ctx.bodies });
  } catch (err) {
    // The form's own overhead is ours to allow; the limit a user can act on is the audio's.
    if (err instanceof HttpError && err.code === 'request.body_too_large') throw tooLarge(MAX_AUDIO_BYTES, ' (the audio file may be up to 25 MiB)');
    throw err;
  }
  const parts = parseForm(body, boundary);
  const field = (name: string): string | undefined => {
    const found = parts.filter((p) => p.name === name);
    if (found.length > 1) throw invalid(`The form has the field "${name}" more than once.`);
    return found[0]?.data.toString('utf8');
  };
  const files = parts.filter((p) => p.name === 'file');
  if (files.length === 0) throw invalid('The form has no "file": attach the recording in the field "file".');
  if (files.length > 1) throw invalid('The form has more than one "file"; send one recording per request.');
  const file = files[0];
  if (file.data.length === 0) throw invalid('The audio file is empty.');
  if (file.data.length > MAX_AUDIO_BYTES) throw tooLarge(MAX_AUDIO_BYTES, ' (the audio file may be up to 25 MiB)', false);
  const type = audioType(file);
  if (type === undefined) throw unsupported(`The audio is ${file.type.split(';', 1)[0] || 'of no type'}; send ${TYPE_NAMES}.`);

  const format = field('response_format') ?? 'json';
  if (format !== 'json' && format !== 'text') throw invalid(`response_format "${clip(format)}" is not served; use json or text.`);
  if ((field('stream') ?? 'false') !== 'false') throw invalid('Streamed transcription is not served; leave stream out.');
  // The model the client names is ignored, as in chat: the desktop's choice answers. It is still read once, so a repeated field is refused.
  field('model');
  const language = field('language');
  if (language !== undefined && !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$/.test(language)) {
    throw invalid('language must be an ISO-639-1 code such as "en" or "de".');
  }
  const prompt = field('prompt');
  if (prompt !== undefined && prompt.length > MAX_PROMPT_CHARS) throw invalid(`prompt may be at most ${MAX_PROMPT_CHARS} characters.`);
  const safeName = (file.filename ?? '').replace(/[\u0000-\u001f\u007f"\\/]/g, '_').slice(0, 128);
  return {
    file: { name: 'file', filename: safeName || `audio.${extensionOf(type)}`, type, data: file.data },
    ...(language ? { language } : {}),
    ...(prompt ? { prompt } : {}),
    responseFormat: format,
  };
}

/** The normalised type (a codecs parameter kept), or undefined when it is not audio we take. */
function audioType(file: FormPart): string | undefined {
  const [essence, ...rest] = file.type.split(';');
  const known = AUDIO_TYPES[essence.trim().toLowerCase()];
  if (known) {
    const codecs = rest.map((p) => p.trim()).find((p) => /^codecs=/i.test(p));
    return codecs ? `${known};${codecs}` : known;
  }
  if (essence.trim().toLowerCase() !== 'application/octet-stream' && file.type !== 'text/plain') return undefined;
  // No type given (an SDK's Buffer upload): the file name's extension says it.
  return EXTENSIONS[/\.([a-z0-9]+)$/i.exec(file.filename ?? '')?.[1]?.toLowerCase() ?? ''];
}

function extensionOf(type: string): string {
  return Object.entries(EXTENSIONS).find(([, t]) => t === type.split(';', 1)[0])?.[0] ?? 'bin';
}

const clip = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s);

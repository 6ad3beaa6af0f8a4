/** The desktop's transcription door (`POST /v1/audio/transcriptions`, docs/voice.md). */
import { OPENAI_PATHS } from '../../../server/src/protocol/chat';
import { AUTH_MESSAGE, bearer } from '../api';

export class TranscriptionError extends Error {}

/** The file name the door and the provider see: the type's usual extension. */
function fileName(type: string): string {
  const essence = type.split(';', 1)[0];
  return `voice.${essence === 'audio/mp4' ? 'm4a' : essence === 'audio/ogg' ? 'ogg' : essence === 'audio/wav' ? 'wav' : essence === 'audio/mpeg' ? 'mp3' : 'webm'}`;
}

/** Uploads one recording; resolves with its text. Errors are worded for the person holding the phone. */
/** No `language`: the model detects it, so a phone set to one language can still dictate in another. */
export async function transcribe(audio: Blob, token: string): Promise<string> {
  const form = new FormData();
  form.append('file', audio, fileName(audio.type));
  // OpenAI's form requires a model; the desktop's configured one answers whatever is named.
  form.append('model', 'whisper-1');
  let res: Response;
  try {
    res = await fetch(OPENAI_PATHS.transcriptions, { method: 'POST', headers: bearer(token), body: form, cache: 'no-store' });
  } catch {
    throw new TranscriptionError('The recording could not be sent: the desktop is unreachable.');
  }
  if (res.status === 401) throw new TranscriptionError(AUTH_MESSAGE);
  const body = (await res.json().catch(() => null)) as { text?: unknown; error?: { message?: unknown } } | null;
  if (!res.ok) {
    const said = typeof body?.error?.message === 'string' ? body.error.message : `HTTP ${res.status}`;
    throw new TranscriptionError(`The desktop could not transcribe the recording: ${said}`);
  }
  if (typeof body?.text !== 'string') throw new TranscriptionError('The desktop answered the recording without its text.');
  return body.text;
}

import { randomBytes } from 'node:crypto';
import type { ProviderCallContext } from '../providers';
import { HttpError } from '../../http/errors';
import { buildForm, type FormPart } from '../../http/multipart';
import { describeProvider, isAbortError, ProviderError } from '../../providers';
import { apiUrl, baseUrlOf } from '../../providers/config';
import { keyedCall, readKey } from '../../providers/call';
import type { ProviderConfig } from '../../providers/types';
import type { AudioForm } from './form';

/**
 * Sends the audio to the provider's `/audio/transcriptions` (OpenAI's API reference, "Create
 * transcription"; whisper.cpp's server takes the same form at that path with
 * `--inference-path /v1/audio/transcriptions`, examples/server/README.md) and returns the text.
 * The provider is always asked for `json` (`{"text": …}`), whatever the phone wants back, so one
 * reading serves both answers. The key, when the provider has one, goes in the Authorization
 * header only; every error is redacted of it (keyedCall) and none is logged here.
 */
export async function transcribe(config: ProviderConfig, model: string, form: AudioForm, ctx: ProviderCallContext, signal: AbortSignal): Promise<string> {
  const label = describeProvider(config);
  const deps = { keys: ctx.options.keys, idleTimeoutMs: ctx.options.providerIdleMs };
  const parts: FormPart[] = [form.file, field('model', model)];
  if (form.language) parts.push(field('language', form.language));
  if (form.prompt) parts.push(field('prompt', form.prompt));
  parts.push(field('response_format', 'json'));
  // Like browsers' and undici's own FormData boundaries: random, so no audio can contain it by chance.
  const boundary = `----DeskRelayFormBoundary${randomBytes(12).toString('hex')}`;
  try {
    const key = await readKey(config, deps, label);
    const call = keyedCall(config, deps, label, signal, key, { model });
    try {
      const doc = await call.postForJson(apiUrl(baseUrlOf(config), '/audio/transcriptions'), key ? { authorization: `Bearer ${key}`, accept: 'application/json' } : { accept: 'application/json' }, {
        bytes: buildForm(parts, boundary),
        type: `multipart/form-data; boundary=${boundary}`,
      });
      const text = (doc as { text?: unknown } | null)?.text;
      if (typeof text !== 'string') throw call.fail(`${label} answered the transcription without a "text" string`);
      return text.trim();
    } finally {
      call.close();
    }
  } catch (err) {
    if (err instanceof ProviderError) throw new HttpError(502, 'transcription.failed', `The transcription failed: ${err.message}`, { 'x-should-retry': 'false' });
    if (isAbortError(err)) throw new HttpError(502, 'transcription.failed', `The transcription was cancelled: ${label} did not answer before the phone left.`);
    throw err;
  }
}

const field = (name: string, value: string): FormPart => ({ name, type: 'text/plain', data: Buffer.from(value, 'utf8') });

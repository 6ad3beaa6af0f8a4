import type { ContextSlice, DoorRoute } from '../context';
import { HttpError } from '../../http/errors';
import { sendJson } from '../../http/writers';
import { transcriptionProvider } from '../../providers/transcription';
import type { DoorFactory } from '../door';
import { openAiDialect } from '../openai/routes';
import { leaving } from '../providers';
import { readAudioForm } from './form';
import { transcribe } from './relay';
import { PATHS } from '../../protocol';

export const TRANSCRIPTIONS_PATH = PATHS.transcriptions;

/** What the transcription door reads of the relay: bodies, request state, the providers and their keys. */
export type TranscriptionContext = ContextSlice<'bodies' | 'state', 'providers' | 'keys' | 'providerIdleMs' | 'bodyTimeoutMs'>;

/**
 * Speech to text for the phone's microphone (issue 29): OpenAI's `POST /v1/audio/transcriptions`,
 * relayed to the provider the desktop names for it. Refusals in OpenAI's error shape, so an
 * OpenAI SDK pointed at the relay reads them. Order: 412 (nothing to relay to, before the body
 * is read) → 415 → body (413, 408, 503) → form (400) → audio type (415) and size (413) → 502.
 * Neither the audio nor the text is stored or logged: the request log has the path only.
 */
const transcriptionsRoute: DoorRoute<TranscriptionContext> = {
  method: 'POST',
  path: TRANSCRIPTIONS_PATH,
  auth: true,
  dialect: openAiDialect,
  async handle(req, res, ctx) {
    const provider = transcriptionProvider(ctx.options.providers);
    if (!provider.ok) throw new HttpError(412, 'transcription.no_provider', provider.why);
    ctx.state(req).provider = provider.config.id;
    const form = await readAudioForm(req, ctx);
    const text = await transcribe(provider.config, provider.model, form, ctx, leaving(res));
    if (res.destroyed) return;
    if (form.responseFormat === 'text') {
      const body = Buffer.from(text, 'utf8');
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': body.length, 'Cache-Control': 'no-store' });
      res.end(body);
    } else sendJson(res, 200, { text }, { 'Cache-Control': 'no-store' });
  },
};

export const transcriptionDoor: DoorFactory<TranscriptionContext> = () => ({ routes: [transcriptionsRoute] });

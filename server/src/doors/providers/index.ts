import type { ServerResponse } from 'node:http';
import type { ContextSlice, DoorRoute } from '../context';
import { HttpError } from '../../http/errors';
import { sendJson } from '../../http/writers';
import type { RouteRequest } from '../../http/route';
import { describeProvider, isAbortError, ProviderError } from '../../providers';
import { listModels } from '../../providers';
import { transcriptionProvider } from '../../providers/transcription';
import type { ProviderConfig, ProviderKind, ProviderSource } from '../../providers/types';
import type { DoorFactory } from '../door';
import { readJsonBody } from '../../http/request';
import type { ProviderModels, ProvidersView as WireProvidersView, ProviderView as WireProviderView } from '../../protocol';

/** A model list is a small document: a provider that takes longer than this is not answering. */
const LIST_TIMEOUT_MS = 15_000;
/** Kinds `auto` works for (the runner lists its models); others need a model named. */
const AUTO_KINDS: readonly ProviderKind[] = ['ollama', 'openai-compatible'];
const MODELS_PATH = '/v1/providers/:id/models';
/** Longer than any provider's model id; a phone's switch is written to the desktop's settings. */
export const MAX_MODEL_CHARS = 256;
/** How many of the provider's models a refusal names. */
const NAMED_MODELS = 20;

/** What the providers door reads of the relay: the providers and their keys, bodies, request state, the log for a switch. */
export type ProvidersContext = ContextSlice<'bodies' | 'state', 'providers' | 'keys' | 'providerIdleMs' | 'bodyTimeoutMs' | 'logger'>;

/** What asking a provider takes: its key, and how long it may stay silent. */
export type ProviderCallContext = ContextSlice<never, 'keys' | 'providerIdleMs'>;

/** One provider as a phone sees it (protocol's ProviderView), its kind one the relay knows. */
export interface ProviderView extends WireProviderView {
  kind: ProviderKind;
}

/** `GET /v1/providers` and the answer to a switch (protocol's ProvidersView); this relay always says whether it transcribes. */
export interface ProvidersView extends WireProvidersView {
  transcription: boolean;
  providers: ProviderView[];
}

/** Every configured provider, in order; a source that cannot list them offers its active one. */
export function configuredProviders(source: ProviderSource): ProviderConfig[] {
  if (source.list) return source.list();
  const active = source.active();
  return active.ok ? [active.config] : [];
}

export function providersView(source: ProviderSource): ProvidersView {
  const list = configuredProviders(source);
  const active = source.active();
  const id = source.activeId?.() ?? (active.ok ? active.config.id : (active.id ?? ''));
  const record = list.find((p) => p.id === id) ?? (active.ok ? active.config : undefined);
  return {
    active: id === '' ? null : id,
    model: record ? (record.model ?? 'auto') : null,
    canSwitch: source.canSwitch?.() ?? false,
    transcription: transcriptionProvider(source).ok,
    providers: list.map((p) => ({ id: p.id, kind: p.kind, label: describeProvider(p), model: p.model ?? 'auto', selectable: p.kind !== 'cloud' })),
  };
}

const notFound = (id: string) => new HttpError(404, 'provider.not_found', `No provider "${id}" is configured on the desktop.`);
const invalid = (message: string) => new HttpError(400, 'request.invalid_body', message);

/** The models one provider offers, as it lists them; 502 provider.unreachable, worded as a stream's error, when it does not answer. */
export async function modelsOf(provider: ProviderConfig, ctx: ProviderCallContext, signal: AbortSignal): Promise<string[]> {
  try {
    return await listModels(provider, { keys: ctx.options.keys, idleTimeoutMs: Math.min(ctx.options.providerIdleMs, LIST_TIMEOUT_MS) }, signal);
  } catch (err) {
    if (err instanceof ProviderError) throw new HttpError(502, 'provider.unreachable', err.message);
    if (isAbortError(err)) throw new HttpError(502, 'provider.unreachable', `${describeProvider(provider)} did not answer: the request was cancelled.`);
    throw err;
  }
}

/** Aborted when the client leaves: a listing nobody waits for is dropped. */
export function leaving(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  return controller.signal;
}

const listRoute: DoorRoute<ProvidersContext> = {
  method: 'GET',
  path: '/v1/providers',
  auth: true,
  handle(_req, res, ctx) {
    sendJson(res, 200, providersView(ctx.options.providers));
  },
};

const modelsRoute: DoorRoute<ProvidersContext> = {
  method: 'GET',
  path: MODELS_PATH,
  auth: true,
  async handle(req: RouteRequest, res: ServerResponse, ctx: ProvidersContext) {
    const id = req.params.id ?? '';
    const provider = configuredProviders(ctx.options.providers).find((p) => p.id === id);
    if (!provider) throw notFound(id);
    ctx.state(req).provider = provider.id;
    const models = await modelsOf(provider, ctx, leaving(res));
    if (!res.destroyed) sendJson(res, 200, { models: models.map((m) => ({ id: m })) } satisfies ProviderModels);
  },
};

/**
 * A model the phone names must be one the provider lists (asked now, as GET
 * /v1/providers/<id>/models does): what the phone can write into the desktop's settings is
 * bounded by what the provider offers. The configured model and `auto` need no asking.
 */
async function checkListed(provider: ProviderConfig, model: string, ctx: ProviderCallContext, signal: AbortSignal): Promise<void> {
  const models = await modelsOf(provider, ctx, signal);
  if (models.includes(model)) return;
  const named = models.length === 0 ? 'lists none' : `lists: ${models.slice(0, NAMED_MODELS).join(', ')}${models.length > NAMED_MODELS ? ', …' : ''}`;
  throw invalid(`"${model}" is not a model "${provider.id}" offers; it ${named}.`);
}

/**
 * Switches the desktop's active provider (and its model) for every next message, as switching
 * on the desktop does; a stream in flight keeps the provider it started with (the chat service
 * resolves it once per chat). Refusals: 403 when the desktop does not allow it (before the body
 * is read), 400 for a bad body (a model the provider does not list included), 404 for an
 * unknown id, 400 for the cloud provider, 502 when the provider cannot be asked for its models.
 */
const switchRoute: DoorRoute<ProvidersContext> = {
  method: 'PUT',
  path: '/v1/providers/active',
  auth: true,
  async handle(req, res, ctx) {
    const source = ctx.options.providers;
    if (!source.switchTo || !(source.canSwitch?.() ?? false)) {
      throw new HttpError(
        403,
        'provider.switch_disabled',
        'The desktop does not let the phone switch its provider. Turn on "deskrelay.allowPhoneProviderSwitch" in the editor (or "allowPhoneProviderSwitch": true in config.json).',
      );
    }
    const { json } = await readJsonBody(req, ctx);
    if (typeof json !== 'object' || json === null || Array.isArray(json)) throw invalid('The body must be a JSON object: {"id":"<provider id>"} or {"id":"<provider id>","model":"<model>"}.');
    const { id, model } = json as Record<string, unknown>;
    if (typeof id !== 'string' || id === '') throw invalid('id must be the id of a configured provider.');
    if (model !== undefined && (typeof model !== 'string' || model.trim() === '')) throw invalid('model must be a non-empty string when given.');
    if (typeof model === 'string' && model.length > MAX_MODEL_CHARS) throw invalid(`model must be at most ${MAX_MODEL_CHARS} characters.`);
    const provider = configuredProviders(source).find((p) => p.id === id);
    if (!provider) throw notFound(id);
    if (provider.kind === 'cloud') {
      throw new HttpError(400, 'provider.not_selectable', `"${id}" is the DeskRelay cloud provider, which the phone uses directly, not through the desktop.`);
    }
    if (model === 'auto' && !AUTO_KINDS.includes(provider.kind)) throw invalid(`model "auto" works only for ${AUTO_KINDS.join(' and ')} providers; name a model for "${id}".`);
    ctx.state(req).provider = id;
    if (typeof model === 'string' && model !== 'auto' && model !== provider.model) await checkListed(provider, model, ctx, leaving(res));
    await source.switchTo(id, model as string | undefined);
    ctx.options.logger.info(`provider switched from the phone to "${id}"${model === undefined ? '' : ` (model "${model}")`}`);
    sendJson(res, 200, providersView(source));
  },
};

/** Provider and model choice from the phone (issue 13): list, list one provider's models, switch. */
export const providersDoor: DoorFactory<ProvidersContext> = () => ({ routes: [listRoute, modelsRoute, switchRoute] });

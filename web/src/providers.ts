/**
 * Which of the desktop's providers and models answers (issue 13): shown under the top bar after
 * each connection and switch; when the desktop allows it (`canSwitch`), "Change" opens a picker
 * that lists a provider's models and switches with `PUT /v1/providers/active`.
 */
import type { ProviderModels, ProvidersView } from '../../server/src/protocol';
import { PROVIDER_PATHS, pathTo } from '../../server/src/protocol/paths';
import { bearer } from './api';
import { deviceAwareError } from './devices';
import { el, ui } from './dom';

export type { ProvidersView };

let token = '';
let view: ProvidersView | null = null;
/** What `auto` stands for on the active provider: the first model it lists (CONTRACT §6), once asked. */
let autoModel: { provider: string; model: string } | null = null;
let changed: () => void = () => {};

/** Called after each change of what answers (the empty chat says which model will). */
export function onProvidersChanged(run: () => void): void {
  changed = run;
}

/** The desktop has a transcriber for the microphone (false until GET /v1/providers says so). */
export function desktopTranscribes(): boolean {
  return view?.transcription === true;
}

/** The model that will answer, as the desktop names it ('' when not known). */
export function answeringModel(): string {
  if (!view?.active) return '';
  const p = view.providers.find((x) => x.id === view!.active);
  const model = view.model && view.model !== 'auto' ? view.model : p?.model && p.model !== 'auto' ? p.model : '';
  const auto = autoModel?.provider === view.active ? autoModel.model : '';
  return model || auto || p?.label || view.active;
}

/** The model bar: the model that will answer, by its name (never "auto", a provider's id or its URL). */
function showModel(): void {
  if (!view?.active) {
    ui.modelName.textContent = 'No provider selected on the desktop';
    return;
  }
  const p = view.providers.find((x) => x.id === view!.active);
  const named = (view.model && view.model !== 'auto' ? view.model : '') || (p?.model && p.model !== 'auto' ? p.model : '') || (autoModel?.provider === view.active ? autoModel.model : '');
  // "auto" stands for the first model the runner lists; until it is known, said so in words.
  ui.modelName.textContent = named || `First model on ${p?.kind === 'ollama' ? 'Ollama' : 'the desktop'}`;
}

async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, { ...init, headers: { ...bearer(token), ...init.headers }, cache: 'no-store' });
  } catch {
    throw new Error('The desktop is unreachable.');
  }
  if (!res.ok) throw await deviceAwareError(res, token);
  return (await res.json()) as T;
}

function show(v: ProvidersView): void {
  view = v;
  const p = v.providers.find((x) => x.id === v.active);
  showModel();
  ui.modelName.title = p?.label ?? '';
  ui.modelBar.hidden = false;
  ui.modelChange.hidden = !v.canSwitch;
  if (!v.canSwitch) closePicker();
  changed();
}

/** After pairing and each connection: what answers. A relay without the endpoint shows nothing. */
export async function loadProviders(t: string): Promise<void> {
  token = t;
  try {
    show(await call<ProvidersView>(PROVIDER_PATHS.providers));
  } catch {
    ui.modelBar.hidden = true;
    closePicker();
    return;
  }
  void resolveAuto();
}

/**
 * A reply says which model answered, never "auto": the desktop's `auto` is the first model the
 * provider lists, so ask the list once per connection. Unreachable or empty: the label stays.
 */
async function resolveAuto(): Promise<void> {
  const v = view;
  if (!v?.active || answeringModelNamed(v)) return;
  try {
    const { models } = await call<ProviderModels>(pathTo(PROVIDER_PATHS.providerModels, { id: v.active }));
    if (models[0] && view?.active === v.active) {
      autoModel = { provider: v.active, model: models[0].id };
      showModel();
      changed();
    }
  } catch {
    // The provider is down: the reply's own error says so; the label is shown meanwhile.
  }
}

function answeringModelNamed(v: ProvidersView): boolean {
  const p = v.providers.find((x) => x.id === v.active);
  return (!!v.model && v.model !== 'auto') || (!!p?.model && p.model !== 'auto');
}

export function hideProviders(): void {
  ui.modelBar.hidden = true;
  closePicker();
}

function closePicker(): void {
  ui.picker.hidden = true;
  ui.modelChange.setAttribute('aria-expanded', 'false');
  ui.pickerError.textContent = '';
}

function option(value: string, text: string, selected = false): HTMLOptionElement {
  const o = el('option', '', text);
  o.value = value;
  o.selected = selected;
  return o;
}

/** The chosen provider's models, as it lists them; "as configured" sends no model. */
async function listModels(): Promise<void> {
  const p = view?.providers.find((x) => x.id === ui.pickProvider.value);
  if (!p) return;
  ui.pickerError.textContent = '';
  ui.pickModel.replaceChildren(option('', `As configured (${p.model})`));
  ui.pickModel.disabled = true;
  const id = p.id;
  try {
    const { models } = await call<ProviderModels>(pathTo(PROVIDER_PATHS.providerModels, { id }));
    if (ui.pickProvider.value !== id) return;
    const current = id === view?.active ? view.model : p.model;
    for (const m of models) ui.pickModel.append(option(m.id, m.id, m.id === current));
  } catch (err) {
    if (ui.pickProvider.value === id) ui.pickerError.textContent = err instanceof Error ? err.message : String(err);
  } finally {
    ui.pickModel.disabled = false;
  }
}

function openPicker(): void {
  if (!view?.canSwitch) return;
  ui.pickProvider.replaceChildren(...view.providers.filter((p) => p.selectable).map((p) => option(p.id, `${p.id} — ${p.label}`, p.id === view?.active)));
  ui.picker.hidden = false;
  ui.modelChange.setAttribute('aria-expanded', 'true');
  void listModels();
}

async function switchProvider(): Promise<void> {
  const id = ui.pickProvider.value;
  const model = ui.pickModel.value;
  ui.pickerUse.disabled = true;
  ui.pickerError.textContent = '';
  try {
    show(await call<ProvidersView>(PROVIDER_PATHS.providersActive, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(model ? { id, model } : { id }) }));
    closePicker();
  } catch (err) {
    ui.pickerError.textContent = err instanceof Error ? err.message : String(err);
  } finally {
    ui.pickerUse.disabled = false;
  }
}

export function initProviders(): void {
  ui.modelChange.addEventListener('click', () => (ui.picker.hidden ? openPicker() : closePicker()));
  ui.pickProvider.addEventListener('change', () => void listModels());
  ui.pickerCancel.addEventListener('click', closePicker);
  ui.picker.addEventListener('submit', (e) => {
    e.preventDefault();
    void switchProvider();
  });
}

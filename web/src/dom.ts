/**
 * The page's own elements, found once while only index.html is in the document. Model replies are
 * rendered into the same document later, and a lookup by id (or by name, or through window's and
 * document's named properties) at use time could then find an element the model put there.
 */
function pageElement<T extends HTMLElement>(kind: { new (): T; prototype: T }, id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html has no #${id}`);
  if (!(el instanceof kind)) throw new Error(`index.html's #${id} is not a ${kind.name}`);
  return el;
}

/** `status-dot` → `statusDot`: each element goes by its id in camelCase. */
type Camel<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;

function pageElements<T extends HTMLElement, const Ids extends readonly string[]>(kind: { new (): T; prototype: T }, ids: Ids) {
  const found = ids.map((id) => [id.replace(/-(\w)/g, (_, c: string) => c.toUpperCase()), pageElement(kind, id)]);
  return Object.fromEntries(found) as { [K in Ids[number] as Camel<K>]: T };
}

export const ui = Object.freeze({
  ...pageElements(HTMLElement, [
    'conn', 'status-dot', 'chat-heading', 'settings-sheet', 'scrim', 'unpair-confirm', 'device',
    'device-note', 'empty', 'empty-host', 'empty-model', 'toast', 'toast-text', 'push-note', 'history',
    'history-empty', 'history-kept', 'store-error', 'system', 'editing', 'pair', 'pair-error', 'info',
    'info-host', 'info-version', 'info-warning', 'chat', 'chat-status', 'model-bar', 'model-name',
    'picker-error', 'attach-error', 'photo-budget', 'read-aloud-row', 'scan', 'scan-note', 'code-error',
    'devices', 'devices-note', 'system-sheet', 'chats-where',
  ]),
  ...pageElements(HTMLButtonElement, [
    'menu-open', 'settings-close', 'unpair-cancel', 'unpair-yes', 'toast-undo', 'unpair', 'chats-open',
    'push-bell', 'forget', 'history-new', 'history-close', 'delete-all', 'edit-cancel', 'test-conn',
    'new-chat', 'stop', 'send', 'model-change', 'picker-use', 'picker-cancel', 'attach', 'scan-open', 'scan-stop',
    'code-submit', 'system-open', 'system-close',
  ]),
  ...pageElements(HTMLInputElement, [
    'device-name', 'pair-code', 'keep-chats', 'photo-input', 'voice-send-at-once',
    'read-aloud', 'chat-search',
  ]),
  ...pageElements(HTMLUListElement, ['suggestions', 'chat-list', 'thumbs', 'device-list']),
  ...pageElements(HTMLVideoElement, ['scan-video']),
  ...pageElements(HTMLTextAreaElement, ['system-prompt', 'pair-json', 'message']),
  ...pageElements(HTMLFormElement, ['pair-form', 'code-form', 'compose', 'picker']),
  ...pageElements(HTMLOListElement, ['log']),
  ...pageElements(HTMLSelectElement, ['pick-provider', 'pick-model']),
});

/** Taken at load like the controls: document's named properties outrank its own. */
export const scroller: Element = document.scrollingElement || document.documentElement;

/** A new element with a class and text (never HTML). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className = '', text = ''): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text) node.textContent = text;
  return node;
}

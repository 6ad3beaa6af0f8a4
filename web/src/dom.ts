/**
 * The page's own elements, found once while only index.html is in the document. Model replies are
 * rendered into the same document later, and a lookup by id (or by name, or through window's and
 * document's named properties) at use time could then find an element the model put there.
 */
function pageElement<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html has no #${id}`);
  return el as T;
}

export const ui = Object.freeze({
  conn: pageElement('conn'),
  statusDot: pageElement('status-dot'),
  chatHeading: pageElement('chat-heading'),
  menuOpen: pageElement<HTMLButtonElement>('menu-open'),
  settingsSheet: pageElement('settings-sheet'),
  settingsClose: pageElement<HTMLButtonElement>('settings-close'),
  scrim: pageElement('scrim'),
  unpairConfirm: pageElement('unpair-confirm'),
  unpairCancel: pageElement<HTMLButtonElement>('unpair-cancel'),
  unpairYes: pageElement<HTMLButtonElement>('unpair-yes'),
  device: pageElement('device'),
  deviceName: pageElement<HTMLInputElement>('device-name'),
  deviceNote: pageElement('device-note'),
  empty: pageElement('empty'),
  emptyHost: pageElement('empty-host'),
  emptyModel: pageElement('empty-model'),
  suggestions: pageElement<HTMLUListElement>('suggestions'),
  toast: pageElement('toast'),
  toastText: pageElement('toast-text'),
  toastUndo: pageElement<HTMLButtonElement>('toast-undo'),
  unpair: pageElement<HTMLButtonElement>('unpair'),
  chatsOpen: pageElement<HTMLButtonElement>('chats-open'),
  pushBell: pageElement<HTMLButtonElement>('push-bell'),
  pushNote: pageElement('push-note'),
  pairRemember: pageElement<HTMLInputElement>('pair-remember'),
  keepChats: pageElement<HTMLInputElement>('keep-chats'),
  remember: pageElement<HTMLInputElement>('remember'),
  forget: pageElement<HTMLButtonElement>('forget'),
  history: pageElement('history'),
  historyNew: pageElement<HTMLButtonElement>('history-new'),
  historyClose: pageElement<HTMLButtonElement>('history-close'),
  historyEmpty: pageElement('history-empty'),
  historyKept: pageElement('history-kept'),
  chatList: pageElement<HTMLUListElement>('chat-list'),
  deleteAll: pageElement<HTMLButtonElement>('delete-all'),
  storeError: pageElement('store-error'),
  system: pageElement('system'),
  systemPrompt: pageElement<HTMLTextAreaElement>('system-prompt'),
  editing: pageElement('editing'),
  editCancel: pageElement<HTMLButtonElement>('edit-cancel'),
  pair: pageElement('pair'),
  pairForm: pageElement<HTMLFormElement>('pair-form'),
  pairJson: pageElement<HTMLTextAreaElement>('pair-json'),
  pairError: pageElement('pair-error'),
  info: pageElement('info'),
  infoHost: pageElement('info-host'),
  infoVersion: pageElement('info-version'),
  infoWarning: pageElement('info-warning'),
  testConn: pageElement<HTMLButtonElement>('test-conn'),
  chat: pageElement('chat'),
  log: pageElement<HTMLOListElement>('log'),
  chatStatus: pageElement('chat-status'),
  compose: pageElement<HTMLFormElement>('compose'),
  message: pageElement<HTMLTextAreaElement>('message'),
  newChat: pageElement<HTMLButtonElement>('new-chat'),
  stop: pageElement<HTMLButtonElement>('stop'),
  send: pageElement<HTMLButtonElement>('send'),
  modelBar: pageElement('model-bar'),
  modelName: pageElement('model-name'),
  modelChange: pageElement<HTMLButtonElement>('model-change'),
  picker: pageElement<HTMLFormElement>('picker'),
  pickProvider: pageElement<HTMLSelectElement>('pick-provider'),
  pickModel: pageElement<HTMLSelectElement>('pick-model'),
  pickerUse: pageElement<HTMLButtonElement>('picker-use'),
  pickerCancel: pageElement<HTMLButtonElement>('picker-cancel'),
  pickerError: pageElement('picker-error'),
  attach: pageElement<HTMLButtonElement>('attach'),
  photoInput: pageElement<HTMLInputElement>('photo-input'),
  thumbs: pageElement<HTMLUListElement>('thumbs'),
  attachError: pageElement('attach-error'),
  photoBudget: pageElement('photo-budget'),
  voiceSendAtOnce: pageElement<HTMLInputElement>('voice-send-at-once'),
  readAloud: pageElement<HTMLInputElement>('read-aloud'),
  readAloudRow: pageElement('read-aloud-row'),
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

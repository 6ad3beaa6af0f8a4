/** The new-session sheet: folder, agent, what it should do, and a worktree of its own. */
import { el } from '../dom';
import { closeLayer, openLayer } from '../ui/layer';
import { agentApi, type AgentFolder } from './api';
import { agentSheet } from './sheet';
import { messageOf, nav } from './state';

const sheet = agentSheet('agent-sheet', 'New agent session', 'agent-new-title');
const newForm = el('form', 'group agent-new-form');
const folderLabel = el('label', 'group-title', 'Folder');
const folderSelect = el('select');
folderSelect.id = 'agent-folder';
folderLabel.htmlFor = folderSelect.id;
const folderPath = el('p', 'hint agent-folder-path');
const agentLabel = el('label', 'group-title', 'Agent');
const agentSelect = el('select');
agentSelect.id = 'agent-agent';
agentLabel.htmlFor = agentSelect.id;
const agentReasons = el('details', 'hint agent-unavailable');
const agentReasonList = el('ul');
agentReasons.append(el('summary', '', 'Agents not on this desk'), agentReasonList);
const promptLabel = el('label', 'group-title', 'What should it do?');
const prompt = el('textarea');
prompt.id = 'agent-prompt';
prompt.rows = 4;
prompt.required = true;
prompt.placeholder = 'e.g. Fix the failing test in src/math.js';
promptLabel.htmlFor = prompt.id;
const worktreeLabel = el('label', 'agent-worktree-switch');
const worktreeBox = el('input');
worktreeBox.type = 'checkbox';
worktreeBox.id = 'agent-worktree';
worktreeLabel.htmlFor = worktreeBox.id;
worktreeLabel.append(worktreeBox, el('span', '', ' Work in a worktree of its own (a new git branch; merge or discard it later)'));
const newError = el('p', 'error');
newError.setAttribute('role', 'alert');
const start = el('button', 'primary', 'Start');
start.type = 'submit';
newForm.append(folderLabel, folderSelect, folderPath, agentLabel, agentSelect, agentReasons, promptLabel, prompt, worktreeLabel, newError, start);
sheet.append(newForm);

let folders: AgentFolder[] = [];

/** The sheet joins the page; `opener` opens it, `listError` says why it could not. */
export function mountNewSession(opener: HTMLButtonElement, listError: HTMLElement): void {
  document.body.append(sheet);
  opener.addEventListener('click', () => void openNew(opener, listError));
  newForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void startSession();
  });
}

async function openNew(opener: HTMLButtonElement, listError: HTMLElement): Promise<void> {
  newError.textContent = '';
  try {
    folders = await agentApi.folders();
  } catch (err) {
    listError.textContent = messageOf(err);
    return;
  }
  folderSelect.replaceChildren(...folders.map((f) => {
    const o = el('option', '', f.name);
    o.value = f.name;
    return o;
  }));
  const showPath = () => (folderPath.textContent = folders.find((f) => f.name === folderSelect.value)?.path ?? '');
  folderSelect.onchange = showPath;
  showPath();
  // Which agent: DeskRelay's own, or an ACP agent the desk has; those it lacks say how to add them.
  const agents = await agentApi.agents();
  agentSelect.replaceChildren(...agents.filter((a) => a.available).map((a) => {
    const o = el('option', '', a.name);
    o.value = a.id;
    return o;
  }));
  agentReasonList.replaceChildren(...agents.filter((a) => !a.available).map((a) => el('li', '', `${a.name}: ${a.reason ?? 'not available'}`)));
  agentLabel.hidden = agentSelect.hidden = agentSelect.options.length < 2;
  agentReasons.hidden = agentReasonList.childElementCount === 0;
  openLayer(sheet, opener);
  prompt.focus();
}

async function startSession(): Promise<void> {
  const text = prompt.value.trim();
  if (!text) {
    newError.textContent = 'Say what the agent should do.';
    prompt.focus();
    return;
  }
  start.disabled = true;
  try {
    const created = await agentApi.create(text, folderSelect.value, agentSelect.hidden ? undefined : agentSelect.value, worktreeBox.checked);
    prompt.value = '';
    worktreeBox.checked = false;
    closeLayer();
    nav.openSession(created.id, created.folder, text.split('\n')[0]!.slice(0, 80));
  } catch (err) {
    newError.textContent = messageOf(err);
  } finally {
    start.disabled = false;
  }
}

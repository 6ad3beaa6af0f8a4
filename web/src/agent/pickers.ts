/** An ACP agent's modes and models, where it offers a choice: two selects under the session's header, each change signed. */
import type { AgentChoice } from '../../../server/src/protocol';
import { el } from '../dom';
import { showToast } from '../ui/toast';
import { agentApi } from './api';
import { agent, messageOf } from './state';

export const pickers = el('div', 'agent-pickers');
pickers.hidden = true;

const picker = (what: 'mode' | 'model', label: string) => {
  const wrap = el('div', 'agent-picker');
  const select = el('select');
  select.id = `agent-${what}-picker`;
  const name = el('label', '', label);
  name.htmlFor = select.id;
  wrap.append(name, select);
  wrap.hidden = true;
  select.addEventListener('change', () => void choose(what, select));
  pickers.append(wrap);
  return select;
};
const modeSelect = picker('mode', 'Agent mode');
const modelSelect = picker('model', 'Agent model');

/** A new session on screen: no choices until its events offer some. */
export function resetPickers(): void {
  pickers.hidden = true;
  for (const select of [modeSelect, modelSelect]) select.parentElement!.hidden = true;
}

export function showChoices(what: 'mode' | 'model', now: string, choices: AgentChoice[]): void {
  const select = what === 'mode' ? modeSelect : modelSelect;
  select.replaceChildren(...choices.map((c) => {
    const o = el('option', '', c.unasked ? `${c.name} (at the desk only)` : c.name);
    o.value = c.id;
    o.disabled = c.unasked === true && c.id !== now;
    if (c.description) o.title = c.description;
    return o;
  }));
  select.value = now;
  select.dataset.current = now;
  select.parentElement!.hidden = choices.length < 2;
  pickers.hidden = modeSelect.parentElement!.hidden && modelSelect.parentElement!.hidden;
}

async function choose(what: 'mode' | 'model', select: HTMLSelectElement): Promise<void> {
  const { current } = agent;
  if (!current) return;
  try {
    await agentApi.choose(current.id, what, select.value);
  } catch (err) {
    select.value = select.dataset.current ?? select.value;
    showToast(messageOf(err));
  }
}

/** A worktree session's own buttons: Merge (asked like a command: its card appears) and Discard, both signed. */
import { el } from '../dom';
import { showToast } from '../ui/toast';
import { agentApi } from './api';
import { agent, messageOf, nav } from './state';

export const worktreeBar = el('div', 'agent-worktree-bar');
worktreeBar.hidden = true;
const mergeButton = el('button', 'agent-merge', 'Merge');
mergeButton.type = 'button';
const discardButton = el('button', 'danger agent-discard', 'Discard');
discardButton.type = 'button';
worktreeBar.append(mergeButton, discardButton);

mergeButton.addEventListener('click', () => {
  if (!agent.current) return;
  void agentApi.merge(agent.current.id).catch((err: unknown) => showToast(messageOf(err)));
});
discardButton.addEventListener('click', () => {
  if (!agent.current || !confirm('Discard this session\u2019s worktree and branch, with every change in them?')) return;
  void agentApi.discard(agent.current.id).then(() => nav.showList(), (err: unknown) => showToast(messageOf(err)));
});

/** The bar for the session's worktree (none: hidden); its buttons wait while the session works. */
export function showWorktree(wt: { branch: string; into?: string } | undefined, busy: boolean): void {
  worktreeBar.hidden = !wt;
  if (!wt) return;
  mergeButton.textContent = `Merge into ${wt.into ?? 'the project'}`;
  mergeButton.disabled = discardButton.disabled = busy;
}

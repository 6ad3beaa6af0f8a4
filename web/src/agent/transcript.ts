/**
 * One session's transcript on screen, built from its events (the replay from the first event,
 * then live): the user's messages, the model's words as Markdown (the chat's renderer and
 * sanitiser), tool cards and approval cards, the decisions and the outcome.
 */
import type { AgentEvent, AgentPlanEntry, AgentStatus, Decision } from '../../../server/src/protocol';
import { decorateCode } from '../code';
import { el } from '../dom';
import { closeOpenSpans, renderMarkdown } from '../render';
import { focusableScrollers } from '../wide';
import { approvalCard, toolCard, type Answered, type ApprovalCard, type ApprovalData, type ToolCard } from './cards';

export const STATUS_WORDS: Record<AgentStatus, string> = {
  running: 'Working…',
  waiting: 'Waiting for you',
  idle: 'Done: send more',
  stopped: 'Stopped',
  failed: 'Failed',
};

export class Transcript {
  readonly log = el('ol', 'log agent-log');
  private text: { li: HTMLLIElement; reply: HTMLDivElement; raw: string } | null = null;
  /** An ACP agent's thinking, folded; a new block after anything else. */
  private thought: HTMLDivElement | null = null;
  /** An ACP agent's plan: one checklist, updated in place. */
  private plan: HTMLLIElement | null = null;
  private readonly tools = new Map<string, ToolCard>();
  readonly approvals = new Map<string, ApprovalCard>();
  status: AgentStatus = 'running';

  constructor(
    private readonly folder: string,
    private readonly decide: (approval: ApprovalData, d: Decision) => Promise<Answered>,
  ) {
    this.log.setAttribute('aria-label', 'Agent session');
  }

  /** The approval card still waiting for a decision, if any. */
  pendingCard(): ApprovalCard | undefined {
    return [...this.approvals.values()].find((a) => a.open);
  }

  private endText(): void {
    if (!this.text) return;
    this.text.reply.innerHTML = renderMarkdown(this.text.raw);
    this.text.reply.classList.remove('cursor');
    this.text.reply.setAttribute('aria-busy', 'false');
    decorateCode(this.text.reply);
    this.text = null;
  }

  apply(e: AgentEvent): void {
    if (e.type !== 'text') this.endText();
    if (e.type !== 'thinking') this.thought = null;
    switch (e.type) {
      case 'thinking': {
        if (!this.thought) {
          const li = el('li', 'agent-thinking');
          const details = el('details');
          this.thought = el('div', 'thought');
          details.append(el('summary', '', 'Thinking'), this.thought);
          li.append(details);
          this.log.append(li);
        }
        this.thought.textContent += e.delta;
        break;
      }
      case 'plan':
        this.showPlan(e.entries);
        break;
      case 'user': {
        const li = el('li', 'msg user');
        li.append(el('span', 'visually-hidden', 'You said:'), el('div', 'text', e.text));
        this.log.append(li);
        break;
      }
      case 'text': {
        if (!this.text) {
          const li = el('li', 'msg assistant');
          const reply = el('div', 'reply cursor');
          reply.setAttribute('aria-busy', 'true');
          li.append(el('span', 'visually-hidden', 'Agent:'), reply);
          this.log.append(li);
          this.text = { li, reply, raw: '' };
        }
        this.text.raw += e.delta;
        this.text.reply.innerHTML = renderMarkdown(closeOpenSpans(this.text.raw));
        focusableScrollers(this.text.reply);
        break;
      }
      case 'tool_call': {
        const card = toolCard(e.callId, e.tool, e.input);
        this.tools.set(e.callId, card);
        this.log.append(card.li);
        break;
      }
      case 'approval': {
        const card = approvalCard(e, this.folder, (d) => this.decide(e, d));
        this.approvals.set(e.callId, card);
        this.log.append(card.li);
        break;
      }
      case 'decision':
        this.approvals.get(e.callId)?.decided(e.decision);
        break;
      case 'tool_result':
        this.tools.get(e.callId)?.result(e.ok, e.output, e.denied === true);
        // A relay without decision events: the result still says how it ended.
        if (this.approvals.get(e.callId)?.open) this.approvals.get(e.callId)!.decided(e.denied ? 'deny' : 'allow');
        break;
      case 'error': {
        const li = el('li', 'agent-error', e.message);
        this.log.append(li);
        break;
      }
      case 'context': {
        // Said, never silent: what the model no longer sees whole.
        const li = el('li', 'agent-context', e.summarised ? 'Earlier steps were summarised to fit the model\u2019s context.' : e.message);
        if (e.dropped?.length) li.title = e.dropped.join('\n');
        this.log.append(li);
        break;
      }
      case 'status':
        this.status = e.status;
        break;
    }
  }

  private showPlan(entries: AgentPlanEntry[]): void {
    if (!this.plan) {
      this.plan = el('li', 'agent-plan');
      this.log.append(this.plan);
    }
    const list = el('ul', 'plan-entries');
    list.setAttribute('aria-label', 'Plan');
    for (const entry of entries) {
      const item = el('li', `plan-entry ${entry.status}`);
      const mark = el('span', 'plan-mark', entry.status === 'completed' ? '\u2611' : entry.status === 'in_progress' ? '\u25d0' : '\u2610');
      mark.setAttribute('aria-hidden', 'true');
      item.append(mark, el('span', 'visually-hidden', `${PLAN_WORDS[entry.status]}:`), el('span', 'plan-text', entry.content));
      list.append(item);
    }
    this.plan.replaceChildren(el('span', 'plan-title', 'Plan'), list);
  }
}

const PLAN_WORDS: Record<AgentPlanEntry['status'], string> = { pending: 'To do', in_progress: 'Doing', completed: 'Done' };

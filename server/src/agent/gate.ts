import { createHash } from 'node:crypto';
import type { ApprovalKind } from './tools';
import { approvalShows, DECISIONS, MAX_NOTE, type ApprovalShown, type Decision, type PendingApproval } from '../protocol';

// The wire's decisions and approval shapes (protocol/agent.ts), used here as the gate keeps them.
export { approvalShows, DECISIONS, MAX_NOTE };
export type { ApprovalShown, Decision, PendingApproval };

export class NotPendingError extends Error {}

/** Said on a command's card when an edit ended its session grant. */
export const GRANT_ENDED_REASON = 'A file changed since you allowed this command for the session.';

/** Lowercase hex SHA-256 of the UTF-8 bytes of what the card shows (CONTRACT.md §9). */
export function approvalDigest(a: ApprovalShown): string {
  return createHash('sha256').update(approvalShows(a), 'utf8').digest('hex');
}

/** How the gate tells its session what happened, so the session's events say it. */
export interface GateEvents {
  asked(approval: PendingApproval): void;
  /** `waiting`: approvals still open after this one; `note`: what the user said with a denial. */
  decided(callId: string, decision: Decision, waiting: number, note?: string): void;
}

/**
 * The one place a session's calls pass before they run: its call ids, the approvals waiting,
 * the grants (`allow_session`), the decision and the stop's denials.
 *
 * What asks first: reads never; edits until the user answers `allow_session` to one (then
 * every edit of the session); a command until `allow_session` for that exact line, and only
 * until the agent next changes a file (the file may be what the line runs); a host's tool until
 * `allow_session` for that tool. Nothing is granted beyond the session.
 *
 * decide() is the single entry point for a decision, whichever screen makes it (the phone's
 * door, the desk's own view): one decision per call, the first winning.
 */
export class ApprovalGate {
  private nextCall = 1;
  private edits = false;
  private readonly granted = new Set<string>();
  /** Command lines whose grant an edit ended: their next card says why it asks again. */
  private readonly ended = new Set<string>();
  private readonly waiting = new Map<string, { approval: PendingApproval; resolve: (d: Decision) => void }>();
  /** What the user said with a denial, until the session tells the model. */
  private readonly notes = new Map<string, string>();

  constructor(private readonly events: GateEvents) {}

  /** The number the next call id takes (a kept session saves it, so ids stay unique after a restart). */
  get nextCallNumber(): number {
    return this.nextCall;
  }

  set nextCallNumber(n: number) {
    this.nextCall = Math.max(this.nextCall, n);
  }

  /** A new call id, never given before in this session. */
  newCallId(): string {
    return `c${this.nextCall++}`;
  }

  /** `key`: the command line for commands, the tool's name for host tools. */
  needsApproval(kind: ApprovalKind, key?: string): boolean {
    if (kind === 'never') return false;
    if (kind === 'edit') return !this.edits;
    return key === undefined || !this.granted.has(grantKey(kind, key));
  }

  /**
   * Shows the approval and settles with the user's decision (a stop denies). An
   * `allow_session` answer is recorded as a grant before it settles.
   */
  ask(kind: ApprovalKind, key: string | undefined, call: { callId: string; tool: string } & ApprovalShown): Promise<Decision> {
    const reason = kind === 'command' && key !== undefined && this.ended.has(key) ? GRANT_ENDED_REASON : undefined;
    const approval: PendingApproval = {
      callId: call.callId,
      tool: call.tool,
      input: call.input,
      ...(call.diff !== undefined ? { diff: call.diff } : {}),
      ...(call.command !== undefined ? { command: call.command } : {}),
      digest: approvalDigest(call),
      ...(reason ? { reason } : {}),
    };
    return new Promise<Decision>((resolve) => {
      this.waiting.set(approval.callId, {
        approval,
        resolve: (d) => {
          if (d === 'allow_session') this.grant(kind, key);
          resolve(d);
        },
      });
      this.events.asked(approval);
    });
  }

  /**
   * The user's answer; NotPendingError when no approval waits for callId (decided, stopped,
   * unknown). A denial may carry a note (why), which goes to the model with it.
   */
  decide(callId: string, decision: Decision, note?: string): void {
    const entry = this.waiting.get(callId);
    if (!entry) throw new NotPendingError();
    this.waiting.delete(callId);
    const said = decision === 'deny' ? note?.trim().slice(0, MAX_NOTE) : undefined;
    if (said) this.notes.set(callId, said);
    this.events.decided(callId, decision, this.waiting.size, said || undefined);
    entry.resolve(decision);
  }

  /** The note given with callId's denial, once. */
  takeNote(callId: string): string | undefined {
    const note = this.notes.get(callId);
    this.notes.delete(callId);
    return note;
  }

  /** The stop: every waiting approval denied. */
  denyAll(): void {
    for (const callId of [...this.waiting.keys()]) this.decide(callId, 'deny');
  }

  /** The agent is about to change a file: every command grant ends (the next run asks again). */
  filesChange(): void {
    for (const key of this.granted) {
      if (!key.startsWith('command\0')) continue;
      this.granted.delete(key);
      this.ended.add(key.slice('command\0'.length));
    }
  }

  /** The approval waiting for callId, if any (what a decision would be about). */
  get(callId: string): PendingApproval | undefined {
    return this.waiting.get(callId)?.approval;
  }

  get pending(): PendingApproval[] {
    return [...this.waiting.values()].map((w) => w.approval);
  }

  get size(): number {
    return this.waiting.size;
  }

  private grant(kind: ApprovalKind, key?: string): void {
    if (kind === 'edit') this.edits = true;
    else if (kind !== 'never' && key !== undefined) {
      this.granted.add(grantKey(kind, key));
      if (kind === 'command') this.ended.delete(key);
    }
  }
}

const grantKey = (kind: ApprovalKind, key: string) => `${kind}\0${key}`;

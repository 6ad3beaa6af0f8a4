import type { ApprovalKind } from './tools';

export type Decision = 'allow' | 'deny' | 'allow_session';
export const DECISIONS: readonly Decision[] = ['allow', 'deny', 'allow_session'];

/**
 * What asks first, per session: reads never; edits until the user answers `allow_session` to
 * one (then every edit of the session); commands until `allow_session` for that exact command
 * line (another line still asks); a host's tool until `allow_session` for that tool. Nothing is
 * granted beyond the session.
 */
export class ApprovalPolicy {
  private edits = false;
  private readonly granted = new Set<string>();

  /** `key`: the command line for commands, the tool's name for host tools. */
  needsApproval(kind: ApprovalKind, key?: string): boolean {
    if (kind === 'never') return false;
    if (kind === 'edit') return !this.edits;
    return key === undefined || !this.granted.has(`${kind}\0${key}`);
  }

  /** Records an `allow_session` answer. */
  grant(kind: ApprovalKind, key?: string): void {
    if (kind === 'edit') this.edits = true;
    else if (kind !== 'never' && key !== undefined) this.granted.add(`${kind}\0${key}`);
  }
}

import type { ApprovalKind } from './tools';

export type Decision = 'allow' | 'deny' | 'allow_session';
export const DECISIONS: readonly Decision[] = ['allow', 'deny', 'allow_session'];

/**
 * What asks first, per session: reads never; edits until the user answers `allow_session` to
 * one (then every edit of the session); commands until `allow_session` for that exact command
 * line (another line still asks). Nothing is granted beyond the session.
 */
export class ApprovalPolicy {
  private edits = false;
  private readonly commands = new Set<string>();

  needsApproval(kind: ApprovalKind, command?: string): boolean {
    if (kind === 'never') return false;
    if (kind === 'edit') return !this.edits;
    return command === undefined || !this.commands.has(command);
  }

  /** Records an `allow_session` answer. */
  grant(kind: ApprovalKind, command?: string): void {
    if (kind === 'edit') this.edits = true;
    else if (kind === 'command' && command !== undefined) this.commands.add(command);
  }
}

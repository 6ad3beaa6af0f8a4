/**
 * What the agent's screens share: the session on screen, whether the desk has the agent, and
 * the way between the list and a session (set by screen.ts, so the views import nothing of
 * each other).
 */
import type { AgentCommand } from '../../../server/src/protocol';
import type { Attention } from './attention';
import type { Follow } from './stream';
import type { Transcript } from './transcript';

export interface CurrentSession {
  id: string;
  folder: string;
  transcript: Transcript;
  follow: Follow;
  focusCall?: string;
  commands: AgentCommand[];
  instructions?: string;
  worktree?: { branch: string; into?: string };
}

export const agent: {
  current: CurrentSession | null;
  available: boolean;
  /** The count of approvals waiting, on the tab, the header, the title and the Chat screen. */
  attention: Attention | undefined;
} = { current: null, available: false, attention: undefined };

/** `focusCall` meaning "whichever card is still waiting" (the session list does not name the call). */
export const ANY_PENDING = '*';

export const nav = {
  showList: (): Promise<void> => Promise.resolve(),
  openSession: (_id: string, _folder: string, _title?: string, _focusCall?: string): void => {},
  /** Asks the desk again whether the agent is on (the door said agent.disabled). */
  refresh: (): Promise<void> => Promise.resolve(),
};

/** An error as a person reads it. */
export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

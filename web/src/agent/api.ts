/** The agent door's requests (docs/agent.md), same-origin, with the pairing token. */
import type { AgentChanges as SessionChanges, AgentFileChange as FileChange, AgentFilesAnswer, AgentFolder, AgentFoldersAnswer, AgentInfo, AgentSessionCreated, AgentSessionRequest, AgentSessionSummary, Decision, ToolServer } from '../../../server/src/protocol';
import { AGENT_PATHS } from '../../../server/src/protocol/agent';
import { pathTo } from '../../../server/src/protocol/paths';
import { ApiError, apiError, bearer, UNREACHABLE_MESSAGE } from '../api';
import { app } from '../app';
import { readKeys } from '../keep';
import { actionSignature, decisionBody, sha256Hex, type SignableApproval, type SignedAction } from './sign';

export type { AgentFolder, AgentSessionSummary, Decision, ToolServer };

/** A session's Changes (GET …/changes), as the protocol says. */
export type { FileChange, SessionChanges };

/** The diff's digest does not match what the view shows: nothing is signed (sign.ts's rule for cards). */
export const UNDO_MISMATCH_MESSAGE = 'This phone will not sign this Undo: the diff it shows is not what the desktop listed (its fingerprint differs). Reload the changes.';

async function call(path: string, init: RequestInit = {}): Promise<Response> {
  const token = app.pairing?.token;
  if (!token) throw new ApiError('Not paired.', 0, 'network');
  let res: Response;
  try {
    res = await fetch(path, {
      ...init,
      cache: 'no-store',
      headers: { ...bearer(token), ...(init.body ? { 'Content-Type': 'application/json' } : {}) },
    });
  } catch {
    throw new ApiError(UNREACHABLE_MESSAGE, 0, 'network');
  }
  if (!res.ok) throw await apiError(res);
  return res;
}

const json = async <T>(path: string, init?: RequestInit): Promise<T> => (await (await call(path, init)).json()) as T;
const post = (path: string, body: unknown) => call(path, { method: 'POST', body: JSON.stringify(body) });
const signed = async (action: SignedAction, id: string, ...subject: string[]) => actionSignature((await readKeys())?.privateKey, action, id, ...subject);

export const agentApi = {
  folders: () => json<AgentFoldersAnswer>(AGENT_PATHS.agentFolders).then((r) => r.folders),
  toolServers: () => json<AgentFoldersAnswer>(AGENT_PATHS.agentFolders).then((r) => r.toolServers ?? []),
  sessions: () => json<{ sessions: AgentSessionSummary[] }>(AGENT_PATHS.agentSessions).then((r) => r.sessions),
  create: (prompt: string, folder: string, agent?: string, worktree = false) =>
    post(AGENT_PATHS.agentSessions, { prompt, folder, ...(agent && agent !== 'deskrelay' ? { agent } : {}), ...(worktree ? { worktree } : {}) } satisfies AgentSessionRequest).then((r) => r.json() as Promise<AgentSessionCreated>),
  /** Merge, Discard, the mode and the model: signed by this phone's key (docs/devices.md). */
  merge: async (id: string) => post(pathTo(AGENT_PATHS.agentMerge, { id }), await signed('merge', id)),
  discard: async (id: string) => post(pathTo(AGENT_PATHS.agentDiscard, { id }), await signed('discard', id)),
  /** The agents a session may run (a relay before ACP agents has only DeskRelay's own). */
  agents: () => json<{ agents: AgentInfo[] }>(AGENT_PATHS.agentAgents).then((r) => r.agents, (): AgentInfo[] => []),
  choose: async (id: string, what: 'mode' | 'model', value: string) =>
    post(pathTo(what === 'mode' ? AGENT_PATHS.agentMode : AGENT_PATHS.agentModel, { id }), { [what]: value, ...(await signed(what, id, value)) }),
  changes: (id: string) => json<SessionChanges>(pathTo(AGENT_PATHS.agentChanges, { id })),
  /** Signed over the path and the digest of the diff shown, which is checked first: a file shown otherwise than listed is not signed for. */
  undo: async (id: string, file: FileChange) => {
    if (file.digest !== (await sha256Hex(file.diff))) throw new Error(UNDO_MISMATCH_MESSAGE);
    return (await post(pathTo(AGENT_PATHS.agentUndo, { id }), { path: file.path, digest: file.digest, ...(await signed('undo', id, file.path, file.digest)) })).json() as Promise<SessionChanges>;
  },
  message: (id: string, text: string) => post(pathTo(AGENT_PATHS.agentMessages, { id }), { text }),
  /** Signed by this phone's key over the card's digest (sign.ts); refuses, sending nothing, when the card is not what the digest covers. */
  decide: async (id: string, approval: SignableApproval, decision: Decision) =>
    post(pathTo(AGENT_PATHS.agentApproval, { id, callId: approval.callId }), await decisionBody((await readKeys())?.privateKey, id, approval, decision)),
  stop: (id: string) => call(pathTo(AGENT_PATHS.agentStop, { id }), { method: 'POST' }),
  files: (folder: string, q: string) =>
    json<AgentFilesAnswer>(`${AGENT_PATHS.agentFiles}?${new URLSearchParams({ folder, q }).toString()}`),
};

/** Whether the desktop has the agent on: the door answers 403 agent.disabled when it is off. */
export async function agentAvailable(): Promise<{ on: boolean; message: string }> {
  try {
    await agentApi.folders();
    return { on: true, message: '' };
  } catch (err) {
    if (err instanceof ApiError && err.code === 'agent.disabled') return { on: false, message: err.message };
    // The desk has the agent but has not allowed this phone: the agent's screen shows the desk's words on how to.
    if (err instanceof ApiError && err.code === 'agent.device_not_allowed') return { on: true, message: err.message };
    // A relay older than the agent door answers 404 with no error body of ours: off as well.
    if (err instanceof ApiError && (err.status === 404 || err.code === 'wrong_service')) return { on: false, message: '' };
    throw err;
  }
}

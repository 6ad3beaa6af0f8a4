import * as vscode from 'vscode';
import { agentApprovals } from './settings';
import { commandEnv, configDir, parseAcpAgents, type AcpAgentConfig, type AgentHost, type SessionStore, type Workspace } from '../../server/src';
import { AppliedEdits } from './agentEdits';
import { AgentTerminals } from './agentTerminal';
import { lmTools, VsCodeWorkspace } from './agentWorkspace';

/** The tools of other extensions, each asking first unless in `deskrelay.agent.autoApproveTools` (the user's value only). */
function autoApprovedTools() {
  const listed = vscode.workspace.getConfiguration('deskrelay').inspect<string[]>('agent.autoApproveTools')?.globalValue;
  return lmTools(Array.isArray(listed) ? listed.filter((n) => typeof n === 'string') : []);
}

/** The names agent commands keep anyway and lose besides: `deskrelay.agent.env.pass` / `.drop`, the user's values only. */
function agentEnv(): NodeJS.ProcessEnv {
  const c = vscode.workspace.getConfiguration('deskrelay');
  const names = (key: string) => {
    const listed = c.inspect<string[]>(key)?.globalValue;
    return Array.isArray(listed) ? listed.filter((n) => typeof n === 'string' && n !== '') : [];
  };
  return commandEnv(process.env, { pass: names('agent.env.pass'), drop: names('agent.env.drop') });
}

/**
 * The workspace agent's host in VS Code: the open folders on disk, but only while the user's
 * own setting `deskrelay.agent.enabled` is on (machine scope: a workspace's settings can never
 * turn it on, so a cloned repository cannot) and the workspace is trusted. Asked on every
 * request, so turning either off ends the agent at once.
 */
export class ExtensionAgentHost implements AgentHost, vscode.Disposable {
  readonly howToEnable = 'Turn it on at the desk: the user setting "deskrelay.agent.enabled" in VS Code, in a trusted workspace.';
  readonly approvals = agentApprovals;
  readonly howToAllow = () => 'at the desk, Allow in the DeskRelay notification, or DeskRelay: Manage Devices → the phone → Allow agent access.';
  private readonly terminals = new AgentTerminals();
  /** Every edit the agent applied in this window, with its own before and after. */
  readonly edits = new AppliedEdits();
  private cache = new Map<string, VsCodeWorkspace>();
  private readonly attached = new vscode.EventEmitter<SessionStore>();
  /** The door's session store (a new one each time the relay starts): the sessions view follows it. */
  store: SessionStore | undefined;
  readonly onAttach = this.attached.event;

  attach(sessions: SessionStore): void {
    this.store = sessions;
    this.attached.fire(sessions);
  }

  workspaces(): readonly Workspace[] {
    const c = vscode.workspace.getConfiguration('deskrelay');
    // The user's value only, whatever a workspace's settings say.
    const enabled = c.inspect<boolean>('agent.enabled')?.globalValue === true;
    if (!enabled || !vscode.workspace.isTrusted) return [];
    const deny = (c.inspect<string[]>('agent.denyPaths')?.globalValue ?? []).filter((g) => typeof g === 'string' && g.trim() !== '');
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
    const names = new Set<string>();
    const next = new Map<string, VsCodeWorkspace>();
    const out: VsCodeWorkspace[] = [];
    for (const folder of folders) {
      let name = folder.name;
      for (let n = 2; names.has(name); n++) name = `${folder.name} (${n})`;
      names.add(name);
      const key = JSON.stringify([folder.uri.toString(), name, deny]);
      const workspace =
        this.cache.get(key) ??
        new VsCodeWorkspace(folder, { name, denyPaths: deny, configDir: configDir(), env: agentEnv, hostTools: autoApprovedTools, edits: this.edits }, this.terminals);
      next.set(key, workspace);
      out.push(workspace);
    }
    this.cache = next;
    return out;
  }

  /** The folder a session works in, by its name (while the agent is on). */
  folder(name: string): VsCodeWorkspace | undefined {
    return (this.workspaces() as VsCodeWorkspace[]).find((w) => w.name === name);
  }

  /** `deskrelay.agent.acpAgents`, the user's value only (machine scope: a repository cannot name a program to run); a bad value is none. */
  acpAgents(): Record<string, AcpAgentConfig> {
    try {
      return parseAcpAgents(vscode.workspace.getConfiguration('deskrelay').inspect('agent.acpAgents')?.globalValue);
    } catch {
      return {};
    }
  }

  dispose(): void {
    this.attached.dispose();
    this.terminals.dispose();
    this.edits.dispose();
  }
}

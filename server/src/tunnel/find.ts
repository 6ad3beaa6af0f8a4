import { accessSync, constants, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { TunnelError } from './errors';
import { redactSecrets } from '../redact';
import type { TunnelAgent, TunnelKindInfo } from './tunnel';

export interface ProgramSearch {
  /** The program as messages name it, and its file name on PATH: `tailscale`, `ngrok`. */
  program: string;
  /** A path the user chose (a setting or a CLI flag): used as given, never replaced by another binary. */
  explicitPath?: string;
  /** Where the explicit path came from, for messages: `deskrelay.tailscalePath / --tailscale`. */
  explicitSource: string;
  /** Places the agent's installer puts it when PATH lacks it (the macOS app bundle, Program Files…). */
  wellKnown?: string[];
  /** Steps to install it, ending in how to point DeskRelay at it. */
  installHelp: string;
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
}

/**
 * Finds an agent's program (tailscale, ngrok): the explicit path, then PATH, then the installer's
 * usual places. Throws a TunnelError ('agent-missing') naming the path or where it looked, with
 * install steps. (cloudflared has its own, cloudflared/find.ts, which also knows the npm package.)
 */
export function findProgram(search: ProgramSearch): string {
  const env = search.env ?? process.env;
  const platform = search.platform ?? process.platform;
  const { program } = search;
  const explicit = search.explicitPath?.trim();
  if (explicit) {
    const file = expandHome(explicit);
    let isFile = false;
    try {
      isFile = statSync(file).isFile();
    } catch {
      throw new TunnelError(
        `${program} was not found at ${file} (the path given by ${search.explicitSource}): no such file. Fix or clear the path, or install ${program} there.\n${search.installHelp}`,
        [],
        'agent-missing',
      );
    }
    if (!isFile) throw new TunnelError(`${file} (from ${search.explicitSource}) is not a file; it should be the ${program} program.`, [], 'agent-missing');
    if (!isExecutable(file, platform)) throw new TunnelError(`${file} (from ${search.explicitSource}) is not executable (chmod +x it).`, [], 'agent-missing');
    return file;
  }
  const names = platform === 'win32' ? (env.PATHEXT ?? '.COM;.EXE;.BAT;.CMD').split(';').filter(Boolean).map((e) => `${program}${e.toLowerCase()}`) : [program];
  const pathVar = (platform === 'win32' ? env.Path ?? env.PATH : env.PATH) ?? '';
  for (const dir of pathVar.split(platform === 'win32' ? ';' : ':')) {
    if (!dir) continue;
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (isExecutable(candidate, platform)) return candidate;
    }
  }
  for (const candidate of search.wellKnown ?? []) {
    if (isExecutable(candidate, platform)) return candidate;
  }
  const looked = ['PATH', ...(search.wellKnown ?? [])].join(', ');
  throw new TunnelError(`${program} was not found (looked in ${looked}). DeskRelay opens the tunnel with your own ${program}.\n${search.installHelp}`, [], 'agent-missing');
}

/** A regular file this user may run (Windows has no execute bit: its extension decides). */
export function isExecutable(file: string, platform: NodeJS.Platform): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    if (platform !== 'win32') accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? path.join(homedir(), p.slice(1)) : p;
}

/** Takes every secret, and any 8-character piece of one, out of a line the agent printed (ngrok repeats a bad authtoken in its error). */
export function redact(line: string, secrets: readonly string[]): string {
  return redactSecrets(line, secrets);
}

/** A kind whose agent is a program of the user's that findProgram finds (tailscale, ngrok). */
export interface ProgramKind {
  /** What the hosts know of the kind: the program, its path setting, its install hint. */
  info: TunnelKindInfo;
  /** The CLI flag naming the program's path: `--ngrok`. */
  flag: string;
  /** Where the program's installer puts it, per platform, when PATH lacks it. */
  wellKnown?: Partial<Record<NodeJS.Platform, string[]>>;
}

/** Finds a program-run kind's program; messages name its path setting and flag. */
export function findKindProgram(kind: ProgramKind, explicitPath?: string): string {
  const { info } = kind;
  return findProgram({
    program: info.program,
    explicitPath,
    explicitSource: `${info.pathSetting} / ${kind.flag}`,
    wellKnown: kind.wellKnown?.[process.platform],
    installHelp: info.installHint,
  });
}

/** A program-run kind's agent: the program found as findKindProgram does, the tunnel its own. */
export function programAgent(kind: ProgramKind, explicitPath: string | undefined, agent: Pick<TunnelAgent, 'kind' | 'title' | 'create'>): TunnelAgent {
  return { ...agent, program: kind.info.program, locate: () => findKindProgram(kind, explicitPath) };
}

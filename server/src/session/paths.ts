import { homedir } from 'node:os';
import { join } from 'node:path';

/** `$DESKRELAY_CONFIG_DIR`, else the platform's config dir + `/deskrelay` (CONTRACT §2). */
export function configDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (env.DESKRELAY_CONFIG_DIR) return env.DESKRELAY_CONFIG_DIR;
  if (platform === 'win32') return join(env.APPDATA || join(homedir(), 'AppData', 'Roaming'), 'deskrelay');
  if (platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'deskrelay');
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'deskrelay');
}

export const tokenPath = (dir: string) => join(dir, 'token');
/**
 * The desk's own token: the CLI on this machine acts as the desk with it (`deskrelay pair`,
 * `deskrelay devices allow`). Never in the pairing payload, so neither the pairing token nor a
 * device token can allow a device the agent.
 */
export const deskTokenPath = (dir: string) => join(dir, 'desk-token');
export const standaloneConfigPath = (dir: string) => join(dir, 'config.json');

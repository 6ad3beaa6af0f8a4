import { WorkspaceError, type Workspace } from './workspace';

/** The project's own instructions for agents, the first of these the folder has (the names other agents read). */
export const INSTRUCTION_FILES = ['AGENTS.md', 'CLAUDE.md', '.github/copilot-instructions.md'] as const;
/** A system prompt carries at most this much of the file (UTF-8 bytes): the rest of the context is the work's. */
export const MAX_INSTRUCTION_BYTES = 32 * 1024;

export interface ProjectInstructions {
  /** The file used, relative to the folder. */
  file: string;
  text: string;
  /** The file was longer than MAX_INSTRUCTION_BYTES and is cut. */
  cut: boolean;
}

/**
 * The folder's instructions, read through the Workspace so its deny list and link rules apply
 * (an AGENTS.md that is a link to `.env` is refused like any read, and the next name is tried).
 */
export async function readInstructions(workspace: Workspace): Promise<ProjectInstructions | undefined> {
  for (const file of INSTRUCTION_FILES) {
    let text: string | undefined;
    try {
      text = await workspace.readIfExists(file);
    } catch (err) {
      if (err instanceof WorkspaceError) continue;
      throw err;
    }
    if (text === undefined || text.trim() === '') continue;
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.length <= MAX_INSTRUCTION_BYTES) return { file, text, cut: false };
    let end = MAX_INSTRUCTION_BYTES;
    while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
    return { file, text: bytes.subarray(0, end).toString('utf8'), cut: true };
  }
  return undefined;
}

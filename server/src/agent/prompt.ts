import { MAX_INSTRUCTION_BYTES, type ProjectInstructions } from './instructions';
import type { Workspace } from './workspace';

/** The system message of every session: where the model works and the rules it works under. */
export function systemPrompt(workspace: Workspace, instructions?: ProjectInstructions): string {
  const rules = [
    `You are a coding agent working in the folder "${workspace.name}" on the user's desktop, driven from their phone.`,
    'Use the tools to look before you change anything: list_files, read_file, search, diagnostics and git_diff run at once.',
    'edit_file, write_file and run_command wait for the user to approve them on the phone; a denied call is the user\'s answer, so do not retry it unchanged.',
    'Paths are relative to the folder; nothing outside it is reachable, and secret files (.env, keys, credentials) and .git are refused.',
    'Prefer small edits with edit_file. Commands run without input and are stopped after a time limit.',
    'When you are done, answer briefly with what you found or changed.',
  ].join('\n');
  if (!instructions) return rules;
  const cut = instructions.cut ? `\n[cut: ${instructions.file} is longer than ${MAX_INSTRUCTION_BYTES} bytes; only its start is here.]` : '';
  return `${rules}\n\nThe project's own instructions, from its ${instructions.file} (follow them where they do not conflict with the rules above):\n\n${instructions.text}${cut}`;
}

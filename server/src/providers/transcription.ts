import type { ProviderConfig, ProviderSource } from './types';

/** The transcription provider in force, or why there is none (worded for the 412 and the docs). */
export type TranscriptionProvider = { ok: true; config: ProviderConfig; model: string } | { ok: false; why: string };

const HOW =
  'name an OpenAI-compatible provider that serves /audio/transcriptions (whisper.cpp\'s server, speaches, LocalAI, OpenAI, Groq) in "transcription": {"provider": "<id>", "model": "<model>"} in config.json, or in the "deskrelay.transcription" setting in VS Code';

/**
 * Only `openai-compatible` records can serve it: `/audio/transcriptions` is OpenAI's path, and
 * every server that transcribes for others (whisper.cpp, speaches, LocalAI, Groq) speaks it.
 */
export function transcriptionProvider(source: ProviderSource): TranscriptionProvider {
  const choice = source.transcription?.();
  if (!choice) return { ok: false, why: `No transcription provider is set on the desktop: ${HOW}.` };
  const list = source.list?.() ?? [];
  const config = list.find((p) => p.id === choice.provider);
  if (!config) return { ok: false, why: `The transcription provider "${choice.provider}" is not among the desktop's providers: ${HOW}.` };
  if (config.kind !== 'openai-compatible') {
    return { ok: false, why: `The transcription provider "${choice.provider}" is of kind ${config.kind}, which does not transcribe: ${HOW}.` };
  }
  return { ok: true, config, model: choice.model };
}

/**
 * The browser's own recogniser (`SpeechRecognition`, `webkitSpeechRecognition` in Chrome and
 * Safari), used when the desktop has no transcriber. Chrome and Safari send the audio to their
 * makers' servers, which the phone says once before the first use.
 */

interface RecognitionResult {
  readonly isFinal: boolean;
  readonly 0: { transcript: string };
}
interface RecognitionEvent extends Event {
  readonly resultIndex: number;
  readonly results: ArrayLike<RecognitionResult>;
}
interface Recognition extends EventTarget {
  lang: string;
  continuous: boolean;
  interimResults: boolean;
  start(): void;
  stop(): void;
  abort(): void;
}
type RecognitionCtor = new () => Recognition;

function ctor(): RecognitionCtor | undefined {
  const w = window as unknown as { SpeechRecognition?: RecognitionCtor; webkitSpeechRecognition?: RecognitionCtor };
  return w.SpeechRecognition ?? w.webkitSpeechRecognition;
}

export const canRecognise = (): boolean => ctor() !== undefined;

export interface Listening {
  /** Stops listening; what was heard so far still arrives. */
  stop(): void;
  abort(): void;
  /** The text heard (final results joined), once the recogniser ended ('' for nothing). */
  readonly done: Promise<string>;
}

/**
 * Listens until the speaker pauses (the recogniser ends on its own then) or stop(). `interim`
 * sees the words as they come.
 */
export function listen(interim?: (text: string) => void): Listening {
  const Ctor = ctor()!;
  const r = new Ctor();
  r.lang = document.documentElement.lang || navigator.language;
  r.continuous = false;
  r.interimResults = true;
  let final = '';
  const done = new Promise<string>((resolve, reject) => {
    r.addEventListener('result', (e) => {
      const ev = e as RecognitionEvent;
      let partial = '';
      for (let i = ev.resultIndex; i < ev.results.length; i++) {
        const res = ev.results[i];
        if (res.isFinal) final += res[0].transcript;
        else partial += res[0].transcript;
      }
      interim?.((final + partial).trim());
    });
    r.addEventListener('error', (e) => {
      const code = (e as Event & { error?: string }).error ?? '';
      if (code === 'no-speech' || code === 'aborted') return;
      reject(new Error(code === 'not-allowed' ? 'The browser was not allowed to use the microphone.' : `The browser's speech recognition failed (${code || 'error'}).`));
    });
    r.addEventListener('end', () => resolve(final.trim()));
  });
  r.start();
  return { stop: () => r.stop(), abort: () => r.abort(), done };
}

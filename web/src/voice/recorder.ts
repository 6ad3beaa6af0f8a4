/**
 * Recording for the desktop's transcriber: the microphone through MediaRecorder (Chromium gives
 * `audio/webm;codecs=opus`, Safari `audio/mp4`), with its level for a meter and the pause
 * after speech that hands-free mode sends on.
 */

const TYPES = ['audio/webm;codecs=opus', 'audio/webm', 'audio/mp4', 'audio/ogg;codecs=opus'];
/** RMS level (0..1) above which the microphone hears speech rather than the room. */
const SPEECH_LEVEL = 0.04;

export const canRecord = (): boolean => typeof MediaRecorder !== 'undefined' && !!navigator.mediaDevices?.getUserMedia;

export interface RecordingEvents {
  /** About 30 times a second: the level (0..1) and the seconds recorded. */
  level?(level: number, seconds: number): void;
  /** Speech was heard and then `pauseMs` of quiet followed (hands-free sends then). */
  pause?(): void;
  pauseMs?: number;
}

export class Recording {
  private recorder: MediaRecorder | undefined;
  private stream: MediaStream | undefined;
  private audio: AudioContext | undefined;
  private frame = 0;
  private readonly chunks: Blob[] = [];
  private startedAt = 0;
  private stopped: Promise<Blob> | undefined;

  constructor(private readonly events: RecordingEvents = {}) {}

  /** Asks for the microphone (the browser's prompt the first time) and starts recording. */
  async start(): Promise<void> {
    this.stream = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true } });
    const mimeType = TYPES.find((t) => MediaRecorder.isTypeSupported(t));
    this.recorder = new MediaRecorder(this.stream, mimeType ? { mimeType } : {});
    this.recorder.addEventListener('dataavailable', (e) => {
      if (e.data.size) this.chunks.push(e.data);
    });
    this.stopped = new Promise((resolve, reject) => {
      this.recorder!.addEventListener('stop', () => resolve(new Blob(this.chunks, { type: this.recorder!.mimeType || mimeType || 'audio/webm' })));
      this.recorder!.addEventListener('error', () => reject(new Error('The recording failed.')));
    });
    this.recorder.start(250);
    this.startedAt = performance.now();
    this.meter(this.stream);
  }

  get seconds(): number {
    return this.startedAt ? (performance.now() - this.startedAt) / 1000 : 0;
  }

  /** Ends the recording; resolves with the audio. */
  async stop(): Promise<Blob> {
    if (this.recorder?.state === 'recording') this.recorder.stop();
    try {
      return await (this.stopped ?? Promise.resolve(new Blob()));
    } finally {
      this.release();
    }
  }

  /** Ends it and drops the audio. */
  cancel(): void {
    if (this.recorder?.state === 'recording') this.recorder.stop();
    this.chunks.length = 0;
    this.release();
  }

  private release(): void {
    cancelAnimationFrame(this.frame);
    for (const track of this.stream?.getTracks() ?? []) track.stop();
    void this.audio?.close().catch(() => undefined);
    this.audio = undefined;
  }

  /** The level from an AnalyserNode, per animation frame; the pause is timed from the last loud frame. */
  private meter(stream: MediaStream): void {
    const Ctx = window.AudioContext ?? (window as unknown as { webkitAudioContext?: typeof AudioContext }).webkitAudioContext;
    if (!Ctx) return;
    const audio = (this.audio = new Ctx());
    const analyser = audio.createAnalyser();
    analyser.fftSize = 1024;
    audio.createMediaStreamSource(stream).connect(analyser);
    const samples = new Float32Array(analyser.fftSize);
    let heard = false;
    let lastLoud = performance.now();
    const pauseMs = this.events.pauseMs ?? 1500;
    const tick = () => {
      analyser.getFloatTimeDomainData(samples);
      let sum = 0;
      for (const s of samples) sum += s * s;
      const level = Math.min(1, Math.sqrt(sum / samples.length) * 4);
      const now = performance.now();
      if (level > SPEECH_LEVEL) {
        heard = true;
        lastLoud = now;
      }
      this.events.level?.(level, this.seconds);
      if (heard && now - lastLoud > pauseMs && this.events.pause) {
        heard = false;
        this.events.pause();
      }
      this.frame = requestAnimationFrame(tick);
    };
    this.frame = requestAnimationFrame(tick);
  }
}

/**
 * The transcription door (issue 29): `POST /v1/audio/transcriptions` through real HTTP on
 * loopback, driven by the real openai SDK, relayed to a stand-in transcription server that reads
 * the relayed form byte for byte (test/fixtures/transcription/server.ts).
 */
import OpenAI, { toFile } from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startRelay, type TestRelay } from '../helpers/relay';
import { startTranscriptionStandIn, toneWav, type TranscriptionStandIn } from '../fixtures/transcription/server';
import type { ProviderConfig, ProviderSource, TranscriptionChoice } from '../../server/src/providers/types';

const KEY = 'sk-transcribe-SECRET-4f9a1c2e7b';
let t: TestRelay;
let stt: TranscriptionStandIn;
let choice: TranscriptionChoice | undefined;
let providers: ProviderConfig[];

beforeEach(async () => {
  stt = await startTranscriptionStandIn();
  providers = [
    { id: 'local', kind: 'ollama', baseUrl: 'http://127.0.0.1:9', model: 'auto' },
    { id: 'whisper', kind: 'openai-compatible', baseUrl: `${stt.url}/v1`, model: 'auto' },
  ];
  choice = { provider: 'whisper', model: 'whisper-large-v3' };
  const source: ProviderSource = { active: () => ({ ok: true, config: providers[0] }), list: () => providers, transcription: () => choice };
  t = await startRelay({
    providers: source,
    keys: { get: async (p) => (p.id === 'whisper' ? KEY : undefined), howToSet: (p) => `set the key of ${p.id}` },
  });
});
afterEach(async () => {
  await t.close();
  await stt.close();
});

const client = () => new OpenAI({ baseURL: `${t.url}/v1`, apiKey: t.token, maxRetries: 0 });
const url = () => `${t.url}/v1/audio/transcriptions`;
const auth = () => ({ authorization: `Bearer ${t.token}` });

/** A form as a browser's FormData sends it. */
function form(parts: { name: string; value: string | Blob; filename?: string }[]): FormData {
  const f = new FormData();
  for (const p of parts) {
    if (typeof p.value === 'string') f.append(p.name, p.value);
    else f.append(p.name, p.value, p.filename);
  }
  return f;
}
async function post(body: FormData | string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) {
  const res = await fetch(url(), { method: 'POST', headers: { ...auth(), ...headers }, body });
  return { status: res.status, body: (await res.json()) as { error: { message: string; code: string | null; type: string } } };
}

describe('POST /v1/audio/transcriptions with the openai SDK', () => {
  it('relays the recording to the transcription provider as OpenAI\'s multipart form and answers its text', async () => {
    const wav = toneWav();
    const result = await client().audio.transcriptions.create({
      file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }),
      model: 'whisper-1',
      language: 'en',
      prompt: 'DeskRelay, Ollama',
    });
    expect(result.text).toBe('Hello from the microphone.');
    expect(stt.received).toHaveLength(1);
    const got = stt.received[0];
    expect(got.problem).toBeUndefined();
    expect(got.headers['content-type']).toBe(`multipart/form-data; boundary=${got.boundary}`);
    expect(got.file?.filename).toBe('speech.wav');
    expect(got.file?.type).toBe('audio/wav');
    expect(got.file?.bytes.equals(wav)).toBe(true);
    // The desktop's model answers, whatever the client names (as in chat).
    expect(got.fields).toEqual({ model: 'whisper-large-v3', language: 'en', prompt: 'DeskRelay, Ollama', response_format: 'json' });
    expect(got.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('answers plain text for response_format text', async () => {
    const text = await client().audio.transcriptions.create({
      file: await toFile(toneWav(), 'a.wav', { type: 'audio/wav' }),
      model: 'whisper-1',
      response_format: 'text',
    });
    expect(text).toBe('Hello from the microphone.');
  });

  it('passes a phone\'s own recording types on, codecs included (Chromium webm/opus, Safari mp4)', async () => {
    const bytes = new Uint8Array([0x1a, 0x45, 0xdf, 0xa3, 1, 2, 3, 4]);
    for (const [type, name] of [['audio/webm;codecs=opus', 'clip.webm'], ['audio/mp4', 'clip.mp4'], ['audio/ogg', 'clip.ogg'], ['audio/mpeg', 'clip.mp3']]) {
      const res = await fetch(url(), { method: 'POST', headers: auth(), body: form([{ name: 'file', value: new Blob([bytes], { type }), filename: name }, { name: 'model', value: 'x' }]) });
      expect(res.status, type).toBe(200);
      expect(await res.json()).toEqual({ text: 'Hello from the microphone.' });
      const got = stt.received.at(-1)!;
      expect(got.file?.type).toBe(type);
      expect(got.file?.filename).toBe(name);
      expect(Buffer.from(bytes).equals(got.file!.bytes)).toBe(true);
    }
  });

  it('takes a file sent as octet-stream by its name (an SDK\'s Buffer upload)', async () => {
    await client().audio.transcriptions.create({ file: await toFile(toneWav(), 'memo.m4a'), model: 'whisper-1' });
    expect(stt.received[0].file?.type).toBe('audio/mp4');
  });
});

describe('refusals', () => {
  it('412 transcription.no_provider with what to set, when none is named, it is missing, or it cannot transcribe', async () => {
    for (const [set, says] of [
      [undefined, '"transcription": {"provider"'],
      [{ provider: 'gone', model: 'm' }, '"gone" is not among'],
      [{ provider: 'local', model: 'm' }, 'kind ollama'],
    ] as const) {
      choice = set;
      const err = await client()
        .audio.transcriptions.create({ file: await toFile(toneWav(), 'a.wav', { type: 'audio/wav' }), model: 'whisper-1' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(412);
      expect((err as Error).message).toContain(says);
      expect((err as Error).message).toContain('deskrelay.transcription');
    }
    expect(stt.received).toHaveLength(0);
  });

  it('401 without the token, before anything is relayed', async () => {
    const res = await fetch(url(), { method: 'POST', body: form([{ name: 'file', value: new Blob([new Uint8Array(toneWav())], { type: 'audio/wav' }), filename: 'a.wav' }]) });
    expect(res.status).toBe(401);
    expect(stt.received).toHaveLength(0);
  });

  it('415 for a body that is not a multipart form, and for a file that is not audio we take', async () => {
    const json = await post(JSON.stringify({ file: 'x' }), { 'content-type': 'application/json' });
    expect(json.status).toBe(415);
    expect(json.body.error.message).toContain('multipart/form-data');
    for (const type of ['text/plain', 'image/png', 'audio/flac']) {
      const r = await post(form([{ name: 'file', value: new Blob(['not audio'], { type }), filename: 'x.bin' }, { name: 'model', value: 'm' }]));
      expect(r.status, type).toBe(415);
      expect(r.body.error.message).toContain('audio/webm, audio/mp4, audio/wav, audio/mpeg or audio/ogg');
    }
    expect(stt.received).toHaveLength(0);
  });

  it('400 for a form without a file, an empty one, two files, an unserved response_format, a bad language, a broken form', async () => {
    const wav = () => new Blob([new Uint8Array(toneWav(0.05))], { type: 'audio/wav' });
    const cases: [FormData | Uint8Array<ArrayBuffer>, string, Record<string, string>?][] = [
      [form([{ name: 'model', value: 'm' }]), 'no "file"'],
      [form([{ name: 'file', value: new Blob([], { type: 'audio/wav' }), filename: 'a.wav' }]), 'empty'],
      [form([{ name: 'file', value: wav(), filename: 'a.wav' }, { name: 'file', value: wav(), filename: 'b.wav' }]), 'more than one'],
      [form([{ name: 'file', value: wav(), filename: 'a.wav' }, { name: 'response_format', value: 'srt' }]), 'json or text'],
      [form([{ name: 'file', value: wav(), filename: 'a.wav' }, { name: 'language', value: 'english please' }]), 'ISO-639-1'],
      [new TextEncoder().encode('--b\r\nContent-Disposition: form-data; name="file"\r\n\r\nno end'), 'closing boundary', { 'content-type': 'multipart/form-data; boundary=b' }],
    ];
    for (const [body, says, headers] of cases) {
      const r = await post(body, headers);
      expect(r.status, says).toBe(400);
      expect(r.body.error.message).toContain(says);
    }
    expect(stt.received).toHaveLength(0);
  });

  it('413 for audio over 25 MiB: announced, and in a body read whole', async () => {
    const big = new Uint8Array(25 * 1024 * 1024 + 1);
    const announced = await post(form([{ name: 'file', value: new Blob([new Uint8Array(26 * 1024 * 1024)], { type: 'audio/wav' }), filename: 'a.wav' }]));
    expect(announced.status).toBe(413);
    const read = await post(form([{ name: 'file', value: new Blob([big], { type: 'audio/wav' }), filename: 'a.wav' }]));
    expect(read.status).toBe(413);
    expect(read.body.error.message).toContain('25 MiB');
    expect(stt.received).toHaveLength(0);
  });

  it('counts the upload against the relay\'s body budget (503 server.busy past it)', async () => {
    await t.close();
    t = await startRelay({
      providers: { active: () => ({ ok: true, config: providers[0] }), list: () => providers, transcription: () => choice },
      bodyBudgetBytes: 1024 * 1024,
    });
    const r = await post(form([{ name: 'file', value: new Blob([new Uint8Array(2 * 1024 * 1024)], { type: 'audio/wav' }), filename: 'a.wav' }]));
    expect(r.status).toBe(503);
    expect(r.body.error.message).toContain('too many requests');
    // The refused body gave its share back: a small recording gets through at once.
    const small = await post(form([{ name: 'file', value: new Blob([new Uint8Array(toneWav(0.05))], { type: 'audio/wav' }), filename: 'a.wav' }]));
    expect(small.status).toBe(200);
  });

  it('502 transcription.failed when the provider refuses: the key never in the answer, the log has neither audio nor text', async () => {
    stt.mode = 'refuse-key';
    const err = await client()
      .audio.transcriptions.create({ file: await toFile(toneWav(), 'a.wav', { type: 'audio/wav' }), model: 'whisper-1' })
      .then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(err?.status).toBe(502);
    expect(err?.message).toContain('set the key of whisper');
    expect(err?.message).not.toContain(KEY);
    stt.mode = 'no-text';
    const r = await post(form([{ name: 'file', value: new Blob([new Uint8Array(toneWav(0.05))], { type: 'audio/wav' }), filename: 'a.wav' }]));
    expect(r.status).toBe(502);
    expect(r.body.error.message).toContain('without a "text"');
    stt.mode = 'ok';
    await client().audio.transcriptions.create({ file: await toFile(toneWav(), 'a.wav', { type: 'audio/wav' }), model: 'whisper-1', prompt: 'private prompt words' });
    const log = t.logLines.join('\n');
    expect(log).toContain('request POST /v1/audio/transcriptions 200 whisper');
    for (const secret of [KEY, 'Hello from the microphone', 'private prompt words', 'RIFF']) expect(log).not.toContain(secret);
  });
});

describe('GET /v1/providers says whether transcription is there', () => {
  it('transcription: true with a usable provider, false without', async () => {
    const view = async () => ((await (await fetch(`${t.url}/v1/providers`, { headers: auth() })).json()) as { transcription: boolean }).transcription;
    expect(await view()).toBe(true);
    choice = undefined;
    expect(await view()).toBe(false);
    choice = { provider: 'local', model: 'm' };
    expect(await view()).toBe(false);
  });
});

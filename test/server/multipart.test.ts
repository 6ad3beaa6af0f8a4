/**
 * The relay's multipart/form-data reader and writer (server/src/http/multipart.ts), on bodies
 * written by hand after RFC 7578 and RFC 2046 §5.1.1: what browsers and SDKs send, and what a
 * careless or hostile client might.
 */
import { describe, expect, it } from 'vitest';
import { buildForm, formBoundary, parseForm } from '../../server/src/http/multipart';
import { HttpError } from '../../server/src/http/errors';

const crlf = (lines: string[]) => Buffer.from(lines.join('\r\n'), 'latin1');

describe('formBoundary', () => {
  it('reads plain and quoted boundaries, only of multipart/form-data', () => {
    expect(formBoundary('multipart/form-data; boundary=----WebKitFormBoundaryAbC')).toBe('----WebKitFormBoundaryAbC');
    expect(formBoundary('Multipart/Form-Data; charset=utf-8; BOUNDARY="a b:c"')).toBe('a b:c');
    expect(formBoundary('multipart/mixed; boundary=x')).toBeUndefined();
    expect(formBoundary('application/json')).toBeUndefined();
    expect(formBoundary('multipart/form-data')).toBeUndefined();
    expect(formBoundary(`multipart/form-data; boundary=${'x'.repeat(71)}`)).toBeUndefined();
    expect(formBoundary(undefined)).toBeUndefined();
  });
});

describe('parseForm', () => {
  it('reads fields and files; a preamble, an epilogue and transport padding are ignored', () => {
    const body = crlf([
      'This is the preamble.',
      '--b  ',
      'Content-Disposition: form-data; name="model"',
      '',
      'whisper-1',
      '--b',
      'content-disposition: form-data; name="file"; filename="say \\"hi\\".wav"',
      'Content-Type: audio/wav',
      '',
      'RIFF\r\n--not-the-boundary\r\n',
      '--b--',
      'epilogue',
    ]);
    const parts = parseForm(body, 'b');
    expect(parts.map((p) => [p.name, p.filename, p.type, p.data.toString('latin1')])).toEqual([
      ['model', undefined, 'text/plain', 'whisper-1'],
      ['file', 'say "hi".wav', 'audio/wav', 'RIFF\r\n--not-the-boundary\r\n'],
    ]);
  });

  it('round-trips what buildForm writes, binary bytes included', () => {
    const audio = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 37) & 255));
    const body = buildForm([{ name: 'file', filename: 'a"b\r\n.webm', type: 'audio/webm;codecs=opus', data: audio }, { name: 'model', type: 'text/plain', data: Buffer.from('m') }], 'XyZ');
    const [file, model] = parseForm(body, 'XyZ');
    expect(file.filename).toBe('a%22b%0D%0A.webm');
    expect(file.type).toBe('audio/webm;codecs=opus');
    expect(file.data.equals(audio)).toBe(true);
    expect(model.data.toString()).toBe('m');
  });

  it('refuses broken forms with 400 request.invalid_body', () => {
    const refuse = (body: Buffer, why: string) => {
      let err: unknown;
      try {
        parseForm(body, 'b');
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(HttpError);
      expect((err as HttpError).status).toBe(400);
      expect((err as HttpError).code).toBe('request.invalid_body');
      expect((err as HttpError).message).toContain(why);
    };
    refuse(Buffer.from('no boundary at all'), 'no part starts with the boundary');
    refuse(crlf(['--b', 'Content-Disposition: form-data; name="x"', '', 'never closed']), 'closing boundary');
    refuse(crlf(['--bX', '']), 'not followed by a line break');
    refuse(crlf(['--b', 'Content-Disposition: form-data', '', 'v', '--b--']), 'no Content-Disposition: form-data with a name');
    refuse(crlf(['--b', 'no colon here', '', 'v', '--b--']), 'header line without a name');
    refuse(crlf(['--b', `X: ${'a'.repeat(9000)}`, '', 'v', '--b--']), 'do not end');
    const many = crlf([...Array.from({ length: 33 }, (_, i) => `--b\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv`), '--b--']);
    refuse(many, 'more than 32 parts');
  });
});

import { HttpError } from './errors';

/** One part of a multipart/form-data body (RFC 7578): a field, or a file when it has a file name. */
export interface FormPart {
  name: string;
  filename?: string;
  /** The part's Content-Type; RFC 7578 §4.4: text/plain when absent. */
  type: string;
  data: Buffer;
}

/** More parts than any form we take has: a body of thousands of empty parts is refused early. */
const MAX_PARTS = 32;
/** One part's header block; a real one is under 300 bytes. */
const MAX_HEADER_BYTES = 8 * 1024;

const malformed = (why: string) => new HttpError(400, 'request.invalid_body', `The multipart form is malformed: ${why}.`);

/**
 * The boundary of a `multipart/form-data` Content-Type, or undefined when the type is another
 * one. RFC 2046 §5.1.1: 1–70 characters, quoted when it holds characters a token cannot.
 */
export function formBoundary(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const [essence, ...params] = splitParams(contentType);
  if (essence.toLowerCase() !== 'multipart/form-data') return undefined;
  const boundary = params.find((p) => p.name === 'boundary')?.value;
  return boundary !== undefined && boundary.length >= 1 && boundary.length <= 70 ? boundary : undefined;
}

/**
 * The parts of a whole multipart/form-data body (RFC 7578, delimiters per RFC 2046 §5.1.1).
 * The body is already read and bounded (readBody), so parsing in place is enough: each part's
 * data is a view of the body, nothing is copied. Preamble and epilogue are ignored, as the RFC says.
 */
export function parseForm(body: Buffer, boundary: string): FormPart[] {
  const delimiter = Buffer.from(`--${boundary}`, 'latin1');
  const next = Buffer.from(`\r\n--${boundary}`, 'latin1');
  // The first delimiter may open the body or follow a preamble's CRLF.
  let at = body.subarray(0, delimiter.length).equals(delimiter) ? 0 : body.indexOf(next);
  if (at === -1) throw malformed('no part starts with the boundary the Content-Type names');
  if (at !== 0) at += 2;
  const parts: FormPart[] = [];
  for (;;) {
    at += delimiter.length;
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return parts; // `--`: the close delimiter
    // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
    while (body[at] === 0x20 || body[at] === 0x09) at++;
    if (body[at] !== 0x0d || body[at + 1] !== 0x0a) throw malformed('a boundary is not followed by a line break');
    at += 2;
    const headersEnd = body.indexOf('\r\n\r\n', at, 'latin1');
    const emptyHeaders = body[at] === 0x0d && body[at + 1] === 0x0a;
    const dataStart = emptyHeaders ? at + 2 : headersEnd + 4;
    if (!emptyHeaders && (headersEnd === -1 || headersEnd - at > MAX_HEADER_BYTES)) throw malformed('a part\'s headers do not end');
    const end = body.indexOf(next, dataStart);
    if (end === -1) throw malformed('the form does not end with its closing boundary');
    if (parts.length === MAX_PARTS) throw malformed(`it has more than ${MAX_PARTS} parts`);
    parts.push(part(emptyHeaders ? '' : body.toString('utf8', at, headersEnd), body.subarray(dataStart, end)));
    at = end + 2;
  }
}

function part(headerBlock: string, data: Buffer): FormPart {
  let disposition: Param[] | undefined;
  let type = 'text/plain';
  for (const line of headerBlock.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw malformed('a part has a header line without a name');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-disposition') disposition = splitParams(value).slice(1) as Param[];
    else if (name === 'content-type') type = value;
  }
  const name = disposition?.find((p) => p.name === 'name')?.value;
  if (name === undefined) throw malformed('a part has no Content-Disposition: form-data with a name');
  const filename = disposition?.find((p) => p.name === 'filename')?.value;
  return { name, ...(filename === undefined ? {} : { filename }), type, data };
}

interface Param {
  name: string;
  value: string;
}

/** `type; a=b; c="d \"e\""` → ['type', {a:b}, {c:'d "e"'}]; parameter names lower-cased. */
function splitParams(header: string): [string, ...Param[]] {
  const semi = header.indexOf(';');
  const head = (semi === -1 ? header : header.slice(0, semi)).trim();
  const params: Param[] = [];
  const re = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/gy;
  re.lastIndex = semi === -1 ? header.length : semi;
  for (let m = re.exec(header); m; m = re.exec(header)) {
    params.push({ name: m[1].toLowerCase(), value: m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3].trim() });
  }
  return [head, ...params];
}

/** A multipart/form-data body of these parts, for a provider; the boundary is fresh and random. */
export function buildForm(parts: readonly FormPart[], boundary: string): Buffer {
  const chunks: Buffer[] = [];
  // As browsers and undici escape names in FormData (WHATWG HTML, "multipart/form-data encoding algorithm").
  const quote = (s: string) => s.replace(/["\r\n]/g, (c) => (c === '"' ? '%22' : c === '\r' ? '%0D' : '%0A'));
  for (const p of parts) {
    const file = p.filename === undefined ? '' : `; filename="${quote(p.filename)}"`;
    const type = p.filename === undefined ? '' : `\r\nContent-Type: ${p.type}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${quote(p.name)}"${file}${type}\r\n\r\n`, 'utf8'), p.data, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

/**
 * Incremental SSE parsing: `id:` and `data:` fields, comments ignored, an event ends at a blank
 * line. Feed it decoded text as it arrives; it calls `onEvent(data, id)` per complete event.
 */
export function sseParser(onEvent: (data: string, id: string | null) => void): (chunk: string) => void {
  let buffer = '';
  let data: string[] = [];
  let id: string | null = null;
  return (chunk) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      let line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length) onEvent(data.join('\n'), id);
        data = [];
        id = null;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
  };
}

/** Feeds a response body's text to `parse` as it arrives, until the body ends (a dropped stream throws). */
export async function readText(body: NonNullable<Response['body']>, parse: (chunk: string) => void): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    parse(value);
  }
}

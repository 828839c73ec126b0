/**
 * The envd double's multipart/form-data reader: each part's form name, file name and bytes, as Go's
 * mime/multipart reader (which envd's upload uses) gives them. Content-Disposition's parameters are read as
 * Go's mime.ParseMediaType reads them: a token, or a quoted string in which a backslash escapes the next
 * character. A file name is kept whole, slashes included, as envd's FileNameWithPath keeps it.
 *
 * Written for the double and not undici's `Response.formData()`: in the delivery benchmark hundreds of doubles
 * share the controller's cores, and that parse, through WHATWG streams, Blob and File, was an eighth of their
 * CPU in a burst of claims (docs/benchmark.md, "Method").
 */

export interface FormPart {
  name: string | undefined;
  filename: string | undefined;
  content: Buffer;
}

/** The parts of `body`, or undefined when it is not a well-formed multipart/form-data body. */
export function readMultipart(contentType: string | undefined, body: Buffer): FormPart[] | undefined {
  const type = contentType === undefined ? undefined : mediaType(contentType);
  if (type === undefined || type.type !== 'multipart/form-data') return undefined;
  const boundary = type.params.get('boundary');
  if (boundary === undefined || boundary === '' || boundary.length > 70) return undefined;
  const dash = Buffer.from(`--${boundary}`, 'latin1');
  const delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
  // The preamble, if any, ends at the first delimiter line.
  let at: number;
  if (body.subarray(0, dash.length).equals(dash)) at = dash.length;
  else {
    const first = body.indexOf(delimiter);
    if (first < 0) return undefined;
    at = first + delimiter.length;
  }
  const parts: FormPart[] = [];
  for (;;) {
    if (body.subarray(at, at + 2).toString('latin1') === '--') return parts;
    const lineEnd = body.indexOf('\r\n', at);
    if (lineEnd < 0 || !/^[ \t]*$/.test(body.subarray(at, lineEnd).toString('latin1'))) return undefined;
    const headEnd = body.indexOf('\r\n\r\n', lineEnd);
    if (headEnd < 0) return undefined;
    const next = body.indexOf(delimiter, headEnd + 4);
    if (next < 0) return undefined;
    const headers = partHeaders(body.subarray(lineEnd + 2, headEnd + 2).toString('utf8'));
    if (headers === undefined) return undefined;
    const disposition = headers.get('content-disposition');
    const parsed = disposition === undefined ? undefined : mediaType(disposition);
    if (disposition !== undefined && parsed === undefined) return undefined;
    parts.push({
      name: parsed?.params.get('name'),
      filename: parsed?.params.get('filename'),
      content: body.subarray(headEnd + 4, next),
    });
    at = next + delimiter.length;
  }
}

/** A part's header lines, names lowercased; undefined when a line is not `Name: value`. */
function partHeaders(text: string): Map<string, string> | undefined {
  const headers = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+/;

/** `type/subtype; key=value; key="quoted \"value\""`, as mime.ParseMediaType reads it. */
function mediaType(text: string): { type: string; params: Map<string, string> } | undefined {
  const semicolon = text.indexOf(';');
  const type = (semicolon < 0 ? text : text.slice(0, semicolon)).trim().toLowerCase();
  if (type === '') return undefined;
  const params = new Map<string, string>();
  let rest = semicolon < 0 ? '' : text.slice(semicolon + 1);
  for (;;) {
    rest = rest.trimStart();
    if (rest === '') return { type, params };
    const key = TOKEN.exec(rest)?.[0];
    if (key === undefined || rest[key.length] !== '=') return undefined;
    rest = rest.slice(key.length + 1);
    let value: string;
    if (rest.startsWith('"')) {
      value = '';
      let i = 1;
      for (; i < rest.length && rest[i] !== '"'; i += 1) {
        if (rest[i] === '\\' && i + 1 < rest.length) i += 1;
        value += rest[i];
      }
      if (i >= rest.length) return undefined;
      rest = rest.slice(i + 1);
    } else {
      const token = TOKEN.exec(rest)?.[0];
      if (token === undefined) return undefined;
      value = token;
      rest = rest.slice(token.length);
    }
    const lower = key.toLowerCase();
    if (params.has(lower)) return undefined;
    params.set(lower, value);
    rest = rest.trimStart();
    if (rest === '') return { type, params };
    if (!rest.startsWith(';')) return undefined;
    rest = rest.slice(1);
  }
}

import { parseAllDocuments } from 'yaml';
import { errorLine, errorMessage } from '../errors/error-message.js';

/**
 * The one YAML (or JSON, which is YAML) document of a manifest, as plain data; anything else is refused with
 * a message naming `origin`, built by `fail` into the caller's error. `what` names the manifest expected.
 */
export function oneYamlDocument(text: string, origin: string, what: string, fail: (message: string) => Error): unknown {
  const documents = parseAllDocuments(text).filter((doc) => doc.contents !== null);
  const [document] = documents;
  if (documents.length !== 1 || document === undefined) {
    throw fail(`${origin}: expected one ${what} manifest, found ${documents.length} documents`);
  }
  const [firstError] = document.errors;
  // The parser's first line ends in a colon that introduced the excerpt of the text cut off with the rest.
  if (firstError !== undefined) {
    throw fail(`${origin}: not valid YAML or JSON: ${errorLine(firstError).replace(/:\s*$/, '')}`);
  }
  try {
    return document.toJS();
  } catch (error) {
    // Turning the document into data is where too many aliases (an alias bomb) are refused.
    throw fail(`${origin}: ${errorMessage(error)}`);
  }
}

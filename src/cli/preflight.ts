/**
 * `sandbox-injector preflight`: checks a cluster before and after install. It reads each object once
 * (preflight/read-cluster.ts), decides every check purely from what it read (preflight/checks-*.ts), and prints
 * one line per check, or JSON. Exits 0 when every check passes, 1 when one fails, 2 for a wrong command line.
 */
import { systemClock } from '../time/clock.js';
import { commandOptions, EXIT } from './command.js';
import { type CliIo, writeLine } from './io.js';
import { parsePreflightOptions, preflightUsage } from './preflight/options.js';
import { renderJson, renderText, runChecks } from './preflight/report.js';

/** `--help`: one line per option, from the rows the parser reads (src/cli/preflight/options.ts). */
export const usage = preflightUsage;

export async function run(argv: string[], io: CliIo): Promise<number> {
  const options = commandOptions(parsePreflightOptions(argv, process.env), preflightUsage, io.stdout);
  if (options === undefined) return EXIT.ok;
  // Loaded here so that --help and usage errors never load @kubernetes/client-node.
  const { readFacts } = await import('./preflight/read-cluster.js');
  const results = runChecks(await readFacts(options, systemClock));
  writeLine(io.stdout, options.output === 'json' ? renderJson(results) : renderText(results).trimEnd());
  const failed = results.filter((result) => !result.ok).map((result) => result.name);
  if (failed.length === 0) return EXIT.ok;
  writeLine(io.stderr, `sandbox-injector preflight: ${failed.length} check(s) failed: ${failed.join(', ')}`);
  return EXIT.failed;
}

/**
 * `sandbox-injector deliver-env`: the process edge of the delivery controller. Options are read first, and the
 * controller's modules (client-node among them) load only when it runs, so `--help` and usage errors are quick.
 */
import { pino } from 'pino';
import { errorMessage } from '../errors/error-message.js';
import { commandOptions } from './command.js';
import { deliverUsage, parseDeliverOptions } from './deliver-env/options.js';

/** `--help`: one line per option, from the rows the parser reads (src/cli/deliver-env/options.ts). */
export const usage = deliverUsage;

export async function run(argv: string[]): Promise<number> {
  const options = commandOptions(parseDeliverOptions(argv, process.env), deliverUsage);
  if (options === undefined) return 0;
  const logger = pino({ level: options.logLevel, base: { pid: process.pid } });
  try {
    const { runDeliverEnv } = await import('./deliver-env/run.js');
    return await runDeliverEnv(options, logger);
  } catch (error) {
    logger.fatal({ err: { message: errorMessage(error) } }, 'deliver-env cannot run');
    return 1;
  } finally {
    logger.flush();
  }
}

/**
 * `sandbox-injector deliver-env`: the process edge of the delivery controller. Options are read first, and the
 * controller's modules (client-node among them) load only when it runs, so `--help` and usage errors are quick.
 */
import { pino } from 'pino';
import { OptionsError } from '../config.js';
import { deliverOptionProblems, deliverUsage, parseDeliverOptions, type DeliverOptions } from '../deliver/options.js';
import { errorMessage } from '../util/error-message.js';
import { UsageError } from './command.js';

/** `--help`: one line per option, from the rows the parser reads (src/deliver/options.ts). */
export const usage = deliverUsage;

export async function run(argv: string[]): Promise<number> {
  let options: Readonly<DeliverOptions>;
  try {
    const parsed = parseDeliverOptions(argv, process.env);
    if (parsed.kind === 'help') {
      process.stdout.write(deliverUsage());
      return 0;
    }
    options = parsed.options;
    const problems = deliverOptionProblems(options);
    if (options.kubeconfig === undefined && process.env.KUBERNETES_SERVICE_HOST === undefined) {
      problems.push('needs --kubeconfig (SANDBOX_INJECTOR_KUBECONFIG) outside a pod');
    }
    if (problems.length > 0) throw new OptionsError(problems);
  } catch (error) {
    // Bad flags and bad environment variables alike: exit 2 (dispatch.ts).
    if (error instanceof OptionsError) throw new UsageError(error.message);
    throw error;
  }
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

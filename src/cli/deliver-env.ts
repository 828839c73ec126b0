/**
 * `sandbox-injector deliver-env`: the process edge of the delivery controller. Options are read first, and the
 * controller's modules (client-node among them) load only when it runs, so `--help` and usage errors are quick.
 */
import { pino } from 'pino';
import { deliverOptionProblems, deliverUsage, parseDeliverOptions } from '../deliver/options.js';
import { errorMessage } from '../util/error-message.js';
import { commandOptions, UsageError } from './command.js';

/** `--help`: one line per option, from the rows the parser reads (src/deliver/options.ts). */
export const usage = deliverUsage;

export async function run(argv: string[]): Promise<number> {
  const options = commandOptions(() => parseDeliverOptions(argv, process.env), deliverUsage);
  if (options === undefined) return 0;
  const problems = deliverOptionProblems(options);
  if (options.kubeconfig === undefined && process.env.KUBERNETES_SERVICE_HOST === undefined) {
    problems.push('needs --kubeconfig (SANDBOX_INJECTOR_KUBECONFIG) outside a pod');
  }
  if (problems.length > 0) throw new UsageError(problems.join('; '));
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

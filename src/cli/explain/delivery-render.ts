import { INIT_RUNTIME_REQUEST, SANDBOX_CLAIMED } from '../../sandbox/api.js';
import type { DeliveryExplanation, EnvState } from './delivery-facts.js';

const ENV: Record<EnvState, string> = {
  delivered: 'delivered: the newest Event says env.sh and .env_ready are in this pod',
  'not-delivered': 'NOT delivered',
  cleared: "cleared: the last claim's files were removed from this pod",
  'not-cleared': "not cleared: the last claim's files may still be in this pod",
  none: 'none: no claim, and no claim delivered to this pod on record',
};

/** deliver-env's side of a Sandbox for a person: one line per question, what to do next last. */
export function deliverySection(delivery: DeliveryExplanation): string[] {
  const { leader, claim, pod, decision, lastEvent } = delivery;
  const leading =
    leader.state === 'held'
      ? `Lease ${leader.lease} held by ${leader.holder ?? ''}`
      : `${leader.state === 'unknown' ? 'unknown' : 'NOT leading'}: Lease ${leader.lease} ${leader.why ?? ''}`;
  const claimed =
    claim === undefined
      ? `no (no label ${SANDBOX_CLAIMED}=true, no ${INIT_RUNTIME_REQUEST})`
      : `yes, by ${claim.by.join(' and ')}${claim.at === undefined ? '' : `, at ${claim.at}`}`;
  const target = pod.name === undefined ? `none: ${pod.why}` : `${pod.name} (uid ${pod.uid}): ${pod.why}`;
  const event =
    lastEvent === undefined
      ? 'none'
      : `${lastEvent.reason} (${lastEvent.type})${lastEvent.at === undefined ? '' : ` at ${lastEvent.at}`}: ${lastEvent.message}`;
  return [
    'Delivery (deliver-env)',
    `  deliver-env: ${leading}`,
    `  claimed:     ${claimed}`,
    `  pod:         ${target}`,
    `  decision:    ${decision.kind}${decision.case === undefined ? '' : ` (${decision.case})`}: ${decision.detail}`,
    `  last Event:  ${event}`,
    `  env:         ${ENV[delivery.env]}`,
    ...delivery.notes.map((note) => `  note: ${note}`),
    ...delivery.next.map((step, i) => `${i === 0 ? '  next:        ' : '               '}${step}`),
  ];
}

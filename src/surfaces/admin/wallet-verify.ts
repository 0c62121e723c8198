import type { Difference, Verification, VerifyProgress } from '../../gateway/billing/reconcile.js';
import { envelopeOf, GatewayError } from '../../shared/http/errors.js';

/** The most often a streamed verification says how far it has read. */
const PROGRESS_EVERY_MS = 200;

const DIFFERENCE_TEXT: Record<Difference['kind'], string> = {
  balance_differs: "The wallet's balance is not the sum of its ledger.",
  entry_balance_differs: "This entry's balance_after is not the previous entry's plus its amount.",
  charge_differs: "This charge is not minus its usage record's cost.",
  usage_without_charge: 'This usage record has a cost but no charge in the ledger.',
  charge_without_usage: 'This charge names no usage record of the organization.',
  checkpoint_differs:
    'The entries up to this one are not those the last checkpoint verified: the ledger was edited after it.',
};

export function verificationView(v: Verification, currency: string) {
  return {
    object: 'wallet.verification' as const,
    org_id: v.orgId,
    currency,
    ok: v.differenceCount === 0,
    mode: v.mode,
    balance_nanos: v.walletBalance.toString(),
    ledger_sum_nanos: v.ledgerSum.toString(),
    ledger_entries: v.ledgerEntries,
    usage_records: v.usageRecords,
    entries_read: v.entriesRead,
    checkpoint: v.checkpoint && {
      last_entry_id: v.checkpoint.lastEntryId,
      made_at: v.checkpoint.madeAt.toISOString(),
    },
    difference_count: v.differenceCount,
    differences: v.differences.map((d) => ({
      kind: d.kind,
      message: DIFFERENCE_TEXT[d.kind],
      ledger_entry_id: d.ledgerEntryId,
      request_id: d.requestId,
      expected_nanos: d.expected.toString(),
      found_nanos: d.found.toString(),
    })),
  };
}

export function progressView(p: VerifyProgress) {
  return {
    object: 'wallet.verification.progress' as const,
    phase: p.phase,
    read: p.read,
    fraction: Math.round(p.fraction * 1000) / 1000,
  };
}

type Steps = AsyncGenerator<VerifyProgress, Verification>;

/**
 * A verification as NDJSON (`Accept: application/x-ndjson`): a progress line every 200 ms at most,
 * then the verification; a failure past the first line is a last line `{"error": …}` (the status is
 * sent already). It reads a page when the client has taken the line before: a client that goes away
 * stops it.
 */
export async function* verificationLines(
  steps: Steps,
  first: IteratorResult<VerifyProgress, Verification>,
  currency: string,
): AsyncGenerator<string> {
  let step = first;
  let shownAt = 0;
  try {
    while (!step.done) {
      if (Date.now() - shownAt >= PROGRESS_EVERY_MS) {
        shownAt = Date.now();
        yield `${JSON.stringify(progressView(step.value))}\n`;
      }
      step = await steps.next();
    }
    yield `${JSON.stringify(verificationView(step.value, currency))}\n`;
  } catch (error) {
    const known =
      error instanceof GatewayError
        ? error
        : new GatewayError('internal_error', 'The verification failed part-way; run it again.');
    yield `${JSON.stringify(envelopeOf(known))}\n`;
  }
}

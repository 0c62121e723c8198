import { formatAmount } from '../../gateway/billing/money.js';
import type { BatchWithCost } from '../../gateway/batches/org-batches.js';
import { Page, type Viewer } from './layout.js';
import { time } from './runs-pages.js';

const ENDED = new Set(['completed', 'failed', 'expired', 'cancelled']);

/**
 * How far a batch's lines have got, as a bar and in words (the words are what a screen reader
 * says).
 */
function Progress({ done, failed, total }: { done: number; failed: number; total: number }) {
  return (
    <span class="batch-progress">
      <progress max={Math.max(total, 1)} value={done} aria-hidden="true"></progress>{' '}
      {total === 0 ? 'reading its file' : `${done} of ${total} done${failed > 0 ? `, ${failed} failed` : ''}`}
    </span>
  );
}

/**
 * The organization's batches, newest first: status, progress, cost so far, and links to their
 * results.
 */
export function BatchesPage({
  viewer,
  rows,
  currency,
  shown,
}: {
  viewer: Viewer;
  rows: BatchWithCost[];
  currency: string;
  shown: number;
}) {
  return (
    <Page title="Batches" user={viewer} current="batches">
      <h1>Batches</h1>
      <p class="muted">
        Files of requests run on the fleet's idle capacity at the batch price, made with the Batch API or{' '}
        <code>tollgate batches create</code>. The {shown} newest of every project; cost so far is what their lines have
        been billed.
      </p>
      {rows.length === 0 ? (
        <p>No batches yet.</p>
      ) : (
        <div class="table-wrap" tabindex={0} role="region" aria-label="Batches (scrolls sideways on a narrow screen)">
          <table>
            <thead>
              <tr>
                <th scope="col">Batch</th>
                <th scope="col">Status</th>
                <th scope="col" class="num">
                  Cost so far ({currency})
                </th>
                <th scope="col">Created (UTC)</th>
                <th scope="col">Results</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(({ batch, cost }) => (
                <tr>
                  <td class="wrap">
                    <code>{batch.id}</code>
                    <br />
                    <span class="muted">{batch.endpoint}</span>
                  </td>
                  <td>
                    {batch.status}
                    <br />
                    <Progress done={batch.completed + batch.failed} failed={batch.failed} total={batch.total} />
                  </td>
                  <td class="num">{formatAmount(cost)}</td>
                  <td>{time(batch.createdAt)}</td>
                  <td>
                    {batch.outputFileId && <a href={`/portal/batches/${batch.id}/output`}>output</a>}
                    {batch.outputFileId && batch.errorFileId && ' · '}
                    {batch.errorFileId && <a href={`/portal/batches/${batch.id}/errors`}>errors</a>}
                    {!batch.outputFileId && !batch.errorFileId && (ENDED.has(batch.status) ? 'none' : 'when it ends')}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Page>
  );
}

import type { RunRow } from '../../platform/runs/service.js';
import { FINAL_STATES } from '../../platform/runs/service.js';
import { Notice, Page } from './layout.js';
import type { Viewer } from './layout.js';

/** An instant to the second, in UTC (the clusters' and runs' tables); `—` for none. */
export const time = (at: Date | null) => (at ? at.toISOString().slice(0, 19).replace('T', ' ') : '—');

/** A run's state as a label people can tell apart without colour too. */
export function RunState({ state }: { state: RunRow['state'] }) {
  return <span class={`run-state run-${state.toLowerCase()}`}>{state}</span>;
}

/**
 * A run: its state, timings, outcome and log; the log follows live (the portal's script) while the
 * run is queued or running.
 */
export function RunPage({
  viewer,
  run,
  clusterName,
  log,
  notice,
}: {
  viewer: Viewer;
  run: RunRow;
  clusterName: string;
  log: string;
  notice?: string;
}) {
  const active = !FINAL_STATES.includes(run.state);
  return (
    <Page title={`Run of ${run.stackName}`} user={viewer} current="clusters">
      <p>
        <a href={`/portal/clusters/${run.clusterId}`}>← {clusterName}</a>
      </p>
      <h1>
        {run.stackName} on {clusterName}
      </h1>
      {notice && <Notice kind="ok">{notice}</Notice>}
      <div class="panel grid run-facts">
        <p>
          State: <RunState state={run.state} />
        </p>
        <p>Queued: {time(run.createdAt)}</p>
        <p>Started: {time(run.startedAt)}</p>
        <p>Finished: {time(run.finishedAt)}</p>
        <p>Exit status: {run.exitCode ?? '—'}</p>
        <p>
          Run: <code>{run.id}</code>
        </p>
      </div>
      {run.failure && <Notice kind="error">{run.failure}</Notice>}
      {run.publicUrl && (
        <p>
          Public URL: <a href={run.publicUrl}>{run.publicUrl}</a>
        </p>
      )}
      {active && (
        <form
          method="post"
          action={`/portal/runs/${run.id}/cancel`}
          data-confirm="Stop this run? OpenTofu is interrupted; the cluster may be left partly changed."
        >
          <input type="hidden" name="_csrf" value={viewer.csrf} />
          <button type="submit" class="danger">
            Cancel run
          </button>
        </form>
      )}
      {run.outputs && Object.keys(run.outputs).length > 0 && (
        <>
          <h2>Outputs</h2>
          <div class="table-wrap" tabindex={0} role="region" aria-label="Outputs (scrolls sideways on a narrow screen)">
            <table>
              <tbody>
                {Object.entries(run.outputs).map(([name, value]) => (
                  <tr>
                    <th scope="row">{name}</th>
                    <td class="wrap">
                      <code>
                        {value === null ? '(sensitive)' : typeof value === 'string' ? value : JSON.stringify(value)}
                      </code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <h2>Inputs</h2>
      <pre>{JSON.stringify(run.inputs, null, 2)}</pre>
      <h2 id="log-heading">Log</h2>
      {active && (
        <p class="muted" id="log-status">
          Following the log as it is written…
        </p>
      )}
      <pre
        class="run-log"
        id="run-log"
        aria-labelledby="log-heading"
        tabindex={0}
        data-follow={active ? `/api/v1/runs/${run.id}/log?follow=true` : undefined}
      >
        {log || (active ? '' : '(empty)')}
      </pre>
    </Page>
  );
}

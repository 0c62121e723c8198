import type { FlowSnapshot } from '../../gateway/flow/flow-types.js';
import { Page } from './layout.js';
import type { Viewer } from './layout.js';
import { OperatorNav } from './operator-engines-pages.js';

const SCROLLS = '(scrolls sideways on a narrow screen)';

interface FairShareView {
  viewer: Viewer;
  enabled: boolean;
  snapshot: FlowSnapshot;
  /** Each organization's name and share weight, by id. */
  organizations: ReadonlyMap<string, { name: string; weight: number }>;
}

/** Each organization's share of the tokens served, and who waits for room on each model. */
export function OperatorFairSharePage({ viewer, enabled, snapshot, organizations }: FairShareView) {
  const nameOf = (orgId: string) => organizations.get(orgId)?.name ?? orgId;
  const total = snapshot.served.reduce((sum, s) => sum + s.promptTokens + s.completionTokens, 0);
  const served = [...snapshot.served].sort(
    (a, b) => b.promptTokens + b.completionTokens - (a.promptTokens + a.completionTokens),
  );
  return (
    <Page title="Fair share" user={viewer} current="operator">
      <OperatorNav here="fair-share" />
      <h1>Fair share of the fleet</h1>
      <p class="muted">
        When every replica of a model is busy, requests wait here in the gateway instead of in an engine's queue. The
        highest band goes first; within a band, the organization served the fewest tokens (over its weight) goes next.
        {enabled
          ? ''
          : ' Flow control is off (TOLLGATE_FLOW_CONTROL=off): every request goes to the engines at once.'}{' '}
        These figures are this gateway replica's own.
      </p>
      <h2>Who is waiting</h2>
      {snapshot.models.every((model) => model.waiting.length === 0) ? (
        <p>Nobody is waiting: every request went to the engines at once.</p>
      ) : (
        <div class="table-wrap" tabindex={0} role="region" aria-label={`Requests waiting ${SCROLLS}`}>
          <table>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Band</th>
                <th scope="col">Organization</th>
                <th scope="col" class="num">
                  Waiting
                </th>
              </tr>
            </thead>
            <tbody>
              {snapshot.models.flatMap((model) =>
                model.waiting.map((w) => (
                  <tr>
                    <td>{model.model}</td>
                    <td>{w.band}</td>
                    <td class="wrap">{nameOf(w.orgId)}</td>
                    <td class="num">{w.requests}</td>
                  </tr>
                )),
              )}
            </tbody>
          </table>
        </div>
      )}
      <h2>Models</h2>
      <div class="table-wrap" tabindex={0} role="region" aria-label={`Models in flow control ${SCROLLS}`}>
        <table>
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col" class="num">
                On the engines
              </th>
              <th scope="col" class="num">
                Free slots
              </th>
            </tr>
          </thead>
          <tbody>
            {snapshot.models.map((model) => (
              <tr>
                <td>{model.model}</td>
                <td class="num">{model.inFlight}</td>
                <td class="num">
                  {model.freeSlots === null ? 'not limited' : Math.max(0, model.freeSlots - model.inFlight)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>Tokens served since this gateway started</h2>
      {served.length === 0 ? (
        <p>No tokens served yet.</p>
      ) : (
        <div class="table-wrap" tabindex={0} role="region" aria-label={`Tokens served by organization ${SCROLLS}`}>
          <table>
            <thead>
              <tr>
                <th scope="col">Organization</th>
                <th scope="col" class="num">
                  Weight
                </th>
                <th scope="col" class="num">
                  Prompt tokens
                </th>
                <th scope="col" class="num">
                  Generated tokens
                </th>
                <th scope="col" class="num">
                  Share
                </th>
              </tr>
            </thead>
            <tbody>
              {served.map((s) => (
                <tr>
                  <td class="wrap">{nameOf(s.orgId)}</td>
                  <td class="num">{organizations.get(s.orgId)?.weight ?? 1}</td>
                  <td class="num">{s.promptTokens.toLocaleString('en-US')}</td>
                  <td class="num">{s.completionTokens.toLocaleString('en-US')}</td>
                  <td class="num">
                    {total === 0 ? '—' : `${Math.round(((s.promptTokens + s.completionTokens) / total) * 100)}%`}
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
